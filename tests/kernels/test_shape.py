"""Views handed to kernels: the flat base and where each element lies in it."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.array_utils import byte_bounds

from dfits.kernels._run import flat as _flat
from dfits.kernels._run import run as _run
from dfits.kernels._shape import flat_view, layout_for


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


def test_a_cut_out_moment_map_is_one_column_view():
    cube = np.arange(6 * 20 * 30, dtype="u4").reshape(6, 20, 30)
    box = cube[:, 5:9, 10:17]  # kept rows and columns do not merge
    form, v = layout_for(box, frozenset({0}))
    assert form == "cols"
    assert v.shape == (4, 6, 7)
    assert np.shares_memory(v, cube)
    np.testing.assert_array_equal(v.sum(axis=1), box.sum(axis=0))


def _calls(u, axes, fold=None):
    """Kernel calls ``_run`` makes over ``u`` (the kernel: numpy sums of each view)."""
    made = []

    def call(form, v, outs):
        made.append(form)
        outs[0][...] = v.sum(axis=1, dtype=np.int64).reshape(outs[0].shape)

    def combine(parts, _):
        return [np.sum([p[0] for p in parts], axis=0)]

    shape = tuple(n for a, n in enumerate(u.shape) if a not in axes)
    (out,) = _run(u, axes, [np.zeros(shape, np.int64)], call, combine, fold)
    np.testing.assert_array_equal(out, u.sum(axis=axes, dtype=np.int64))
    return len(made)


def test_awkward_views_split_into_few_parts():
    cube = np.arange(16 * 40 * 50, dtype="u4").reshape(16, 40, 50)
    box = cube[:, 5:15, 20:32]
    # a cut-out's spectrum: one call per row of the box, not one per plane and row
    assert _calls(box, (1, 2)) == 10
    # ... and with a fold of the last axis (sums): one column view, rows kept for the fold
    assert _calls(box, (1, 2), fold=lambda parts: [p.sum(axis=-1) for p in parts]) == 1
    # a cut-out's moment map: one column view
    assert _calls(box, (0,)) == 1
    # reduced axes on both sides of a kept one: one call per plane (rows of each plane)
    assert _calls(box, (0, 2)) == 16
    # a kept axis between reduced ones in the middle of a 4-d view
    four = np.arange(3 * 4 * 5 * 6, dtype="u4").reshape(3, 4, 5, 6)[:, 1:3, :, 1:5]
    for axes in [(0, 2), (1, 3), (0, 1, 3), (0, 3)]:
        assert _calls(four, axes) <= 8
