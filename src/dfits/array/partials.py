"""Large sum partials that dask's combine step adds instead of concatenating.

dask's tree reduction combines partials by concatenating them along the reduced axes and
summing the result (``np.sum(_concatenate2(parts))``). For a moment map of a 1024² cube that is
a fresh ``k × 4 MiB`` array per combine task, and fresh memory is what costs most on the
machines we measure (page faults, ~1 ms per MiB): concatenating four moment-map partials took
longer than the sum over them.

A chunk's sum that is large enough comes back as a :class:`SumPartial` (a plain ndarray
subclass whose ufunc and function results are plain arrays again). dask picks the
concatenate function from the highest ``__array_priority__`` among the parts, so our hook sees
these parts first; when the concatenation is about to be summed over exactly the concatenated
axes (dask's own sum/mean/moment combine and aggregate steps, recognised by their code
objects), it returns a :class:`PartialStack`, which keeps the parts apart, answers that sum by
adding them into one array, and does the elementwise steps dask's moment combine takes before
it (ufuncs, ``np.where``, ``[..., k]``, ``astype``) part by part when that equals the dense
result. In every other case, and for anything else, the parts are concatenated as before, so
results are plain ``numpy.ndarray`` and never this module's types.
"""

from __future__ import annotations

import functools
import sys
from types import CodeType
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = ["PartialStack", "SumPartial", "as_partial", "concatenate_partials"]

#: Partials smaller than this stay plain: concatenating them costs less than the bookkeeping.
STACK_MIN_BYTES = 1 << 18

_SUMS = (np.sum, np.nansum)


