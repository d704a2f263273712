from __future__ import annotations

import pickle

import numpy as np
import pytest

import dfits
from dfits.io import LocalSource, open_source


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
