"""PLIO_1 encoding: the kernel equals its plain-Python oracle and dfits' decoder gives the
values back (astropy and funpack read written files back in tests/write/test_compressed.py)."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.plio import plio_decode
from dfits.kernels.plioencode import MAX_VALUE, plio_encode, plio_encode_oracle


def _cases():
    rng = np.random.default_rng(3)
    yield "empty", np.zeros(0, np.int32)
    yield "one", np.array([9], np.int32)
    yield "zeros", np.zeros(10000, np.int32)  # runs longer than 4095
    yield "long-high", np.full(9000, MAX_VALUE, np.int32)
    yield "jumps", np.array([0, 4096, 1, 4097, MAX_VALUE, 0, 2, 0], np.int32)
    runs = rng.choice([0, 1, 2, 4095, 4096, 8200, 70000, MAX_VALUE], 3000)
    yield "random", np.repeat(runs, rng.integers(1, 12, runs.size)).astype(np.int32)
    yield "uint8", rng.integers(0, 256, 500).astype(np.uint8)


@pytest.mark.parametrize(("name", "values"), list(_cases()), ids=[c[0] for c in _cases()])
def test_kernel_equals_oracle_and_round_trips(name, values):
    words = plio_encode(values)
    np.testing.assert_array_equal(words, plio_encode_oracle(values))
    assert words.dtype == np.int16
    np.testing.assert_array_equal(plio_decode(words, values.size), values)


@pytest.mark.parametrize(
    "bad",
    [np.array([-1], np.int32), np.array([MAX_VALUE + 1], np.int64), np.array([1.5])],
    ids=["negative", "too-big", "float"],
)
def test_refuses_what_a_line_list_cannot_hold(bad):
    with pytest.raises(ValueError, match="PLIO_1"):
        plio_encode(bad)
