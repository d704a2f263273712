"""The stored chunk's contract: kernels for what they answer, numpy's ndarray for the rest."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dfits.array import reader
from dfits.format.dtypes import parse_decode_spec
from dfits.stored.stored import StoredChunk


@pytest.fixture
def chunk():
    reader.register()  # the handler tables
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5.5
    values[0, 1, 2] = np.nan
    raw = values.astype(">f4").view("=u4")  # the stored bytes, as kernels read them
    return StoredChunk(raw, parse_decode_spec(-32)[0]), values


def test_reductions_answer_from_the_stored_bytes(chunk):
    c, values = chunk
    np.testing.assert_allclose(np.nansum(c, axis=0), np.nansum(values, axis=0))
    np.testing.assert_allclose(c.std(axis=(1, 2)), values.std(axis=(1, 2)), equal_nan=True)
    assert np.ndim(c) == 3
    assert np.shape(c) == (2, 3, 4)
    assert np.result_type(c, np.float64) == np.float64
    assert not c.decoded


def test_reading_the_values_decodes_once_read_only(chunk):
    c, values = chunk
    a = np.asarray(c)
    assert np.shares_memory(a, np.asarray(c))  # decoded once
    assert not a.flags.writeable
    assert a.dtype.isnative
    np.testing.assert_array_equal(a, values)
    np.testing.assert_array_equal(c.view(np.uint32), values.view(np.uint32))
    np.testing.assert_array_equal(c.byteswap(), values.byteswap())
    assert c.tobytes() == values.tobytes()
    assert c.__array_interface__["shape"] == (2, 3, 4)
    # still stored: later reductions run the kernels (the same values)
    assert not c.decoded
    np.testing.assert_array_equal(np.array(c, copy=True), values)
    assert np.array(c, copy=True).flags.writeable


def test_writing_makes_the_values_the_chunks_own(chunk):
    c, values = chunk
    c[0, 0, 0] = 100.0
    assert c.decoded
    values = values.copy()
    values[0, 0, 0] = 100.0
    np.testing.assert_allclose(np.nansum(c), np.nansum(values))
    c += 1
    np.multiply(c, 2, out=c)
    c.sort(axis=2)
    want = np.sort((values + 1) * 2, axis=2)
    np.testing.assert_array_equal(np.asarray(c), want)
    assert np.asarray(c).flags.writeable


def test_pickles_stored_or_decoded(chunk):
    c, values = chunk
    back = pickle.loads(pickle.dumps(c))
    assert isinstance(back, StoredChunk)
    np.testing.assert_array_equal(np.asarray(back), values)
    c[0, 0, 0] = 1.0
    assert type(pickle.loads(pickle.dumps(c))) is np.ndarray


def test_slices_stay_stored_and_fancy_indexing_decodes(chunk):
    c, values = chunk
    part = c[1, :, 1:3]
    assert isinstance(part, StoredChunk)
    np.testing.assert_array_equal(np.asarray(part), values[1, :, 1:3])
    np.testing.assert_array_equal(c[[0, 1], 0], values[[0, 1], 0])
    assert c[1, 2, 3] == values[1, 2, 3]
    assert c.flags.owndata
    assert c.strides == values.strides
    with pytest.raises(AttributeError):
        c.mask  # noqa: B018


def test_views_report_a_base_and_copy_to_plain_arrays(chunk):
    # numpy's views have a base: code that copies a view to let its parent go (distributed's
    # P2P rechunk, which then takes a memoryview) gets a plain array of the values
    c, values = chunk
    assert c.base is None  # a chunk task's own chunk
    views = {
        "slice": (c[1:, :, 1:3], values[1:, :, 1:3]),
        "whole": (c[:, :, :], values),
        "reshape": (c.reshape(6, 4), values.reshape(6, 4)),
        "transpose": (c.T, values.T),
        "slice of a slice": (c[1:][:, 1:], values[1:][:, 1:]),
        "scaled slice": ((c * 2.0)[0], values[0] * 2.0),
        "mask of a slice": (np.isnan(c)[0], np.isnan(values)[0]),
        "cut of a slice": ((c > 0)[1], values[1] > 0),
    }
    for name, (view, want) in views.items():
        assert view.base is not None, name
        plain = view.copy()
        assert type(plain) is np.ndarray, name
        assert memoryview(plain).nbytes == want.nbytes, name
        np.testing.assert_array_equal(plain, want, err_msg=name)
    assert not c.decoded  # views and their copies left the chunk stored
    assert np.isnan(c).base is None
    assert (c > 0).base is None


def test_flags_are_the_decoded_values_flags(chunk):
    c, _ = chunk
    flags = c.flags
    decoded = c.decode()
    for name in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "BEHAVED"):
        assert flags[name] == decoded.flags[name], name
    assert not flags.writeable  # read-only, as decode() gives it
    assert StoredChunk(c.u[0, 0], c.spec).flags.f_contiguous  # 1-d: C and F, as numpy
    with pytest.raises(ValueError, match="cannot set"):
        flags.owndata = False
    flags.writeable = True  # the values become the chunk's own, as writing to it does
    assert c.decoded
    assert flags.writeable
    assert c.flags.writeable
