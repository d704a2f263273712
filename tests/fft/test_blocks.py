"""Per-block pieces: twiddles and chirps to float64 accuracy however long the transform."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dfits.fft as F
from dfits.fft import blocks
from tests.fft.checks import check, signal


def _exact(phase_num: np.ndarray, den: int, sign: float) -> np.ndarray:
    """``exp(sign·2πi·num/den)`` with the phase reduced in Python integers."""
    frac = np.array([int(p) % den for p in phase_num.ravel()], dtype=np.float64) / den
    return np.exp(sign * 2j * np.pi * frac).reshape(phase_num.shape)


@given(
    n1=st.integers(1, 40),
    n2=st.integers(1, 300),
    data=st.data(),
    inverse=st.booleans(),
)
def test_twiddles_are_the_exact_roots(n1, n2, data, inverse):
    start = data.draw(st.integers(0, n2 - 1))
    width = data.draw(st.integers(1, n2 - start))
    got = blocks._twiddles(n1, start, width, n1 * n2, inverse, np.dtype(np.complex128))
    k1 = np.arange(n1, dtype=object)[:, None]
    n2s = np.arange(start, start + width, dtype=object)[None, :]
    want = _exact(k1 * n2s, n1 * n2, 1.0 if inverse else -1.0)
    assert got.shape == (n1, width)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


def test_twiddles_of_a_2_to_the_32_transform_keep_full_precision():
    n1 = n2 = 1 << 16
    got = blocks._twiddles(n1, n2 - 8, 8, n1 * n2, False, np.dtype(np.complex128))
    k1 = np.arange(n1, dtype=object)[:, None]
    want = _exact(k1 * np.arange(n2 - 8, n2, dtype=object)[None, :], n1 * n2, -1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


@pytest.mark.parametrize("n", [7, 1009, 3 * 10**9 + 19])
def test_chirp_phase_is_exact_for_large_indices(n):
    start = max(0, n - 50)
    info = {None: {"array-location": [(start, n)]}}
    got = blocks.chirp(n, False, np.dtype(np.complex128), block_info=info)
    k = np.arange(start, n, dtype=object)
    # exp(-iπ k²/n) = exp(-2πi · k² / (2n))
    want = _exact(k * k, 2 * n, -1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_bluestein_kernel_wraps_negative_lags_and_zeros_the_middle():
    n, m = 5, 12
    info = {None: {"array-location": [(0, m)]}}
    got = blocks.kernel(n, m, False, np.dtype(np.complex128), block_info=info)
    lags = [0, 1, 2, 3, 4, None, None, None, 4, 3, 2, 1]
    for j, lag in enumerate(lags):
        want = 0 if lag is None else np.exp(1j * np.pi * lag * lag / n)
        assert abs(got[j] - want) < 1e-15


def test_split_and_merge_are_inverse_views():
    x = np.arange(2 * 12 * 3).reshape(2, 12, 3)
    y = blocks.split_axis(x, 1, 4)
    assert y.shape == (2, 3, 4, 3)
    assert np.shares_memory(x, y)
    np.testing.assert_array_equal(blocks.merge_axes(y, 1), x)


@pytest.mark.parametrize("library", ["numpy", "scipy"])
def test_numpy_and_scipy_pocketfft_give_numpy_results(monkeypatch, library):
    fft_module = pytest.importorskip(f"{library}.fft")
    monkeypatch.setattr(blocks, "_library", lambda: fft_module)
    x = signal(np.random.default_rng(3), (3, 4096), np.complex64)
    with dask.config.set(scheduler="sync"):
        check(F.fft(da.from_array(x, chunks=(3, 512)), block_size=8192), np.fft.fft(x))


@pytest.mark.parametrize("inverse", [False, True])
def test_lines_on_several_threads_equal_numpy(inverse):
    x = np.random.default_rng(3).standard_normal((64, 96)).astype(np.float32)
    got = blocks.lines(x, 0, inverse, np.dtype(np.complex64), 0.5, workers=2)
    ref = (np.fft.ifft(x, axis=0, norm="forward") if inverse else np.fft.fft(x, axis=0)) * 0.5
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_a_pass_over_one_block_gives_it_every_core():
    import os

    from dfits.fft.sixstep import _workers

    assert _workers(da.zeros((64, 64), chunks=64)) == (os.cpu_count() or 1)
    assert _workers(da.zeros((64, 64), chunks=1)) == 1
