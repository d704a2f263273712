"""Views handed to kernels: the flat base and where each element lies in it."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.array_utils import byte_bounds

from dfits.kernels._shape import flat_view
from dfits.kernels.api import _flat


def step_slices(shape):
    """Slices with steps (negative ones too) for each axis of ``shape``."""

    def one(n):
        return st.tuples(
            st.integers(0, n), st.integers(0, n), st.sampled_from([1, 1, 2, 3, -1, -2])
        ).map(lambda t: slice(t[0], t[1], t[2]) if t[2] > 0 else slice(t[1], t[0], t[2]))

    return st.tuples(*(one(n) for n in shape))


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=2, max_size=3).map(tuple),
    data=st.data(),
    dtype=st.sampled_from(["u1", "u2", "u4", "u8"]),
)
def test_every_element_is_where_the_geometry_says(shape, data, dtype):
    parent = np.arange(int(np.prod(shape)) * 3, dtype=dtype).reshape(shape[0] * 3, *shape[1:])
    v = parent[data.draw(step_slices(parent.shape))]
    flat = flat_view(v)
    if v.size == 0 or (v.shape[-1] > 1 and v.strides[-1] != v.itemsize):
        assert flat is None
        return
    base, off, strides = flat
    assert base.flags.c_contiguous
    assert not base.flags.writeable
    assert strides[-1] == 1
    # never outside the parent's memory
    lo, hi = byte_bounds(parent)
    blo, bhi = byte_bounds(base)
    assert lo <= blo
    assert bhi <= hi
    for idx in itertools.product(*map(range, v.shape)):
        assert base[off + sum(i * s for i, s in zip(idx, strides, strict=True))] == v[idx]


def test_strided_chunks_are_not_copied():
    cube = np.arange(4 * 6 * 8, dtype="u4").reshape(4, 6, 8)
    chunk = cube[:, 2:4]  # whole rows of each plane, planes apart: what a planned chunk is
    base, geo = _flat(chunk)
    assert np.shares_memory(base, cube)
    assert geo == (4, 2, 8, 0, 48, 8)


def test_views_with_a_stepped_last_axis_are_copied():
    cube = np.arange(4 * 6 * 8, dtype="u4").reshape(4, 6, 8)
    base, geo = _flat(cube[:, :, ::2])
    assert not np.shares_memory(base, cube)
    np.testing.assert_array_equal(base.reshape(4, 6, 4), cube[:, :, ::2])
    assert geo == (4, 6, 4, 0, 24, 4)
