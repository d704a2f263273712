"""Shared helpers for the FFT tests: relative RMS error and the issue's tolerances."""

from __future__ import annotations

import numpy as np

#: Relative RMS error allowed against numpy.fft, by result precision (issue 36).
TOLERANCE = {np.dtype(np.complex128): 1e-12, np.dtype(np.complex64): 1e-5}
TOLERANCE[np.dtype(np.float64)] = TOLERANCE[np.dtype(np.complex128)]
TOLERANCE[np.dtype(np.float32)] = TOLERANCE[np.dtype(np.complex64)]


def rel_rms(got: np.ndarray, want: np.ndarray) -> float:
    """``sqrt(mean|got - want|²) / sqrt(mean|want|²)`` (0 when both are all zero)."""
    scale = np.sqrt(np.mean(np.abs(want.astype(np.complex128)) ** 2))
    diff = np.sqrt(np.mean(np.abs(got.astype(np.complex128) - want) ** 2))
    return float(diff / scale) if scale else float(diff)


def check(got, want: np.ndarray) -> None:
    """``got`` (dask or numpy) equals numpy's ``want``: shape, dtype, values to tolerance."""
    got = np.asarray(got.compute() if hasattr(got, "compute") else got)
    assert type(got) is np.ndarray
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert rel_rms(got, want) <= TOLERANCE[want.dtype], rel_rms(got, want)


def signal(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random values of ``dtype`` (complex ones with both parts random)."""
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)
