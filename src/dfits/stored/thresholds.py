"""Threshold comparisons as closed float64 bands: what numpy's ``v > t`` keeps, exactly.

A strict bound becomes a closed one a float64 ulp away, which is exact because every physical
value compared is a float64 exactly; the threshold is first converted as numpy converts it for
the comparison.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["COMPARISONS", "FLIPPED", "comparison_band"]

_INF = math.inf
_EMPTY = (_INF, -_INF)
#: integers up to this size are exact float64 values
_EXACT = 2**53
#: the comparison with the chunk on the left, for a comparison written the other way round
FLIPPED = {
    np.greater: np.less,
    np.less: np.greater,
    np.greater_equal: np.less_equal,
    np.less_equal: np.greater_equal,
}
COMPARISONS = frozenset(FLIPPED)


def comparison_band(op: Any, physical: np.dtype, threshold: Any) -> tuple[float, float] | None:
    """The closed float64 band ``[lo, hi]`` of values ``v`` for which ``op(v, threshold)``.

    ``op`` is one of numpy's four ordering comparisons, ``v`` any value of dtype
    ``physical``. The threshold is first converted as numpy converts it for that
    comparison (a Python float against float32 data compares in float32). None when the
    band cannot reproduce numpy exactly: 64-bit integer data, a threshold that is not a
    real scalar, or one whose conversion overflows.
    """
    t = _threshold(np.dtype(physical), threshold)
    if t is None:
        return None
    if math.isnan(t):
        return _EMPTY
    if op is np.greater_equal:
        return (t, _INF)
    if op is np.less_equal:
        return (-_INF, t)
    if op is np.greater:
        return _EMPTY if t == _INF else (float(np.nextafter(t, _INF)), _INF)
    if op is np.less:
        return _EMPTY if t == -_INF else (-_INF, float(np.nextafter(t, -_INF)))
    return None


def _threshold(physical: np.dtype, t: Any) -> float | None:
    """The threshold as the float64 value numpy compares against, or None."""
    if physical.kind not in "iuf" or (physical.kind in "iu" and physical.itemsize > 4):
        return None  # int64 data compare exactly in integers, not in float64
    if isinstance(t, bool | np.bool_):
        return None
    if isinstance(t, int):  # numpy compares Python ints with integer data exactly
        if physical.kind in "iu":
            return float(t) if abs(t) <= _EXACT else None
        # float data: cast as numpy casts a weak Python int
        return _cast(t, np.result_type(physical, t))
    if isinstance(t, float):
        return _cast(t, np.result_type(physical, t))
    if isinstance(t, np.generic | np.ndarray) and np.ndim(t) == 0 and t.dtype.kind in "iuf":
        value = t[()] if isinstance(t, np.ndarray) else t
        if t.dtype.kind in "iu" and physical.kind in "iu":
            return float(value) if abs(int(value)) <= _EXACT else None
        return _cast(value, np.result_type(physical, t.dtype))
    return None


def _cast(value: Any, ctype: np.dtype) -> float | None:
    if ctype.kind != "f":
        return None
    with np.errstate(over="raise", invalid="ignore"):
        try:
            cast = ctype.type(value)
        except (FloatingPointError, OverflowError):
            return None  # numpy would warn and compare against inf: leave that to numpy
    return float(cast)