class SumPartial(np.ndarray):
    """A chunk's keepdims sum, marked so that dask's combine step can add it in place."""

    # above plain arrays (0) so that dask's concatenate dispatch picks our hook
    __array_priority__ = 25.0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return getattr(ufunc, method)(*(_plain(i) for i in inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        out = func(*_plain_all(args), **_plain_all(kwargs))
        if func is np.stack and all(isinstance(a, SumPartial) for a in args[0]):
            # dask's moment_chunk stacks its Σ(x - mean)^k sums: still a chunk's partial
            return as_partial(out)
        return out

    def copy(self, order: str = "C") -> np.ndarray:  # type: ignore[override]
        # dask's ``finalize`` copies a single-chunk result: hand back numpy's own type
        return np.array(self.view(np.ndarray), order=order, copy=True)

    def __reduce__(self):
        # a partial shipped to another worker arrives as a plain array (no stacking there)
        return self.view(np.ndarray).__reduce__()


def as_partial(value: Any) -> Any:
    """Mark a chunk's keepdims sum as a :class:`SumPartial` when it is worth it."""
    if isinstance(value, np.ndarray) and value.ndim and value.nbytes >= STACK_MIN_BYTES:
        return value.view(SumPartial)
    return value


class PartialStack(NDArrayOperatorsMixin):
    """Parts dask meant to concatenate along ``axis``, kept apart until they are summed."""

    __array_priority__ = 30.0
    __slots__ = ("_dense", "axis", "parts")

    def __init__(self, parts: list[Any], axis: int) -> None:
        self.parts = parts
        self.axis = axis
        self._dense: np.ndarray | None = None

    # -- geometry ---------------------------------------------------------------------------
    @property
    def axes(self) -> frozenset[int]:
        """Every axis along which parts were stacked (nested stacks included)."""
        inner = set()
        for p in self.parts:
            if isinstance(p, PartialStack):
                inner |= p.axes
        return frozenset(inner | {self.axis})

    def leaves(self) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for p in self.parts:
            out.extend(p.leaves() if isinstance(p, PartialStack) else [np.asarray(p)])
        return out

    @property
    def shape(self) -> tuple[int, ...]:
        shapes = [p.shape for p in self.parts]
        first = list(shapes[0])
        first[self.axis] = sum(s[self.axis] for s in shapes)
        return tuple(first)

    @property
    def ndim(self) -> int:
        return len(self.parts[0].shape)

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(*(p.dtype for p in self.parts))

    # -- the sum over the stacked axes ------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        return _stack_sum(self, axis, dtype, out, keepdims, False, kwargs)

    # -- elementwise steps part by part where that is exact; anything else concatenates -----
    def dense(self) -> np.ndarray:
        """The concatenation dask asked for (made once, only when something needs it)."""
        if self._dense is None:
            parts = [p.dense() if isinstance(p, PartialStack) else _plain(p) for p in self.parts]
            self._dense = np.concatenate(parts, axis=self.axis)
        return self._dense

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.dense()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and len(args) == 3 and not kwargs:
            done = _partwise(np.where, args)
            if done is not None:
                return done
        if func in _SUMS and len(args) == 1 and args[0] is self:
            kw = dict(kwargs)
            return _stack_sum(
                self,
                kw.pop("axis", None),
                kw.pop("dtype", None),
                kw.pop("out", None),
                kw.pop("keepdims", False),
                func is np.nansum,
                kw,
            )
        return func(*_plain_all(args), **_plain_all(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and ufunc.nout == 1 and "out" not in kwargs:
            # elementwise work that dask's moment combine does before summing over the
            # stacked axes: done part by part, never on a concatenation
            done = _partwise(functools.partial(ufunc, **kwargs), inputs)
            if done is not None:
                return done
        return getattr(ufunc, method)(*_plain_all(inputs), **_plain_all(kwargs))

    def astype(self, dtype: Any, **kwargs: Any) -> PartialStack:
        # dask's ``divide(a, b, dtype)`` casts its quotient: part by part too
        return _apply(lambda p: p.astype(dtype, **kwargs), [self], self)

    def __getitem__(self, index: Any) -> Any:
        # ``Ms[..., k]`` picks along the last axis, which is never a stacked one
        if (
            isinstance(index, tuple)
            and index[:1] == (Ellipsis,)
            and all(isinstance(i, int | np.integer | slice) for i in index[1:])
            and all(a < self.ndim - (len(index) - 1) for a in self.axes)
        ):
            return PartialStack(
                [p[index] for p in self.parts],
                self.axis,
            )
        return self.dense()[index]

    def __getattr__(self, name: str) -> Any:
        # other methods dask or numpy may reach for (reshape, ...) act on the concatenation
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dense(), name)

    def __repr__(self) -> str:
        return f"PartialStack(shape={self.shape}, dtype={self.dtype}, parts={len(self.parts)})"


def _partwise(func, inputs) -> PartialStack | None:
    """``func`` applied part by part, or None when that would not equal the dense result.

    Every stack among ``inputs`` must be split alike; every other input must broadcast
    against one part (size 1, or absent, along each stacked axis).
    """
    stacks = [i for i in inputs if isinstance(i, PartialStack)]
    ref = stacks[0]
    if not all(_alike(ref, s) for s in stacks[1:]):
        return None
    for other in inputs:
        if isinstance(other, PartialStack):
            continue
        shape = np.shape(other)
        if len(shape) > ref.ndim:
            return None
        padded = (1,) * (ref.ndim - len(shape)) + tuple(shape)
        if any(padded[a] != 1 for a in ref.axes):
            return None
    return _apply(func, inputs, ref)


def _alike(a: PartialStack, b: PartialStack) -> bool:
    if a.axis != b.axis or len(a.parts) != len(b.parts) or a.ndim != b.ndim:
        return False
    for pa, pb in zip(a.parts, b.parts, strict=True):
        if isinstance(pa, PartialStack) != isinstance(pb, PartialStack):
            return False
        if isinstance(pa, PartialStack):
            if not _alike(pa, pb):
                return False
        elif pa.shape[a.axis] != pb.shape[a.axis]:
            return False
    return True


def _apply(func, inputs, ref: PartialStack) -> PartialStack:
    parts = []
    for k, part in enumerate(ref.parts):
        args = [i.parts[k] if isinstance(i, PartialStack) else i for i in inputs]
        if isinstance(part, PartialStack):
            parts.append(_apply(func, args, part))
        else:
            parts.append(np.asarray(func(*(_plain(a) for a in args))))
    return PartialStack(parts, ref.axis)


def _stack_sum(stack, axis, dtype, out, keepdims, skipna, extra):
    ndim = stack.ndim
    axes = _normalize(axis, ndim)
    leaves = stack.leaves()
    first = leaves[0]
    addable = (
        out is None
        and not extra
        and axes == stack.axes
        and all(leaf.shape == first.shape and leaf.dtype == first.dtype for leaf in leaves)
        and all(first.shape[a] == 1 for a in axes)
    )
    func = np.nansum if skipna else np.sum
    if not addable:
        return func(stack.dense(), axis=axis, dtype=dtype, out=out, keepdims=keepdims, **extra)
    rdtype = func(np.zeros(1, first.dtype), dtype=dtype).dtype
    # in part order, like numpy's reduction over the concatenated axis; inputs are left alone
    if len(leaves) == 1:
        acc = np.array(_valid(first, skipna), dtype=rdtype, copy=True)
    else:
        # the first add writes the fresh result: one pass less than copying the first part
        acc = np.asarray(
            np.add(_valid(first, skipna), _valid(leaves[1], skipna), dtype=rdtype, casting="unsafe")
        )
    for leaf in leaves[2:]:
        np.add(acc, _valid(leaf, skipna), out=acc, dtype=rdtype, casting="unsafe")
    if keepdims:
        # a combine step's result: the next level (or dask's aggregate) stacks it in turn
        return as_partial(acc)
    acc = acc.reshape(tuple(n for i, n in enumerate(acc.shape) if i not in axes))
    return acc[()] if acc.ndim == 0 else acc


def _valid(leaf: np.ndarray, skipna: bool) -> np.ndarray:
    leaf = _plain(leaf)
    if skipna and leaf.dtype.kind in "fc":
        bad = np.isnan(leaf)
        if bad.any():
            return np.where(bad, 0, leaf)
    return leaf


def _normalize(axis: Any, ndim: int) -> frozenset[int]:
    if axis is None:
        return frozenset(range(ndim))
    items = axis if isinstance(axis, tuple | list) else (axis,)
    return frozenset(int(a) % ndim for a in items)


def _plain(obj: Any) -> Any:
    if isinstance(obj, SumPartial):
        return obj.view(np.ndarray)
    if isinstance(obj, PartialStack):
        return obj.dense()
    return obj


def _plain_all(obj: Any) -> Any:
    if isinstance(obj, list | tuple):
        return type(obj)(_plain_all(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _plain_all(v) for k, v in obj.items()}
    return _plain(obj)


# -- dask's concatenate hook ----------------------------------------------------------------


def concatenate_partials(arrays, axis: int = 0, out: Any = None):
    """dask's ``concatenate`` for partials: a :class:`PartialStack` when a sum follows."""
    arrays = list(arrays)
    if out is None and _summed_next():
        return PartialStack(arrays, axis)
    parts = [p.dense() if isinstance(p, PartialStack) else _plain(p) for p in arrays]
    return np.concatenate(parts, axis=axis, out=out)


@functools.cache
def _callers() -> tuple[frozenset[Any], Any, frozenset[Any]]:
    from dask.array import reductions
    from dask.array.core import _concatenate2
    from toolz.functoolz import Compose

    # these call ``_concatenate2(...)`` and then only sum what it returns, after elementwise
    # ufuncs, ``np.where`` and ``[..., k]`` that a PartialStack does part by part
    callers = (
        reductions.mean_combine,
        reductions.mean_agg,
        reductions.moment_combine,
        reductions.moment_agg,
    )
    summing = frozenset(
        getattr(f, "__wrapped__", f).__code__
        for f in callers
        if hasattr(getattr(f, "__wrapped__", f), "__code__")
    )
    # _concatenate2 recurses through a list comprehension (a frame of its own before 3.12)
    own = _concatenate2.__code__
    concat2 = frozenset([own, *(c for c in own.co_consts if isinstance(c, CodeType))])
    return concat2, Compose.__call__.__code__, summing


def _summed_next() -> bool:
    """True when dask's ``_concatenate2`` was called by code that sums its result next
    (after, for the moment steps, elementwise work a stack does part by part)."""
    concat2, compose_call, summing = _callers()
    frame = sys._getframe(2)
    if frame is None or frame.f_code not in concat2:
        return False
    while frame is not None and frame.f_code in concat2:
        frame = frame.f_back
    if frame is None:
        return False
    if frame.f_code in summing:
        return True
    if frame.f_code is compose_call:
        # _tree_reduce's ``compose(partial(sum, axis=...), partial(_concatenate2, ...))``
        funcs = getattr(frame.f_locals.get("self"), "funcs", ())
        return bool(funcs) and all(
            isinstance(f, functools.partial) and f.func in _SUMS for f in funcs
        )
    return False
