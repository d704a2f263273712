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
