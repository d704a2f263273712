from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dfits.array.chunks import REDUCE_DEPTH, file_chunks, normalize, reduction_chunks


def test_cube_chunks_are_whole_planes():
    assert file_chunks((256, 1024, 1024), 4, 128 * 2**20) == ((32,) * 8, (1024,), (1024,))


def test_empty_shape_is_one_chunk_however_long_the_other_axes():
    # issue 34 fuzz escape: an empty image claiming 2**40 rows planned 2**33 chunks
    assert file_chunks((2**40, 2**20, 0), 1, 128 * 2**20) == ((2**40,), (2**20,), (0,))


def test_row_larger_than_target_splits_inner_axis():
    chunks = file_chunks((3, 10**6), 8, 2**20)
    assert chunks[0] == (1, 1, 1)
    assert sum(chunks[1]) == 10**6
    assert max(chunks[1]) * 8 <= 2**20


@given(
    shape=st.lists(st.integers(0, 50), min_size=1, max_size=4).map(tuple),
    itemsize=st.sampled_from([1, 2, 4, 8]),
    target=st.integers(1, 10**5),
)
def test_plans_cover_shape_and_stay_contiguous(shape, itemsize, target):
    chunks = file_chunks(shape, itemsize, target)
    assert tuple(sum(c) for c in chunks) == shape
    # a chunk is contiguous when every axis after the first split one is whole
    split = [i for i, c in enumerate(chunks) if len(c) > 1 or (c and c[0] != shape[i])]
    if split:
        assert all(chunks[i] == (shape[i],) for i in range(split[-1] + 1, len(shape)))
    if math.prod(shape):
        biggest = itemsize * math.prod(max(c) for c in chunks)
        assert biggest <= max(target, itemsize * (shape[-1] if len(split) == 0 else 1)) or (
            biggest <= itemsize * max(shape)
        )


@pytest.mark.parametrize("user", [(10, 20), 5, -1, {0: 3}, "auto"])
def test_user_chunks_accept_what_dask_accepts(user):
    out = normalize(user, (30, 40), np.dtype("f4"), 4)
    assert tuple(sum(c) for c in out) == (30, 40)


def _plan(shape, itemsize, axis, target="128MiB"):
    import dask

    with dask.config.set({"array.chunk-size": target}):
        return (
            normalize(None, shape, np.dtype(f"f{max(itemsize, 4)}"), itemsize),
            reduction_chunks(shape, np.dtype(f"f{max(itemsize, 4)}"), itemsize, axis),
        )


def test_reduction_keeps_a_deep_enough_plan():
    # 128 planes of 512 x 512 float32: 512 bytes behind each pixel already: kept
    default, planned = _plan((256, 512, 512), 4, 0)
    assert planned == default == ((128, 128), (512,), (512,))
    # reducing over an axis each chunk holds whole: nothing to gain
    assert _plan((256, 1024, 1024), 4, 2)[1] == _plan((256, 1024, 1024), 4, 2)[0]


def test_reduction_deepens_thin_slabs():
    # 32 planes of 1k x 1k (128 bytes per pixel): 64 planes of 512 whole rows
    default, planned = _plan((256, 1024, 1024), 4, 0)
    assert default == ((32,) * 8, (1024,), (1024,))
    assert planned == ((64,) * 4, (512, 512), (1024,))
    default, planned = _plan((256, 2048, 2048), 4, 0)
    assert default[0] == (8,) * 32  # 8-plane slabs: 3 float64 partials = 75 % of the bytes
    assert planned[0] == (REDUCE_DEPTH // 4,) * 4
    assert planned[2] == (2048,)  # rows stay whole: each chunk is a few long runs
    assert 4 * math.prod(max(c) for c in planned) <= 128 * 2**20
    # slower axes (Stokes) keep one position per chunk
    _, planned = _plan((2, 300, 2048, 2048), 4, 1)
    assert planned[0] == (1, 1)
    assert planned[1] == (64,) * 4 + (44,)


@given(
    shape=st.lists(st.integers(0, 40), min_size=1, max_size=4).map(tuple),
    itemsize=st.sampled_from([1, 2, 4, 8]),
    target=st.integers(64, 10**5),
    data=st.data(),
)
def test_reduction_plans_cover_shape_and_reach_depth(shape, itemsize, target, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    default, planned = _plan(shape, itemsize, axis, target)
    assert tuple(sum(c) for c in planned) == shape
    if planned != default:
        want = min(shape[axis], -(-REDUCE_DEPTH // itemsize))
        assert max(planned[axis]) == want
        assert all(c in ((1,) * len(c), (0,)) for c in planned[:axis])
