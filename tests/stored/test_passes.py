"""The memoised passes of a stored chunk: which pass answers must not depend on task order."""

from __future__ import annotations

import numpy as np

from dfits.array import reader
from dfits.format.dtypes import parse_decode_spec
from dfits.stored import passes
from dfits.stored.stored import StoredChunk


def _stored(values: np.ndarray) -> StoredChunk:
    reader.register()  # the handler tables
    return StoredChunk(values.astype(">f4").view("=u4"), parse_decode_spec(-32)[0])


def test_a_sum_is_the_sum_pass_even_after_the_moments_pass():
    # A mean and a variance in one graph share the chunk: whichever task runs first, the
    # sum must be the sum pass's, not n * mean of the moments (other last bits).
    rng = np.random.default_rng(3)
    values = (rng.standard_normal((64, 257)) * 1e3 + 7.1).astype(np.float32)
    for axes in ((0, 1), (1,)):
        first = _stored(values)
        alone = passes.sum_count(first, axes, True)
        later = _stored(values)
        passes.moments(later, axes, True)
        after = passes.sum_count(later, axes, True)
        np.testing.assert_array_equal(np.asarray(after[0]), np.asarray(alone[0]))
        assert np.asarray(after[1]).tobytes() == np.asarray(alone[1]).tobytes()
