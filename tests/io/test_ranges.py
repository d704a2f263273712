"""Runs and coalescing of array regions: the region's bytes exactly, in few requests."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits.io.ranges import Runs, bounding, coalesce, region_runs


@st.composite
def regions(draw):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    starts, counts = [], []
    for n in shape:
        a = draw(st.integers(0, n - 1))
        starts.append(a)
        counts.append(draw(st.integers(1, n - a)))
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    offset = draw(st.integers(0, 10_000))
    return offset, shape, itemsize, tuple(starts), tuple(counts)


@settings(max_examples=300, deadline=None)
@given(regions(), st.integers(0, 64))
def test_runs_hold_exactly_the_region(region, gap):
    offset, shape, itemsize, starts, counts = region
    nbytes = int(np.prod(shape)) * itemsize
    blob = np.random.default_rng(0).integers(0, 256, offset + nbytes, dtype=np.uint8)
    array = blob[offset:].view(f"u{itemsize}").reshape(shape)
    want = array[tuple(slice(a, a + c) for a, c in zip(starts, counts, strict=True))]

    runs = region_runs(offset, shape, itemsize, starts, counts)
    assert runs.nbytes == want.nbytes
    packed = np.concatenate([blob[s : s + runs.length] for s in runs.starts.tolist()])
    np.testing.assert_array_equal(packed.view(f"u{itemsize}").reshape(counts), want)
    # runs never touch each other: adjacent ones were joined into one
    assert np.all(np.diff(runs.starts) > runs.length)

    groups = coalesce(runs, gap)
    assert [g[0] for g in groups] == [0, *(g[1] for g in groups[:-1])]
    assert groups[-1][1] == len(runs.starts)
    for first, stop, lo, hi in groups:
        assert lo == runs.starts[first]
        assert hi == runs.starts[stop - 1] + runs.length
    for (_, _, _, hi), (_, _, lo, _) in itertools.pairwise(groups):
        assert lo - hi > gap  # requests closer than the gap would have been merged


def test_a_spectrum_through_a_cube_is_one_run_per_channel():
    runs = region_runs(2880, (100, 1024, 1024), 4, (0, 20, 30), (100, 1, 1))
    assert len(runs.starts) == 100
    assert runs.length == 4
    assert len(coalesce(runs, 256 * 1024)) == 100  # 4 MiB planes: nothing to merge
    aperture = region_runs(2880, (100, 1024, 1024), 4, (0, 20, 30), (100, 10, 10))
    assert len(aperture.starts) == 1000
    assert len(coalesce(aperture, 256 * 1024)) == 100  # rows of a channel: one request


def test_whole_planes_are_one_run():
    runs = region_runs(0, (10, 20, 30), 8, (2, 0, 0), (5, 20, 30))
    assert runs.starts.tolist() == [2 * 20 * 30 * 8]
    assert runs.length == 5 * 20 * 30 * 8
    assert coalesce(Runs(np.zeros(0, np.int64), 0), 10) == []


def test_bounding_rejects_out_of_range_ints():
    with pytest.raises(IndexError, match="out of bounds"):
        bounding((9,), (5,))
