from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests import profiles  # noqa: F401  (registers the profiles)

#: a quarter of each property's examples unless ``--hypothesis-profile thorough`` (which the
#: Hypothesis plugin loads after this file) asks for every one: see tests/profiles.py
settings.load_profile("ci")

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture
def no_decode(monkeypatch):
    """Fail if any stored chunk is decoded (a per-chunk native copy): fused paths only."""
    from dfits.stored import stored

    def refuse(self):
        raise AssertionError("a stored chunk was decoded on a fused path")

    monkeypatch.setattr(stored.StoredChunk, "decode", refuse)
