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


#: the kernels whose calls are passes over a chunk's stored values (``decode`` among them)
PASS_KERNELS = ("band_moments", "band_sum_count", "decode", "extrema", "integer_sum",
                "moments", "sum_count", "weighted_sums")  # fmt: skip


@pytest.fixture
def counted(monkeypatch):
    """``{name: calls}`` of every kernel pass over stored chunks (:data:`PASS_KERNELS`, and
    the tables' fused row sums, ``field_sums``) and of every stored-chunk decode
    (``chunk.decode``): what the pass-count tests of every public statistic assert on."""
    from dfits import kernels
    from dfits.kernels import fieldsums
    from dfits.stored.stored import StoredChunk

    calls: dict[str, int] = {}

    def spy(name, real):
        def run(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        return run

    for name in PASS_KERNELS:
        monkeypatch.setattr(kernels, name, spy(name, getattr(kernels, name)))
    monkeypatch.setattr(fieldsums, "field_sums", spy("field_sums", fieldsums.field_sums))
    monkeypatch.setattr(StoredChunk, "decode", spy("chunk.decode", StoredChunk.decode))
    return calls
