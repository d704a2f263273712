"""Error bounds for the kernel tests, derived from how the kernels and numpy add.

A tolerance that merely held where it was written fails on the next machine: LLVM splits each
contiguous loop over as many vector lanes as the CPU offers (2 float64 lanes with SSE2, 4 with
AVX2, 8 with AVX-512, times its unrolling), and every split rounds differently. The bounds here
hold for *every* order the kernels may add in, so no vector width can break them.

Notation: ``u = 2**-53`` (float64 unit roundoff) and ``γ(k) = k·u / (1 - k·u)``. A float64 sum
of ``n`` terms, in any order and any bracketing, is within ``γ(n - 1)·Σ|x|`` of the exact sum
(Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2): no term goes through
more than ``n - 1`` additions. Only first-order terms are kept; the ``O(u²)`` rest is far
inside the constants. ``n`` is the number of values reduced into one output.

Sums
    the kernel (any order; scaled integers as ``scale·Σx + zero·n``, two roundings on an exact
    ``Σx``) and the numpy oracle are each within ``γ(n + 2)·Σ|x|`` of the exact sum.
Moments
    the kernels add ``d = x - k`` for a shift ``k`` that is a value or a mean of the data, so
    ``|d| <= R`` (the range of the values), and merge blocks with Chan's update. With
    ``chain`` the longest run of dependent roundings (a row block of up to
    :data:`~dfits.kernels.moments.MOMENTS_BLOCK` values, or 64-row passes of a column, plus a
    merge per block), the mean is within ``γ(chain + 8)·(R + M)`` and ``M2`` within
    ``8·n·γ(chain + 8)·R·(R + M)``, ``M`` the largest magnitude. numpy's two-pass oracle adds
    ``γ(n + 1)·M`` to the mean and ``γ(n + 2)·n·R² + n·(γ(n + 1)·M)²`` to ``M2``.
float32 physical values
    astropy rounds scaled data to float32 twice (``x·bscale``, then ``+ bzero``), each within
    ``2**-24`` relative; the oracle adds those rounded values, the kernels' sums and moments the
    unrounded float64 ones. Each value differs by at most ``2**-23·(|x·bscale| + |bzero|)``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dfits.kernels import oracle
from dfits.kernels.moments import MOMENTS_BLOCK

__all__ = [
    "U",
    "assert_within",
    "gamma",
    "moment_tolerances",
    "physical64",
    "sum_tolerance",
]

#: float64 unit roundoff
U = 2.0**-53
#: two float32 roundings of astropy's scaled values, each within 2**-24 relative
F32 = 2.0**-23
#: rows of a column-kernel pass (``moments._ROWS_PER_PASS``): one Chan merge per pass
_PASS = 64


def gamma(k):
    """``γ(k) = k·u / (1 - k·u)``: the relative error of ``k`` roundings in a row."""
    k = np.asarray(k, dtype=np.float64)
    return k * U / (1 - k * U)


def physical64(stored, spec, keep=None) -> np.ndarray:
    """The oracle's physical values in float64, NaN where missing or outside ``keep``."""
    v = oracle.decode(stored, spec).astype(np.float64)
    return v if keep is None else np.where(keep, v, np.nan)


def _magnitudes(stored, spec, v) -> np.ndarray:
    """``|x·bscale| + |bzero|`` (scaled data) or ``|v|``, NaN where ``v`` is NaN.

    Bounds both the physical value and what scaling adds before rounding (``x·bscale`` may
    be much larger than the result when ``bzero`` cancels it).
    """
    if spec.mode != "scaled":
        return np.abs(v)
    raw = stored.astype(stored.dtype.newbyteorder("=")).astype(np.float64)
    mag = np.abs(raw * spec.bscale) + abs(spec.bzero)
    return np.where(np.isnan(v), np.nan, mag)


def _rounded32(spec) -> bool:
    """Whether the oracle's values are float32-rounded where the kernels' sums are not."""
    return spec.mode == "scaled" and spec.physical == np.float32


def _reduce(func, a, axis):
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: NaN is right
        return func(a, axis=axis)


def sum_tolerance(stored, spec, axis, keep=None, weights=None):
    """Largest ``|kernel - oracle|`` for float64 sums over ``axis`` of the values kept.

    ``weights`` (already broadcast against ``stored``) bound terms ``x·w``: each product adds
    one rounding, which ``γ(n + 4)`` covers.
    """
    v = physical64(stored, spec, keep)
    mag = _magnitudes(stored, spec, v)
    if weights is not None:
        mag = mag * np.abs(weights)
    n = _reduce(np.sum, ~np.isnan(v), axis)
    total = _reduce(np.nansum, mag, axis)
    tol = 2 * gamma(n + 4) * total
    if _rounded32(spec) and weights is None:
        tol = tol + F32 * total
    return tol


def moment_tolerances(stored, spec, axis, keep=None):
    """Bounds on ``|kernel - oracle|`` over ``axis`` for the mean, ``M2`` and ``M2 / n``.

    See the module notes; the variance adds a rounding of each division (``u·R²`` covers
    both, the variance being at most ``R²/4``).
    """
    v = physical64(stored, spec, keep)
    mag = _magnitudes(stored, spec, v)
    n = _reduce(np.sum, ~np.isnan(v), axis)
    spread = _reduce(np.nanmax, v, axis) - _reduce(np.nanmin, v, axis)
    big = _reduce(np.nanmax, mag, axis)
    blocks = np.ceil(np.maximum(n, 1) / _PASS)
    chain = np.minimum(n, MOMENTS_BLOCK) + 2 * blocks
    kernel = gamma(chain + 8)
    mean_tol = kernel * (spread + big) + gamma(n + 1) * big
    m2_tol = (
        8 * n * kernel * spread * (spread + big)
        + gamma(n + 2) * n * spread**2
        + n * (gamma(n + 1) * big) ** 2
    )
    if _rounded32(spec):
        mean_tol = mean_tol + F32 * big
        m2_tol = m2_tol + 2 * n * spread * F32 * big + n * (F32 * big) ** 2
    return mean_tol, m2_tol, m2_tol / np.maximum(n, 1) + U * spread**2


def assert_within(got, want, tol, what: str = "values") -> None:
    """Assert ``|got - want| <= tol`` elementwise; NaN matches NaN and ``±inf`` itself only."""
    got, want = np.broadcast_arrays(np.asarray(got, np.float64), np.asarray(want, np.float64))
    tol = np.broadcast_to(np.asarray(tol, np.float64), got.shape)
    with np.errstate(invalid="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        diff = np.abs(got - want)
        close = np.isfinite(got) & np.isfinite(want) & (diff <= tol)
    bad = ~(same | close)
    if bad.any():
        worst = np.argmax(np.where(bad, diff / np.where(tol > 0, tol, math.inf), -1))
        at = np.unravel_index(worst, got.shape)
        raise AssertionError(
            f"{bad.sum()} of {bad.size} {what} outside the bound; worst at {at}: got "
            f"{got[at]!r}, want {want[at]!r}, |diff| {diff[at]:.3g} > bound {tol[at]:.3g}"
        )


def sampled(values, default, ids=str) -> list:
    """``values`` as pytest params, those outside ``default`` marked slow.

    Every kernel variant (encoding × layout × reduced axes) compiles on first use, seconds
    each on a cold cache, so the default run covers each kernel shape once (rows, columns,
    all axes, non-adjacent axes; contiguous and strided) and ``-m slow`` the full product.
    """
    return [
        pytest.param(v, id=ids(v), marks=() if v in default else pytest.mark.slow) for v in values
    ]
