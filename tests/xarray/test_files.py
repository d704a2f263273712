"""The xarray layer opens each file once per process, in a bounded cache."""

from __future__ import annotations

from dfits.xarray import files


def test_open_file_once_per_path_and_options(cube, monkeypatch):
    monkeypatch.setattr(files, "_files", {})
    path = cube[0]
    first = files.open_file(path)
    assert files.open_file(path) is first
    assert files.open_file(path, {"anon": True}) is not first
    assert first.filename == path


def test_cache_is_bounded(cube, monkeypatch):
    monkeypatch.setattr(files, "_files", {})
    monkeypatch.setattr(files, "_MAX_FILES", 2)
    for opts in ({"a": 1}, {"a": 2}, {"a": 3}):
        files.open_file(cube[0], opts)
    assert len(files._files) <= 2


def test_a_rewritten_file_is_opened_afresh(tmp_path, monkeypatch):
    # the cache once keyed on (path, options): a file rewritten in the same process was
    # served from the old layout (stale shape, or reads past the new end)
    import numpy as np
    from astropy.io import fits

    monkeypatch.setattr(files, "_files", {})
    path = str(tmp_path / "r.fits")
    fits.PrimaryHDU(np.arange(6, dtype=np.float32).reshape(2, 3)).writeto(path)
    first = files.open_file(path)
    assert first[0].shape == (2, 3)
    assert files.open_file(path) is first
    fits.PrimaryHDU(np.arange(20, dtype=np.int16).reshape(4, 5)).writeto(path, overwrite=True)
    again = files.open_file(path)
    assert again is not first
    assert again[0].shape == (4, 5)
    np.testing.assert_array_equal(again[0].data.compute(), np.arange(20).reshape(4, 5))
