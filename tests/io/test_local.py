from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import dfits
from dfits.io import LocalSource, local, open_source
from dfits.io.local import _FOLIO, _folio_span
from dfits.io.ranges import Runs, region_runs


@pytest.fixture
def blob(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 40)
    return path


def test_read_and_map_byte_ranges(blob):
    src = LocalSource.open(blob)
    assert src.read(10, 5) == bytes(range(10, 15))
    assert src.read(10_230, 100) == bytes(range(246, 256))  # short only at EOF
    view = src.map(4097, 300)
    assert view.dtype == np.uint8
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, np.arange(4097, 4397) % 256)


@pytest.mark.parametrize(
    ("first", "stop", "size"),
    [
        (0, 1, 10),
        (5760, 5760 + 2**27, 2**31),
        (_FOLIO - 1, _FOLIO + 1, 3 * _FOLIO),
        (_FOLIO, 2 * _FOLIO, 2 * _FOLIO),
        (3 * _FOLIO + 7, 3 * _FOLIO + 9, 3 * _FOLIO + 9),
    ],
)
def test_folio_span_widens_to_folio_bounds_inside_the_file(first, stop, size):
    start, end = _folio_span(first, stop, size)
    assert start <= first
    assert stop <= end <= size
    assert start % _FOLIO == 0
    assert end == size or end % _FOLIO == 0
    assert first - start < _FOLIO
    assert end - stop < _FOLIO


def test_maps_across_folio_bounds_hold_the_asked_bytes(tmp_path):
    path = tmp_path / "big.bin"
    data = (np.arange(3 * _FOLIO + 4099, dtype=np.uint64) * 2654435761 % 251).astype(np.uint8)
    path.write_bytes(data.tobytes())
    src = LocalSource.open(path)
    for offset, n in [(5760, _FOLIO), (_FOLIO - 3, 10), (2 * _FOLIO + 1, _FOLIO + 4098)]:
        for populate in (False, True):
            np.testing.assert_array_equal(src.map(offset, n, populate=populate), data[offset:][:n])


def _areas(path) -> int:
    """How many mapped areas of this process are backed by ``path``."""
    with open("/proc/self/maps") as fh:
        return sum(line.rstrip().endswith(str(path)) for line in fh)


@pytest.fixture
def strided_file(tmp_path):
    """A 4-plane stack of 256 KiB planes after a 2880-byte header, and its bytes."""
    path = tmp_path / "planes.bin"
    data = (np.arange(2880 + 4 * 2**18, dtype=np.uint64) * 2654435761 % 251).astype(np.uint8)
    path.write_bytes(data.tobytes())
    return path, data


@pytest.mark.skipif(not hasattr(local.mmap, "MADV_DONTDUMP"), reason="Linux map advice")
def test_a_strided_map_splits_the_gaps_between_its_runs_off(strided_file, monkeypatch):
    path, data = strided_file
    monkeypatch.setattr(local, "_SPLIT_MIN_RUN", 2**16)
    src = LocalSource.open(path)
    # the second half of each plane's rows: 4 runs of 128 KiB, 128 KiB apart
    runs = region_runs(2880, (4, 64, 1024), 4, (0, 32, 0), (4, 32, 1024))
    first, stop = int(runs.starts[0]), int(runs.starts[-1]) + runs.length
    before = _areas(path)
    view = src.map(first, stop - first, populate=False, runs=runs)
    # one area per run and one per gap: the gaps' pages are never mapped with the runs'
    assert _areas(path) - before == 2 * len(runs.starts) - 1
    np.testing.assert_array_equal(view, data[first:stop])  # gaps still read (never needed)
    del view
    assert _areas(path) == before  # the whole map goes with its last view


@pytest.mark.parametrize(
    ("setting", "runs"),
    [
        ({}, Runs(np.array([2880, 2880 + 2**18]), 2**16)),  # runs too short to split for
        ({"_SPLIT_MAX_RUNS": 1}, Runs(np.array([2880, 2880 + 2**18]), 2**17)),  # too many
        ({"_SPLIT_MIN_RUN": 1}, Runs(np.array([2880]), 2**17)),  # one run: no gap
        ({"_SPLIT_MIN_RUN": 1}, Runs(np.array([2880, 2880 + 2**17 + 100]), 2**17)),  # gap < page
        ({"_SPLIT_MIN_RUN": 1, "_SPLIT_ADVICE": -1}, Runs(np.array([2880, 2880 + 2**18]), 2**17)),
    ],
)
def test_maps_that_are_not_split_stay_one_area_with_the_same_bytes(
    strided_file, monkeypatch, setting, runs
):
    path, data = strided_file
    for name, value in setting.items():
        monkeypatch.setattr(local, name, value)  # -1: advice the kernel refuses (EINVAL)
    src = LocalSource.open(path)
    first, stop = int(runs.starts[0]), int(runs.starts[-1]) + runs.length
    before = _areas(path)
    view = src.map(first, stop - first, populate=False, runs=runs)
    assert _areas(path) - before == 1
    np.testing.assert_array_equal(view, data[first:stop])


