from __future__ import annotations

from pathlib import Path

import pytest

from tests.format.checks import CORPUS


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus of real FITS files; tests using it skip when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"no FITS corpus at {CORPUS}")
    return CORPUS
