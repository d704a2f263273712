"""Fixtures shared by the dask-array tests."""

from __future__ import annotations

import pytest

from dfits.array import stored


@pytest.fixture
def no_decode(monkeypatch):
    """Fail if any stored chunk is decoded (a per-chunk native copy): fused paths only."""

    def refuse(self):
        raise AssertionError("a stored chunk was decoded on a fused path")

    monkeypatch.setattr(stored.StoredChunk, "decode", refuse)
