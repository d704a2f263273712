"""numpy functions on threshold cuts and their values → the band kernel.

The handlers :mod:`dfits.stored.recognised` installs for cuts: counts of a mask (a
:class:`~dfits.stored.cuts.Cut`, ``(x > t).sum()``, or a NaN mask, ``np.isnan(x).sum()``:
anything with ``count(axes)``), ``np.where`` building
:class:`~dfits.stored.cuts.CutValues`, and sums and means of those. Results follow numpy's:
dtypes, NaN for a slice with a NaN (unskipped) or with nothing to average, ``keepdims`` and
``out``. Anything else declines, and the caller gets numpy's value from the decoded chunk.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from dfits.stored import passes
from dfits.stored.cuts import Cut, CutValues, cut_values
from dfits.stored.results import axes_of
from dfits.stored.results import finish as _finish
from dfits.stored.results import keepdims_partial as _partial
from dfits.stored.results import shape_out as _shape_out

if TYPE_CHECKING:
    from dfits.stored.nanmask import NanMask

# the handlers are named in dfits.stored.recognised, which installs them
__all__: list[str] = []


# -- masks: a cut, or a NaN mask (anything with ``count(axes)``) ---------------------------------


def mask_sum(c: Cut | NanMask, axis=None, dtype=None, out=None, keepdims=False, **_):
    axes, _ = axes_of(c, axis)
    value = _shape_out(c, axes, keepdims, c.count(axes))
    if dtype is None:  # numpy's: int64 for bool and small integers, else the mask's dtype
        dtype = np.zeros(0, c.dtype).sum().dtype
    return _partial(_finish(value, dtype, out), keepdims, out)


def mask_count_nonzero(c: Cut | NanMask, axis=None, *, keepdims=False):
    axes, _ = axes_of(c, axis)
    return _finish(_shape_out(c, axes, keepdims, c.count(axes)), np.intp, None)


def mask_any(c: Cut | NanMask, axis=None, out=None, keepdims=False, **_):
    axes, _ = axes_of(c, axis)
    return _finish(_shape_out(c, axes, keepdims, c.count(axes) > 0), None, out)


def mask_all(c: Cut | NanMask, axis=None, out=None, keepdims=False, **_):
    axes, size = axes_of(c, axis)
    return _finish(_shape_out(c, axes, keepdims, c.count(axes) == size), None, out)


def cut_where(condition, x=None, y=None):
    if x is None or y is None:
        return NotImplemented
    values = cut_values(condition, x, y)
    return NotImplemented if values is None else values


# -- the values inside the cut, NaN or zero elsewhere ------------------------------------------


def _sum(v: CutValues, axis, dtype, out, keepdims, skipna: bool):
    axes, size = axes_of(v, axis)
    if not skipna and v.nan_filled:
        total, n = v.stats(axes)
        total = np.where(n == size, total, np.nan)  # a NaN left in the slice
    else:
        total = v.sums(axes, dtype or v.dtype)
    value = _shape_out(v, axes, keepdims, total)
    return _partial(_finish(value, dtype or v.dtype, out), keepdims, out)


def values_sum(v, axis=None, dtype=None, out=None, keepdims=False, *, skipna: bool, **_):
    """``np.sum`` (``np.nansum`` with ``skipna``) of cut values."""
    return _sum(v, axis, dtype, out, keepdims, skipna)


def _mean(v: CutValues, axis, dtype, out, keepdims, skipna: bool):
    axes, size = axes_of(v, axis)
    total, n = v.stats(axes)
    with np.errstate(invalid="ignore", divide="ignore"):
        if skipna:  # NaN-filled values only (see the table entry)
            value = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            if np.any(n == 0):
                warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
        elif v.nan_filled:
            value = np.where((n == size) & (size > 0), total / max(size, 1), np.nan)
        else:
            value = total / size if size else np.full(np.shape(total), np.nan)
    return _finish(_shape_out(v, axes, keepdims, value), dtype or v.dtype, out)


def values_mean(v, axis=None, dtype=None, out=None, keepdims=False, *, skipna: bool, **_):
    """``np.mean`` (``np.nanmean`` with ``skipna``) of cut values."""
    if skipna and not v.nan_filled:  # zeros are values to average: numpy's
        return NotImplemented
    return _mean(v, axis, dtype, out, keepdims, skipna)


def _extreme(v: CutValues, axis, out, keepdims, want_max: bool, skipna: bool):
    """The largest (smallest) of the cut's values, NaN or zero elsewhere.

    One pass of the value-only extrema kernel with the cut's band gives the extreme inside
    it and how many values are inside. NaN-filled, skipping: a slice with nothing inside is
    NaN with numpy's warning; not skipping: a slice with anything outside is NaN.
    Zero-filled values hold no NaN (a NaN is outside every cut): the zero takes part
    wherever something is outside.
    """
    axes, size = axes_of(v, axis)
    if size == 0 or v.size == 0:
        return NotImplemented  # numpy's error: no identity for an empty maximum
    x = v.chunk
    x.spec.check()
    val, n, _ = passes.band_extrema(x, axes, want_max, v.cut.band)
    value = np.asarray(val).astype(v.dtype)  # exact: v.dtype holds every value of x
    n = np.asarray(n)
    if not v.nan_filled:
        fill = v.dtype.type(v.fill)
        pick = np.fmax if want_max else np.fmin
        value = np.where(n == size, value, np.where(n > 0, pick(value, fill), fill))
        value = value.astype(v.dtype, copy=False)
    elif not skipna:
        value = np.where(n == size, value, np.nan).astype(v.dtype, copy=False)
    elif not np.all(n > 0):
        value = np.where(n > 0, value, np.nan).astype(v.dtype, copy=False)
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)
    return _finish(_shape_out(v, axes, keepdims, value), None, out)


def values_extreme(v, axis=None, out=None, keepdims=False, *, want_max, skipna, **_):
    """``np.max``/``np.min`` (``want_max``; their ``nan`` forms with ``skipna``)."""
    return _extreme(v, axis, out, keepdims, want_max, skipna)
