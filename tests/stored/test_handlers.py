"""numpy functions on stored chunks: ``np.concatenate`` decodes each piece into its slot."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from dfits.array import reader
from dfits.format.dtypes import parse_decode_spec
from dfits.stored.stored import StoredChunk
from tests.array.helpers import encoded_case, stored_sample

#: (BITPIX, BSCALE, BZERO, BLANK): big-endian floats, scaled integers with BLANK, unsigned
ENCODINGS = [(-32, None, None, None), (16, 0.5, 10.0, -7), (16, None, 32768, None)]


def _pieces(encoding, seed):
    bitpix, bscale, bzero, blank = encoding
    data = stored_sample(bitpix, blank, seed=seed)
    spec = parse_decode_spec(bitpix, bscale, bzero, blank)[0]
    raw = data.astype(data.dtype.newbyteorder(">")).view(f"=u{data.itemsize}")
    return StoredChunk(raw, spec)


@pytest.mark.parametrize("encoding", ENCODINGS, ids=["f32", "i16-scaled-blank", "u16"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_decodes_into_place_equal_to_numpy(encoding, axis):
    reader.register()

    def pieces():  # fresh chunks each time: nothing decoded or cached on them yet
        whole, view = _pieces(encoding, 1)[:, 1:4, 2:].copy(), _pieces(encoding, 2)[:, 1:4, 2:]
        return [_pieces(encoding, 3)[:, 1:4, 2:], view, whole]  # stored, strided view, ndarray

    expected = np.concatenate([np.asarray(p) for p in pieces()], axis=axis)
    got = np.concatenate(pieces(), axis=axis)
    assert type(got) is np.ndarray
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_concatenate_keeps_no_decoded_copy_on_the_pieces():
    reader.register()
    pieces = [_pieces(ENCODINGS[1], s) for s in (3, 4)]
    np.concatenate(pieces, axis=2)
    assert all(p._values is None for p in pieces)  # decoded into the result, not kept


def test_concatenate_refuses_what_numpy_refuses():
    reader.register()
    a = _pieces(ENCODINGS[0], 5)
    with pytest.raises(ValueError, match="dimension"):
        np.concatenate([a, a[:, :2, :1]], axis=0)


@pytest.mark.parametrize("encoding", ENCODINGS, ids=["f32", "i16-scaled-blank", "u16"])
def test_rechunk_of_a_dfits_array_equals_astropy(tmp_path, encoding):
    bitpix, _, _, blank = encoding
    data = stored_sample(bitpix, blank, seed=6)
    x, expected = encoded_case(tmp_path, data, encoding, chunks=(3, 6, 5))
    got = x.rechunk((9, 2, 5)).compute()
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(
        da.concatenate([x, x], axis=1).compute(), np.concatenate([expected, expected], axis=1)
    )
