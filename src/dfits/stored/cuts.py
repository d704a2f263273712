"""Threshold cuts of stored chunks: ``x > t`` masks and ``where(x > t, x, nan)`` values.

Masked moment maps and spectra are written ``cube.where(cube > 3 * rms).sum("freq")`` in
xarray, or ``da.where(x > t, x, np.nan)`` / ``np.where(x > t, x, 0)`` in dask. dask fuses the
comparison, the ``where`` and the reduction's chunk step into one task, so each step here
sees the previous one's result:

* a comparison of a stored chunk with a scalar (``>``, ``>=``, ``<``, ``<=``) is a lazy
  :class:`Cut`, the band ``lo <= x <= hi`` of values it keeps (``&`` of two cuts of the same
  chunk is their intersection);
* ``np.where(cut, x, nan)`` or ``np.where(cut, x, 0)`` with ``x`` the cut's own values is a
  lazy :class:`CutValues` chunk;
* sums, counts and means of those run the band kernel (:mod:`dfits.kernels.bands`) on the
  stored bytes: one pass gives the sums and counts that ``nansum``, xarray's skipping ``sum``
  (``where(isnan(y), 0, y)``), ``count`` and ``mean`` ask for;
* variances: ``values - mean`` is a lazy :class:`~dfits.stored.lazy.Deviation` whose
  squared sum is ``M2 + n (mean - c)²``, with ``(n, mean, M2)`` of the values inside the
  cut from one pass of the banded moments kernel (pooled with the zeros outside it, when
  zero-filled).

Any other use materialises numpy's exact value. A strict bound becomes a closed one a float64
ulp away, which is exact because every physical value compared is a float64 exactly.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dfits.stored import passes
from dfits.stored.lazy import OfChunk, _is_basic, deviation_of
from dfits.stored.lazy import materialize as _materialize
from dfits.stored.stored import StoredChunk
from dfits.stored.thresholds import COMPARISONS, FLIPPED, comparison_band

__all__ = ["Cut", "CutValues", "comparison_band", "comparison_rule", "cut_of", "cut_values"]


def cut_of(op: Any, chunk: StoredChunk, other: Any, chunk_first: bool = True) -> Cut | None:
    """``op(chunk, other)`` (``op(other, chunk)`` unless ``chunk_first``) as a :class:`Cut`."""
    if not chunk_first:
        op = FLIPPED.get(op)
    band = comparison_band(op, chunk.dtype, other) if op in COMPARISONS else None
    if band is None:
        return None
    return Cut(chunk, band, ((op, other),))


class Cut(OfChunk):
    """The boolean mask ``lo <= chunk <= hi`` of one or more comparisons with scalars."""

    __slots__ = ("band", "chunk", "dtype", "terms")
    handlers: ClassVar[dict[Any, Any]] = {}

    def __init__(
        self, chunk: StoredChunk, band: tuple[float, float], terms: tuple, dtype: Any = bool
    ) -> None:
        self.chunk = chunk
        self.band = band
        # the comparisons as written (chunk first): what materialize gives numpy
        self.terms = terms
        # 0/1 as another number type (dask's count_nonzero casts the mask to intp)
        self.dtype = np.dtype(dtype)

    def __repr__(self) -> str:
        return f"Cut({self.band[0]!r} <= x <= {self.band[1]!r}, shape={self.shape})"

    def materialize(self) -> np.ndarray:
        values = self.chunk.decode()
        mask = None
        for op, t in self.terms:
            step = op(values, t)
            mask = step if mask is None else np.logical_and(mask, step, out=mask)
        return mask if self.dtype == np.bool_ else mask.astype(self.dtype)

    def count(self, axes: tuple[int, ...]) -> np.ndarray:
        """Per-slice numbers of True values over ``axes`` (int64)."""
        return _band_counts(self.chunk, self.band, axes)

    def astype(self, dtype: Any, **kwargs: Any) -> Any:
        target = np.dtype(dtype)
        if target.kind in "biuf" and not kwargs and self.lazy:
            return self if target == self.dtype else Cut(self.chunk, self.band, self.terms, target)
        return self.values().astype(dtype, **kwargs)

    def __getitem__(self, index: Any) -> Any:
        if _is_basic(index) and self.lazy:
            part = self.chunk[index]
            if isinstance(part, StoredChunk):
                return Cut(part, self.band, self.terms, self.dtype)
        return self.values()[index]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if (
            ufunc in (np.logical_and, np.bitwise_and)
            and method == "__call__"
            and not kwargs
            and len(inputs) == 2
            and all(isinstance(i, Cut) and i.dtype == np.bool_ and i.lazy for i in inputs)
            and same_values(inputs[0].chunk, inputs[1].chunk)
        ):
            a, b = inputs
            band = (max(a.band[0], b.band[0]), min(a.band[1], b.band[1]))
            return Cut(a.chunk, band, a.terms + b.terms)
        return getattr(ufunc, method)(*_materialize(inputs), **_materialize(kwargs))


class CutValues(OfChunk):
    """``np.where(cut, chunk, fill)``: the chunk's values inside the cut, ``fill`` elsewhere.

    ``fill`` is NaN or zero; ``dtype`` is the dtype numpy's ``where`` gives.
    """

    __slots__ = ("chunk", "cut", "dtype", "fill")
    handlers: ClassVar[dict[Any, Any]] = {}

    def __init__(self, cut: Cut, chunk: StoredChunk, fill: Any, dtype: np.dtype) -> None:
        self.cut = cut
        self.chunk = chunk
        self.fill = fill
        self.dtype = dtype

    @property
    def nan_filled(self) -> bool:
        """True when values outside the cut read as NaN (``x.where(x > t)``)."""
        return math.isnan(self.fill)

    def __repr__(self) -> str:
        return f"CutValues({self.cut!r}, fill={self.fill!r}, dtype={self.dtype})"

    def materialize(self) -> np.ndarray:
        values = np.where(self.cut.materialize(), self.chunk.decode(), self.fill)
        return values.astype(self.dtype, copy=False)

    decode = materialize  # what NaN masks of these values call

    def stats(self, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Float64 sums and int64 counts of the values inside the cut, over ``axes``
        (one pass of the band kernel, memoised: a mean's count and sum both come from it)."""
        key = ("band", self.cut.band, axes)
        if (
            key not in self.chunk._memo
            and ("band-moments", self.cut.band, axes) in self.chunk._memo
        ):
            n, mean, _ = self.moments(axes)
            with np.errstate(invalid="ignore"):
                total = np.where(n > 0, mean * n, 0.0)
            self.chunk._memo[key] = (total, n)
        return _band_stats(self.chunk, self.cut.band, axes)

    def moments(self, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(n, mean, M2)`` of the values inside the cut over ``axes`` (memoised)."""
        key = ("band-moments", self.cut.band, axes)
        memo = self.chunk._memo.get(key)
        if memo is None:
            self.chunk.spec.check()
            lo, hi = self.cut.band
            memo = self.chunk._memo[key] = passes.band_moments(self.chunk, axes, (lo, hi))
        return memo

    def counts(self, axes: tuple[int, ...]) -> np.ndarray:
        """The int64 counts of values inside the cut over ``axes``."""
        return self.stats(axes)[1]

    def pooled_moments(self, axes: tuple[int, ...], skipna: bool):
        """``(n, mean, M2)`` of the values as numpy sees them: the zeros outside the cut
        pooled in when zero-filled; NaN-filled and not skipping, NaN where a slice has a
        value outside the cut."""
        n, mean, m2 = self.moments(axes)
        size = math.prod(self.shape[a] for a in axes)
        if not self.nan_filled:
            return _with_zeros(n, mean, m2, size)
        if not skipna:
            mean = np.where(n == size, mean, np.nan)
            n = np.broadcast_to(np.int64(size), np.shape(mean))
        return n, mean, m2

    def sums(self, axes: tuple[int, ...], dtype: Any = None) -> np.ndarray:
        """The sums alone over ``axes``: float64, or float32 straight from the kernel.

        A plain sum (xarray's masked moment map) then fills one float32 map per chunk
        instead of float64 sums, counts and a cast (fresh memory costs more than the
        arithmetic on this project's VM); sums already worked out are reused.
        """
        key = ("band", self.cut.band, axes)
        memo = self.chunk._memo.get(key)
        if memo is not None or dtype is None or np.dtype(dtype) != np.float32:
            return self.stats(axes)[0]
        self.chunk.spec.check()
        return passes.band_sum_count(self.chunk, axes, self.cut.band, dtype=dtype, counts=False)[0]

    def __getitem__(self, index: Any) -> Any:
        if _is_basic(index) and self.lazy:
            cut, chunk = self.cut[index], self.chunk[index]
            if isinstance(cut, Cut) and isinstance(chunk, StoredChunk):
                return CutValues(cut, chunk, self.fill, self.dtype)
        return self.values()[index]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if self.lazy and method == "__call__" and not kwargs:
            # ``d = A - u`` on the way to ``Σ d²``: answered from the banded moments
            deviation = deviation_of(self, ufunc, inputs)
            if deviation is not None:
                return deviation
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)


def _with_zeros(n, mean, m2, size: int):
    """``(n, mean, M2)`` of values pooled with ``size - n`` zeros (Chan et al.): ``size``
    values everywhere, mean ``n·mean / size``, ``M2 + n (mean - pooled)² + zeros·pooled²``."""
    n = np.asarray(n, dtype=np.int64)
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(has, n * np.where(has, mean, 0.0) / max(size, 1), 0.0)
        inside = np.where(has, m2 + n * (mean - pooled) ** 2, 0.0)
    m2_all = inside + (size - n) * pooled**2
    return np.broadcast_to(np.int64(size), np.shape(pooled)), pooled, m2_all


def cut_values(condition: Any, x: Any, y: Any) -> CutValues | None:
    """``np.where(condition, x, y)`` as :class:`CutValues`, when it is one; else None.

    That is a :class:`Cut` of ``x``'s own values (``x`` may be their exact widening, as
    xarray's ``where`` casts integers to floats), and ``y`` NaN or zero: a scalar or an
    array holding that one value no larger than the chunk.
    """
    if not isinstance(condition, Cut) or condition.dtype != np.bool_:
        return None
    if not isinstance(x, StoredChunk) or x.decoded:
        return None
    if not same_values(condition.chunk, x):
        return None
    fill = _fill_of(y, x.shape)
    if fill is None:
        return None
    dtype = np.result_type(x.dtype, y)
    if dtype.kind != "f" or not np.can_cast(x.dtype, dtype, "safe"):
        return None
    return CutValues(condition, x, dtype.type(fill), dtype)


def same_values(a: StoredChunk, b: StoredChunk) -> bool:
    """True when two stored chunks view the same stored values (either may be widened)."""
    if a is b:
        return True
    if a._u is None or b._u is None or a.spec.stored != b.spec.stored:
        return False
    sa, sb = a.spec, b.spec
    if (sa.bitpix, sa.mode, sa.bscale, sa.bzero, sa.blank) != (
        sb.bitpix,
        sb.mode,
        sb.bscale,
        sb.bzero,
        sb.blank,
    ):
        return False
    ia, ib = a._u.__array_interface__, b._u.__array_interface__
    return (
        ia["data"] == ib["data"] and ia["shape"] == ib["shape"] and ia["strides"] == ib["strides"]
    )


def _fill_of(y: Any, shape: tuple[int, ...]) -> float | None:
    """The NaN or zero that ``y`` holds everywhere, else None."""
    if isinstance(y, bool | np.bool_):
        return None
    if isinstance(y, int | float):
        value = float(y)
    elif isinstance(y, np.generic | np.ndarray) and y.dtype.kind in "iuf" and y.size:
        y = np.asarray(y)
        try:
            if np.broadcast_shapes(y.shape, shape) != shape:
                return None
        except ValueError:
            return None
        if any(y.strides):  # not one value broadcast: look at them all
            first = y.flat[0]
            if not (np.all(np.isnan(y)) if np.isnan(first) else not np.any(y)):
                return None
        value = float(y.flat[0])
    else:
        return None
    return value if math.isnan(value) or value == 0 else None


def _band_counts(chunk: StoredChunk, band: tuple[float, float], axes: tuple[int, ...]):
    memo = chunk._memo.get(("band", band, axes))
    if memo is not None:
        return memo[1]
    key = ("band-count", band, axes)
    counts = chunk._memo.get(key)
    if counts is None:
        chunk.spec.check()
        counts = chunk._memo[key] = passes.band_sum_count(chunk, axes, band, sums=False)[1]
    return counts


def _band_stats(chunk: StoredChunk, band: tuple[float, float], axes: tuple[int, ...]):
    key = ("band", band, axes)
    memo = chunk._memo.get(key)
    if memo is None:
        chunk.spec.check()
        memo = chunk._memo[key] = passes.band_sum_count(chunk, axes, band)
    return memo


def comparison_rule(chunk: Any, inputs: tuple, *, op: Any) -> Cut | None:
    """``op(*inputs)`` (a comparison) of a stored chunk with a scalar as a :class:`Cut`."""
    if not isinstance(chunk, StoredChunk) or len(inputs) != 2:
        return None
    first = inputs[0] is chunk
    return cut_of(op, chunk, inputs[1 if first else 0], first)
