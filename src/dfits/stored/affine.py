"""``x * c``, ``x + c``, ``-x``, ...: arithmetic with a scalar that keeps a chunk stored.

A unit conversion (``cube * 1e3``), a channel width (``(cube * dv).sum(axis=0)``) or a
baseline (``cube - 0.5``) is usually the first thing done to a cube, and everything after it
would otherwise see decoded chunks. FITS already decodes with an affine map,
``stored · BSCALE + BZERO``, and the kernels compute it exactly as astropy does (for
BITPIX 8, 16 and -32 in float32, two rounded steps; otherwise in float64). So where numpy's
own result of the arithmetic equals that map with new BSCALE and BZERO, value for value, the
result is the same stored bytes with a new decode spec, and every fused reduction, cut and
mask applies to it unchanged:

* raw floating data (no BSCALE/BZERO): ``x * c`` is ``stored · c + 0``, and ``x + c`` (or
  ``x - c``, ``c + x``) is ``stored · 1 + c``: numpy's ``x * c`` rounds once, and so does the
  decoder (adding zero changes nothing but the sign of a zero product: ``-0.0`` becomes
  ``0.0``, which compares and sums the same);
* then ``(x * c) + d``: numpy rounds the product, then the sum, which is the decoder's
  ``stored · c + d``;
* any scaled data: ``-x`` is exact; ``x * 2**k`` (``x / 2**k``) of scaled integers scales
  BSCALE and BZERO and rounds as numpy does away from overflow and the subnormal range
  (checked against the stored type's range; see ``_exact_rescale``); ``d - x`` is
  ``-x + d`` when BZERO is 0.

Anything else (another constant after a BZERO, a division by ``c`` that is not a power of
two, an integer physical dtype, a scalar that would change the result dtype, such as a
float64 numpy scalar with float32 data) returns None and the caller decodes, as before.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

__all__ = ["AFFINE_UFUNCS", "affine_spec"]

AFFINE_UFUNCS = frozenset({np.multiply, np.true_divide, np.add, np.subtract})


def _natural(bitpix: int) -> np.dtype:
    """The dtype the decoder computes physical values in for a scaled ``bitpix``."""
    return np.dtype(np.float32 if bitpix in (8, 16, -32) else np.float64)


def _scalar(value: Any, physical: np.dtype) -> float | None:
    """``value`` as a float, if numpy would combine it with ``physical`` into ``physical``."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        return None  # arrays (0-d ones too), complex, strings, ...
    try:
        if np.result_type(physical, value) != physical:
            return None
        c = float(value)
    except (OverflowError, TypeError, ValueError):
        return None
    return c if math.isfinite(c) else None


def _power_of_two(c: float) -> bool:
    """True for ``±2**k`` (scaling by it is exact)."""
    return c != 0.0 and math.frexp(abs(c))[0] == 0.5


def _exact_rescale(spec: Any, scale: float, zero: float) -> bool:
    """Whether ``2**k · decoded`` equals decoding with ``scale`` and ``zero`` for every value.

    Scaling by a power of two commutes with rounding unless a value leaves the normal range
    on one side only: a product that underflowed stays rounded after it grows back, and
    ``stored · scale`` may overflow where ``stored · bscale + bzero`` did not. Integers are
    bounded, so their maps are checked against the type's range. Floating data may hold any
    magnitude, so only a map that rounds nothing yet (``±stored``) is rescaled.
    """
    if spec.bitpix < 0:
        return zero == 0.0 and abs(spec.bscale if spec.mode == "scaled" else 1.0) == 1.0
    top = 2.0 ** (spec.bitpix - 1)
    return (
        abs(scale) >= 1e-30
        and top * abs(scale) <= 1e30
        and (zero == 0.0 or 1e-30 <= abs(zero) <= 1e30)
    )


def affine_spec(spec: Any, ufunc: Any, other: Any, first: bool) -> Any | None:
    """The decode spec of ``stored (ufunc) other`` (``other (ufunc) stored`` unless ``first``),
    or None when numpy's result could differ from the decoder's for some value.

    ``ufunc`` is ``np.negative`` (``other`` ignored) or one of :data:`AFFINE_UFUNCS`.
    """
    physical = np.dtype(spec.physical)
    if (
        (ufunc is not np.negative and ufunc not in AFFINE_UFUNCS)
        or spec.error is not None
        or physical.kind != "f"
        or spec.mode not in ("raw", "scaled")
        or physical != _natural(spec.bitpix)
        or (spec.mode == "raw" and spec.bitpix > 0)
    ):
        return None
    raw = spec.mode == "raw"
    scale, zero = (1.0, 0.0) if raw else (float(spec.bscale), float(spec.bzero))
    if ufunc is np.negative:
        return replace(spec, mode="scaled", bscale=-scale, bzero=-zero)
    c = _scalar(other, physical)
    with np.errstate(over="ignore"):
        held = c is not None and np.isfinite(physical.type(c))
    if not held:
        return None  # (a constant float32 cannot hold is numpy's overflow, not ours)
    if ufunc is np.true_divide:
        if not first or not _power_of_two(c) or not math.isfinite(1.0 / c):
            return None  # (1 / 5e-324 overflows: numpy's division, not a rescale)
        ufunc, c = np.multiply, 1.0 / c
    if ufunc is np.multiply:
        if c == 0.0:
            return None  # a BSCALE of 0 means "cannot decode" to the rest of dfits
        if raw:
            return replace(spec, mode="scaled", bscale=c, bzero=0.0)
        if _power_of_two(c) and _exact_rescale(spec, scale * c, zero * c):
            return replace(spec, bscale=scale * c, bzero=zero * c)
        return None
    if ufunc is np.subtract:
        if first:
            c = -c
        else:  # c - x == (-x) + c, exactly
            scale = -scale
    if zero != 0.0:
        return None
    return replace(spec, mode="scaled", bscale=scale, bzero=c)
