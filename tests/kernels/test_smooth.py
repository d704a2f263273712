"""The axis convolution kernel against astropy's ``convolve`` on the decoded values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dfits.kernels import oracle
from dfits.kernels.smooth import TILE, block_mean, convolve_axis

from .conftest import make_stored, sampled_encodings

astropy_convolution = pytest.importorskip("astropy.convolution")

KERNELS = {
    "gauss": astropy_convolution.Gaussian1DKernel(1.5).array,
    "box": np.ones(3) / 3,
    "asymmetric": np.array([0.1, 0.5, 0.2]),  # a true convolution flips it
    "hanning": np.hanning(7),  # zeros at both ends
}


def want(values: np.ndarray, axis: int, k: np.ndarray, keep_nan: bool) -> np.ndarray:
    """astropy's convolve (its defaults) along ``axis``, one line at a time."""
    v = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    out = np.empty_like(v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "NaN values detected post convolution"
        for idx in np.ndindex(*v.shape[:-1]):
            out[idx] = astropy_convolution.convolve(v[idx], k)
    if keep_nan:
        out[np.isnan(v)] = np.nan
    return np.moveaxis(out, -1, axis)


def check(got, expected, dtype):
    assert got.dtype == dtype
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    scale = np.nanmax(np.abs(expected)) if np.isfinite(expected).any() else 1.0
    tol = 2e-7 * scale if dtype == np.float32 else 1e-13 * scale
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol, equal_nan=True)


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_convolve_axis_equals_astropy(spec, rng, axis):
    stored = make_stored(spec, (11, 6, 5), rng)
    values = oracle.decode(stored, spec)
    u = stored.view(stored.dtype.newbyteorder("=").str.replace("i", "u").replace("f", "u"))
    dtype = np.result_type(spec.physical, np.float32)
    for name, k in KERNELS.items():
        for keep in (True, False):
            got = convolve_axis(u, spec, axis, k, keep_nan=keep)
            check(got, want(values, axis, k, keep), dtype)
            assert name


@pytest.mark.parametrize("spec", [e for e in sampled_encodings() if e.id == "f32-scaled"],
                         indirect=True)  # fmt: skip
def test_convolve_axis_wide_tiles_strided_read_only(spec, rng):
    stored = make_stored(spec, (9, 3, TILE + 37), rng)
    stored[2:5, 1, :] = np.nan  # a run of NaN longer than the kernel's reach
    u = stored.view("u4")[:, :, 5:]  # strided: not the whole rows
    u.flags.writeable = False
    values = oracle.decode(stored, spec)[:, :, 5:]
    k = KERNELS["gauss"]
    check(convolve_axis(u, spec, 0, k), want(values, 0, k, True), np.float32)
    check(convolve_axis(u, spec, 0, k, keep_nan=False, dtype=np.float64),
          want(values, 0, k, False), np.float64)  # fmt: skip


@pytest.mark.parametrize("spec", [e for e in sampled_encodings() if e.id == "f64"], indirect=True)
def test_convolve_axis_empty_one_value_and_bad_kernels(spec):
    u = np.zeros((0, 4), dtype="u8")
    assert convolve_axis(u, spec, 0, np.ones(3)).shape == (0, 4)
    one = np.array([2.0], dtype=">f8").view("u8")
    assert convolve_axis(one, spec, 0, np.array([1.0, 2.0, 1.0])).tolist() == [1.0]
    bad_kernels = [
        (np.ones(4), "odd"),
        (np.ones((3, 3)), "1-D"),
        (np.array([1.0, -2.0, 1.0]), "close to 0"),
        (np.array([np.nan]), "NaN"),
    ]
    for bad, match in bad_kernels:
        with pytest.raises(ValueError, match=match):
            convolve_axis(one, spec, 0, bad)


def nanmean_runs(values: np.ndarray, axis: int, factor: int) -> np.ndarray:
    """numpy's nanmean of each run of ``factor`` along ``axis`` (the last may be shorter)."""
    v = np.moveaxis(np.asarray(values, dtype=np.float64), axis, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Mean of empty slice"
        runs = [np.nanmean(v[i : i + factor], axis=0) for i in range(0, v.shape[0], factor)]
    return np.moveaxis(np.stack(runs), 0, axis)


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize(("axis", "factor"), [(0, 3), (1, 2), (2, 5), (0, 11)])
def test_block_mean_equals_nanmean(spec, rng, axis, factor):
    stored = make_stored(spec, (11, 6, TILE + 3), rng)
    if spec.bitpix < 0:
        stored[0:4, 2, :] = np.nan  # a whole run without a value
    values = oracle.decode(stored, spec)
    u = stored.view(stored.dtype.newbyteorder("=").str.replace("i", "u").replace("f", "u"))
    dtype = np.result_type(spec.physical, np.float32)
    got = block_mean(u, spec, axis, factor)
    expected = nanmean_runs(values, axis, factor)
    assert got.dtype == dtype
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    rtol = 3e-7 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("spec", [e for e in sampled_encodings() if e.id == "f64"], indirect=True)
def test_block_mean_empty_strided_and_bad_factor(spec):
    assert block_mean(np.zeros((0, 4), "u8"), spec, 0, 2).shape == (0, 4)
    values = np.arange(24.0).reshape(6, 4).astype(">f8")
    u = values.view("u8")[:, ::2]
    u.flags.writeable = False
    np.testing.assert_array_equal(block_mean(u, spec, 0, 4), [[6.0, 8.0], [18.0, 20.0]])
    with pytest.raises(ValueError, match="at least 1"):
        block_mean(u, spec, 0, 0)


@pytest.mark.parametrize("spec", [e for e in sampled_encodings() if e.id == "f64"], indirect=True)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_progress_counts_every_value_read(spec, rng, axis):
    """Both kernels add the values they read to ``progress[0]``: all of them by the end,
    whatever the axis (a display reads the counter while they run)."""
    stored = make_stored(spec, (5, 6, 2 * TILE + 3), rng)
    u = stored.view("u8")
    for run in (lambda p: convolve_axis(u, spec, axis, np.ones(3), progress=p),
                lambda p: block_mean(u, spec, axis, 2, progress=p)):  # fmt: skip
        done = np.zeros(1, np.int64)
        plain = run(None)
        np.testing.assert_array_equal(run(done), plain)  # the values do not change
        assert done[0] == u.size
    with pytest.raises(TypeError, match="one-element int64"):
        convolve_axis(u, spec, axis, np.ones(3), progress=np.zeros(2, np.int64))
