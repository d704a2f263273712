from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dfits.array.chunks import file_chunks, normalize


def test_cube_chunks_are_whole_planes():
    assert file_chunks((256, 1024, 1024), 4, 128 * 2**20) == ((32,) * 8, (1024,), (1024,))


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
