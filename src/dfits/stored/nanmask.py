"""Lazy NaN masks of stored chunks, and chunks with their missing values set to zero.

xarray's skipping reductions do not call ``np.nansum``: ``da.sum()`` builds
``sum(where(isnan(x), 0, x))``, ``da.count()`` builds ``sum(~isnan(x))`` and ``min_count``
adds ``sum(isnan(x))``. dask fuses those steps into one task per chunk, so each step sees
the previous one's result. Here ``np.isnan`` of a stored chunk returns a :class:`NanMask`
that remembers its chunk, ``~``/``np.logical_not`` flip it, ``np.where(mask, 0, x)`` (or
``np.where(~mask, x, 0)``) returns a :class:`NanZeroed` chunk, and the final ``np.sum`` of
either runs the fused counting or ``nansum`` kernel (the handlers below) on the stored
bytes. Any other use materialises the plain numpy value, exactly as numpy would
compute it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dfits._lazy import kernels
from dfits.stored import passes
from dfits.stored.cuts import CutValues, same_values
from dfits.stored.handlers import deviation_sum
from dfits.stored.lazy import Deviation, OfChunk, _is_basic
from dfits.stored.lazy import materialize as _materialize
from dfits.stored.results import finish, keepdims_partial, shape_out
from dfits.stored.stored import StoredChunk

# the handlers are named in dfits.stored.recognised, which installs them
__all__ = ["NanMask", "NanZeroed", "isnan_rule", "nan_zeroed"]


class NanMask(OfChunk):
    """``np.isnan(chunk)`` (``valid=False``) or ``~np.isnan(chunk)`` (``valid=True``).

    ``chunk`` is a stored chunk or the NaN-filled values of a threshold cut
    (``x.where(x > t)``, :mod:`dfits.stored.cuts`).
    """

    __slots__ = ("chunk", "dtype", "valid")
    handlers: ClassVar[dict[Any, Any]] = {}

    def __init__(
        self, chunk: StoredChunk | CutValues, valid: bool = False, dtype: Any = bool
    ) -> None:
        self.chunk = chunk
        self.valid = valid
        # 0/1 as another number type (dask's count_nonzero casts the mask to intp)
        self.dtype = np.dtype(dtype)

    def __repr__(self) -> str:
        what = "~isnan" if self.valid else "isnan"
        return f"NanMask({what}, shape={self.shape}, dtype={self.dtype})"

    def materialize(self) -> np.ndarray:
        mask = np.isnan(self.chunk.decode())
        if self.valid:
            np.logical_not(mask, out=mask)
        return mask if self.dtype == np.bool_ else mask.astype(self.dtype)

    def count(self, axes: tuple[int, ...]) -> Any:
        """Per-slice numbers of True values over ``axes`` (int64), from the sum pass."""
        x = self.chunk
        size = math.prod(x.shape[a] for a in axes)
        if isinstance(x, CutValues):  # NaN outside the cut (x.where(x > t)), or none at all
            valid = x.counts(axes) if x.nan_filled else None
        else:
            valid = passes.sum_count(x, axes, True)[0] if x.spec.has_missing and x.size else None
        if valid is None:
            shape = tuple(n for ax, n in enumerate(x.shape) if ax not in axes)
            return np.broadcast_to(np.int64(size if self.valid else 0), shape)
        return valid if self.valid else size - np.asarray(valid, dtype=np.int64)

    def astype(self, dtype: Any, **kwargs: Any) -> Any:
        target = np.dtype(dtype)
        if target.kind in "biuf" and not kwargs and self.lazy:
            return self if target == self.dtype else NanMask(self.chunk, self.valid, target)
        return self.values().astype(dtype, **kwargs)

    def __getitem__(self, index: Any) -> Any:
        if _is_basic(index) and self.lazy:
            part = self.chunk[index]
            if isinstance(part, StoredChunk | CutValues):
                return NanMask(part, self.valid, self.dtype)
        return self.values()[index]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        negation = ufunc is np.logical_not or (ufunc is np.invert and self.dtype == np.bool_)
        if negation and method == "__call__" and not kwargs and self.lazy:
            return NanMask(self.chunk, not self.valid)
        return getattr(ufunc, method)(*_materialize(inputs), **_materialize(kwargs))


class NanZeroed(OfChunk):
    """A stored chunk whose missing values (NaN, BLANK) read as ``zero`` (0 or -0.0).

    ``chunk`` may also be a square of one (a :class:`~dfits.stored.stored.Deviation`).
    """

    __slots__ = ("chunk", "zero")
    handlers: ClassVar[dict[Any, Any]] = {}

    def __init__(self, chunk: StoredChunk | CutValues | Deviation, zero: Any) -> None:
        self.chunk = chunk
        self.zero = zero

    dtype = property(lambda self: self.chunk.dtype)

    def __repr__(self) -> str:
        return f"NanZeroed(shape={self.shape}, dtype={self.dtype})"

    def materialize(self) -> np.ndarray:
        values = self.chunk.decode()
        return np.where(np.isnan(values), self.zero, values)


def nan_zeroed(condition: Any, x: Any, y: Any) -> NanZeroed | None:
    """``np.where(condition, x, y)`` as a :class:`NanZeroed` chunk, when it is one.

    That is ``where(isnan(c), 0, c)`` or ``where(~isnan(c), c, 0)`` with ``c`` the mask's
    own chunk and the zero a scalar or an array of zeros no larger than the chunk (dask's
    ``zeros_like`` chunks are broadcasts of one zero). None for anything else.
    """
    if not isinstance(condition, NanMask) or condition.dtype != np.bool_:
        return None
    chunk, other = (x, y) if condition.valid else (y, x)
    # a square's mask is its chunk's (see ``Deviation.__array_ufunc__``): xarray's skipping
    # sum of ``x ** 2`` zeroes the square where the chunk is NaN
    base = chunk.chunk if isinstance(chunk, Deviation) and chunk.keeps_nan else chunk
    if not _same_chunk(condition.chunk, base):
        return None
    zero = _zero_of(other, chunk)
    if zero is None:
        return None
    return NanZeroed(chunk, zero)


def _same_chunk(a: StoredChunk | CutValues, b: Any) -> bool:
    if a is b:
        return True
    return (
        isinstance(a, StoredChunk)
        and isinstance(b, StoredChunk)
        and a.spec == b.spec
        and same_values(a, b)
    )


def _zero_of(other: Any, chunk: StoredChunk) -> Any:
    """The zero ``other`` holds everywhere (keeping the chunk's dtype), else None."""
    if isinstance(other, bool | np.bool_):
        return None
    if isinstance(other, int | float):
        if other != 0 or np.result_type(chunk.dtype, other) != chunk.dtype:
            return None
        return chunk.dtype.type(other)
    if not isinstance(other, np.ndarray | np.generic) or other.dtype.kind not in "iuf":
        return None
    other = np.asarray(other)
    if np.result_type(chunk.dtype, other.dtype) != chunk.dtype:
        return None
    try:
        if np.broadcast_shapes(other.shape, chunk.shape) != chunk.shape:
            return None
    except ValueError:
        return None
    if other.size == 0:
        return None
    if not any(other.strides):  # a broadcast of one value (dask's zeros_like): one read
        value = other[(0,) * other.ndim]
    elif not np.any(other):
        value = 0
    else:
        return None
    return chunk.dtype.type(value) if value == 0 else None


def isnan_rule(values: Any, inputs: tuple) -> NanMask | None:
    """``np.isnan`` of a stored chunk, of cut values, or of a square that is NaN exactly
    where its chunk is (xarray's skipping sum of ``x ** 2``)."""
    if len(inputs) != 1:
        return None
    if isinstance(values, StoredChunk | CutValues):
        return NanMask(values)
    if isinstance(values, Deviation) and values.keeps_nan:
        return NanMask(values.chunk)
    return None


# -- numpy functions on masks and NaN-zeroed chunks (the counts: cut_handlers.mask_*) ------


def mask_where(condition, x=None, y=None):
    if x is None or y is None:
        return NotImplemented
    zeroed = nan_zeroed(condition, x, y)
    return NotImplemented if zeroed is None else zeroed


def zeroed_sum(z: NanZeroed, axis=None, dtype=None, out=None, keepdims=False, **_):
    x = z.chunk
    if isinstance(x, Deviation):  # NaN squares as 0: the skipping sum of squares
        return deviation_sum(x, axis, dtype, out, keepdims, skipna=True)
    if isinstance(x, CutValues):
        axes = kernels.normalize_axis(axis, x.ndim)
        value = shape_out(x, axes, keepdims, x.sums(axes, dtype or x.dtype))
        return keepdims_partial(finish(value, dtype or x.dtype, out), keepdims, out)
    return np.nansum(x, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
