"""The encode and word-sum kernels against their numpy oracles."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.checksum import (
    encode_oracle,
    encode_rows,
    value_sum,
    word_sum,
    word_sum_oracle,
)

DTYPES = ["f8", "f4", "i2", "u2", "u1", "i1", "i4", "u4", "i8", "u8"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 7), (1, 1), (4, 0), (2, 1001)], ids=str)
def test_encode_rows_matches_oracle(dtype, shape):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal(shape) * 1000).astype(dtype)
    flip = 1 << (8 * values.dtype.itemsize - 1) if values.dtype.kind == "u" and dtype != "u1" else 0
    out = np.empty(shape, dtype=f"u{values.dtype.itemsize}")
    sums = encode_rows(values, out, flip)
    stored, expected = encode_oracle(values, flip)
    assert out.tobytes() == stored.tobytes()
    assert [int(s) for s in sums] == expected


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 4099])
def test_word_sum_matches_oracle(n):
    buf = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    assert word_sum(buf) == word_sum_oracle(buf)


def test_word_sum_of_all_ones_is_negative_zero():
    assert word_sum(np.full(4096, 255, np.uint8)) == 0xFFFFFFFF


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_value_sum_is_the_stored_words_sum(dtype):
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 1000):
        v = rng.normal(0, 1e3, n).astype(dtype)
        if n > 2:
            v[1] = np.nan
            v[2] = -np.inf
        stored = v.astype(np.dtype(dtype).newbyteorder(">")).view(np.uint8)
        assert value_sum(v) == word_sum_oracle(stored)
    assert value_sum(np.zeros(4, dtype)) == 0
    with pytest.raises(ValueError, match="contiguous"):
        value_sum(np.zeros((4, 4), dtype)[:, ::2])