def test_source_pickles_without_a_handle(blob):
    src = LocalSource.open(blob)
    src.read(0, 1)  # opens a descriptor in this process
    clone = pickle.loads(pickle.dumps(src))
    assert clone == src
    assert len(pickle.dumps(src)) < 300
    assert clone.read(1, 2) == b"\x01\x02"


def test_read_past_the_end_is_a_truncation_error(blob):
    src = LocalSource.open(blob)
    with pytest.raises(dfits.TruncatedFileError, match=r"bytes 10200\.\.10300.*10240 bytes"):
        src.map(10_200, 100)
    with pytest.raises(EOFError):
        src.read_exact(10_200, 100)


def test_changed_file_is_detected(blob):
    src = LocalSource.open(blob)
    blob.write_bytes(b"x" * 10)
    with pytest.raises(dfits.FileChangedError, match="changed since it was opened"):
        src.map(0, 5)


@pytest.mark.parametrize("how", ["map", "read", "read_exact"])
def test_a_file_replaced_with_the_same_size_and_time_is_detected(blob, how):
    # a rename into place (to_fits) within one timestamp tick: only the inode tells
    old = os.stat(blob)
    src = LocalSource.open(blob)
    local.descriptors.close(src._key)  # the next read opens the path again
    fresh = blob.with_name("fresh.bin")
    fresh.write_bytes(b"y" * old.st_size)
    os.utime(fresh, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(fresh, blob)
    with pytest.raises(dfits.FileChangedError, match="inode"):
        getattr(src, how)(0, 5)


def test_open_source_routes_paths_and_urls(blob):
    assert isinstance(open_source(blob), LocalSource)
    assert isinstance(open_source(f"file://{blob}"), LocalSource)
    with pytest.raises(FileNotFoundError):
        open_source(blob.parent / "missing.fits")


def test_missing_file_is_a_dfits_error_and_a_file_not_found_error(tmp_path):
    import dfits

    with pytest.raises(dfits.MissingFileError, match=r"nothere\.fits.*no such file") as info:
        dfits.open(tmp_path / "nothere.fits")
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, dfits.DfitsError)


def test_directory_is_a_dfits_error(tmp_path):
    import dfits

    with pytest.raises(dfits.MissingFileError, match="a directory"):
        dfits.open(tmp_path)


def test_a_scan_maps_the_file_only_past_its_first_read(tmp_path, monkeypatch):
    # dfits.open of a stamp's file (two headers) reads them in one pread and maps nothing;
    # a file of many HDUs is mapped once (its headers sliced, alike ones in runs), and the
    # map is closed when the scan ends
    from tests.format import fitsgen as fg

    maps = []
    mapping = LocalSource.mapping

    def counted(self):
        maps.append(m := mapping(self))
        return m

    monkeypatch.setattr(LocalSource, "mapping", counted)
    two = tmp_path / "two.fits"
    primary = fg.image_file((300, 300), bitpix=16)  # 180 kB: the extension is far away
    two.write_bytes(primary + fg.image_hdu((4, 5), 16, primary=False))
    with dfits.open(two) as f:
        assert len(f) == 2
        np.testing.assert_array_equal(f[1].section[:], np.arange(20).reshape(4, 5))
    assert len(maps) == 1
    assert maps[0].closed
    maps.clear()
    small = tmp_path / "small.fits"
    small.write_bytes(fg.image_file((4, 5), bitpix=16) + fg.image_hdu((4, 5), 16, primary=False))
    with dfits.open(small) as f:
        assert len(f) == 2
        assert f[1].shape == (4, 5)
    assert maps == []
    many = tmp_path / "many.fits"
    many.write_bytes(primary + fg.image_hdu((2, 2), 16, primary=False) * 200)
    with dfits.open(many) as f:
        assert len(f) == 201
        assert f[200].shape == (2, 2)
    assert len(maps) == 1
    assert maps[0].closed
