"""Weighted sums (the core of moment maps) over stored chunks agree with numpy on astropy's data."""

from __future__ import annotations

import pickle

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.array.weighted import weighted_sums
from tests.array.helpers import astropy_data, block_array, write_image
from tests.profiles import examples

CASES = {
    "f32-nan": (-32, None, None, None),
    "i16-scaled-blank": (16, 0.5, 3.0, -5),
    "f64": (-64, None, None, None),
}


def _numpy(a, axis, w, threshold=None):
    v = a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        v = np.where(v >= threshold if threshold is not None else ~np.isnan(v), v, np.nan)
    shape = [1] * v.ndim
    shape[axis] = w.size
    wb = w.reshape(shape)
    return np.stack([np.nansum(v * wb**p, axis=axis) for p in (0, 1, 2)])


@pytest.fixture(params=list(CASES), ids=list(CASES))
def cube(request, tmp_path):
    bitpix, bscale, bzero, blank = CASES[request.param]
    rng = np.random.default_rng(5)
    if bitpix < 0:
        data = rng.standard_normal((12, 9, 10)).astype(f"f{-bitpix // 8}")
        data[2, 3, 4] = np.nan
        data[:, 0, 0] = np.nan  # a pixel with no valid channel
    else:
        data = rng.integers(-100, 100, (12, 9, 10)).astype(f"i{bitpix // 8}")
        data[2, 3, 4] = blank
    path = str(tmp_path / "cube.fits")
    offset = write_image(path, data, bscale, bzero, blank)
    x, _ = block_array(path, offset, data.shape, bitpix, bscale, bzero, blank, chunks=(5, 9, 10))
    return x, astropy_data(path)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("threshold", [None, 0.25])
def test_matches_numpy_without_decoding(cube, axis, threshold, no_decode):
    x, a = cube
    w = np.linspace(-3.0, 5.0, a.shape[axis])
    got = weighted_sums(x, axis, w, threshold=threshold).compute()
    np.testing.assert_allclose(got, _numpy(a, axis, w, threshold), rtol=1e-10, atol=1e-9)


def test_sliced_and_masked_chunks(cube):
    x, a = cube
    keep = np.array([0, 1, 3, 4, 5, 8, 11])  # a spectral mask: strided gathers of chunks
    sub, ref = x[keep, 1:8, ::2], a[keep, 1:8, ::2]
    w = np.arange(keep.size, dtype=float)
    np.testing.assert_allclose(
        weighted_sums(sub, 0, w).compute(), _numpy(ref, 0, w), rtol=1e-10, atol=1e-9
    )


def test_numpy_blocks_and_errors():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 5, 6))
    a[1, 1, 1] = np.nan
    w = rng.standard_normal(8)
    got = weighted_sums(da.from_array(a, chunks=(3, 2, 6)), 0, w, threshold=-0.5).compute()
    np.testing.assert_allclose(got, _numpy(a, 0, w, -0.5), rtol=1e-12)
    with pytest.raises(ValueError, match="weights must have shape"):
        weighted_sums(da.from_array(a), 1, w)


def test_graph_tasks_stay_small(cube):
    x, _ = cube
    graph = dict(weighted_sums(x, 0, np.arange(12.0)).__dask_graph__())
    assert max(len(pickle.dumps(t, protocol=5)) for t in graph.values()) < 2048


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_chunking(cube, data):
    x, a = cube
    chunks = tuple(data.draw(st.integers(1, n), label=f"chunk{i}") for i, n in enumerate(a.shape))
    axis = data.draw(st.integers(0, 2), label="axis")
    w = np.arange(a.shape[axis], dtype=float) - 2.5
    got = weighted_sums(x.rechunk(chunks), axis, w).compute()
    np.testing.assert_allclose(got, _numpy(a, axis, w), rtol=1e-10, atol=1e-9)
