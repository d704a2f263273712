"""numpy definitions of every kernel: the reference the tests compare against.

Each oracle takes the *stored* big-endian array (``>i2``, ``>f4``, ...) and a spec, and does
what astropy would do (decode to physical values) followed by the numpy reduction. They are
slow by design and never used outside tests and benchmarks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["COMPARISONS", "band_moments", "band_sum_count", "decode", "weighted_sums"]


def decode(stored: np.ndarray, spec: Any) -> np.ndarray:
    """Physical values the way astropy computes them (including float32 rounding)."""
    native = stored.astype(stored.dtype.newbyteorder("="))
    if spec.mode == "raw":
        return native.astype(spec.physical)
    if spec.mode == "offset":
        if spec.bitpix == 8:
            return (native.astype(np.int16) - 128).astype(np.int8)
        bits = spec.bitpix
        return native.view(f"u{bits // 8}") ^ np.array(1 << (bits - 1), f"u{bits // 8}")
    out = native.astype(spec.physical)
    out *= spec.physical.type(spec.bscale)
    out += spec.physical.type(spec.bzero)
    if spec.blank is not None and spec.bitpix > 0:
        out[native == spec.blank] = np.nan
    return out


def _f64(stored, spec):
    return decode(stored, spec).astype(np.float64)


#: kernel name → oracle(stored, spec, axis) giving what the dispatch layer must return
COMPARISONS = {
    "sum": lambda s, spec, ax: np.sum(_f64(s, spec), axis=ax),
    "nansum": lambda s, spec, ax: np.nansum(_f64(s, spec), axis=ax),
    "count": lambda s, spec, ax: np.sum(~np.isnan(_f64(s, spec)), axis=ax),
    "mean": lambda s, spec, ax: np.mean(_f64(s, spec), axis=ax),
    "nanmean": lambda s, spec, ax: np.nanmean(_f64(s, spec), axis=ax),
    "var": lambda s, spec, ax: np.var(_f64(s, spec), axis=ax),
    "nanvar": lambda s, spec, ax: np.nanvar(_f64(s, spec), axis=ax),
    "min": lambda s, spec, ax: np.min(decode(s, spec), axis=ax),
    "max": lambda s, spec, ax: np.max(decode(s, spec), axis=ax),
    "nanmin": lambda s, spec, ax: np.nanmin(decode(s, spec), axis=ax),
    "nanmax": lambda s, spec, ax: np.nanmax(decode(s, spec), axis=ax),
}


def weighted_sums(stored, spec, axis, weights, threshold=None):
    """``Σ I``, ``Σ I·w`` and ``Σ I·w²`` along ``axis`` of float64 physical values, NaN and
    values below ``threshold`` left out, stacked first."""
    v = _f64(stored, spec)
    with np.errstate(invalid="ignore"):
        v = np.where(v >= threshold if threshold is not None else ~np.isnan(v), v, np.nan)
    shape = [1] * v.ndim
    shape[axis] = len(weights)
    w = np.asarray(weights, dtype=np.float64).reshape(shape)
    return np.stack([np.nansum(v * w**p, axis=axis) for p in (0, 1, 2)])


def band_sum_count(stored, spec, axis, lo, hi):
    """Sums and counts over ``axis`` of the physical values ``v`` with ``lo <= v <= hi``."""
    v = _f64(stored, spec)
    with np.errstate(invalid="ignore"):
        keep = (v >= lo) & (v <= hi)
    return np.where(keep, v, 0.0).sum(axis=axis), keep.sum(axis=axis)


def band_moments(stored, spec, axis, lo, hi):
    """``(n, mean, M2)`` over ``axis`` of the physical values ``v`` with ``lo <= v <= hi``
    (NaN mean and M2 where there are none)."""
    v = _f64(stored, spec)
    with np.errstate(invalid="ignore"):
        v = np.where((v >= lo) & (v <= hi), v, np.nan)
    n = np.sum(~np.isnan(v), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(v, axis=axis) / n
        dev = v - (np.expand_dims(mean, axis) if axis is not None else mean)
        m2 = np.where(n > 0, np.nansum(dev * dev, axis=axis), np.nan)
    return n, mean, m2
