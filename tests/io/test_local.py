from __future__ import annotations

import pickle

import numpy as np
import pytest

import dfits
from dfits.io import LocalSource, open_source
from dfits.io.local import _FOLIO, _folio_span


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
