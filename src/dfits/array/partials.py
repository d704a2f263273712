"""Large sum partials that dask's combine step adds instead of concatenating.

dask's tree reduction combines partials by concatenating them along the reduced axes and
summing the result (``np.sum(_concatenate2(parts))``). For a moment map of a 1024² cube that is
a fresh ``k × 4 MiB`` array per combine task, and fresh memory is what costs most on the
machines we measure (page faults, ~1 ms per MiB): concatenating four moment-map partials took
longer than the sum over them.

A chunk's sum that is large enough comes back as a :class:`SumPartial` (a plain ndarray
subclass whose reductions and mixed results are plain arrays again). dask picks the
concatenate function from the highest ``__array_priority__`` among the parts, so our hook
(:mod:`dfits.array.concat`) sees these parts first; when the concatenation is about to be
summed over exactly the concatenated axes (dask's own sum/mean/moment combine and aggregate
steps, recognised by their code objects), it returns a :class:`PartialStack`, which keeps
the parts apart, answers that sum by adding them into one array, and records the elementwise
steps dask's moment combine takes before it (ufuncs, ``np.where``, ``[..., k]``, ``astype``)
part by part when that equals the dense result; the sum then evaluates them tile by tile
(:mod:`dfits.array.tiles`), so no step fills a fresh part-sized array. In every other case,
and for anything else, the parts are concatenated as before, so results are plain
``numpy.ndarray`` and never this module's types.

Elementwise steps among partials alone (``A + B`` of two combine sums, ``total / n``) stay
partials, so that what a combine step returns is stacked again by the next level instead of
concatenated. Reductions, copies and anything mixed with plain arrays are plain arrays.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from dfits.array.fused import fused_sum
from dfits.array.tiles import AsType, LazyPart, materialize, quiet_divide, tile_slices, value_at

__all__ = ["SUMS", "PartialStack", "SumPartial", "as_partial", "plain", "plain_nested"]

#: Partials smaller than this stay plain: concatenating them costs less than the bookkeeping.
STACK_MIN_BYTES = 1 << 18

#: Sums of recorded steps run through compiled kernels (:mod:`dfits.array.fused`) where they
#: can; False evaluates every step with numpy, tile by tile (the same values, bit for bit but
#: for the sign bit of a NaN).
FUSE = True

#: Attribute marking a stack sum's fresh result, which nothing but its caller holds.
_SCRATCH = "_dfits_scratch"

#: The reductions a stack answers by adding its parts.
SUMS = (np.sum, np.nansum)


class SumPartial(np.ndarray):
    """A chunk's keepdims sum, marked so that dask's combine step can add it in place."""

    # above plain arrays (0) so that dask's concatenate dispatch picks our hook
    __array_priority__ = 25.0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(o) for o in kwargs["out"])
            return getattr(ufunc, method)(*(plain(i) for i in inputs), **kwargs)
        if (
            ufunc is np.true_divide
            and method == "__call__"
            and not kwargs
            and len(inputs) == 2
            and all(isinstance(i, SumPartial) and i.shape == self.shape for i in inputs)
            and (_called_from_moment_chunk() or _dividing_for_mu())
        ):
            # dask's moment_chunk: ``u = total / n`` is only the centre of ``A - u``, whose
            # squared sum evaluates it tile by tile (dispatch._shifted_m2): no whole map.
            # Its combine and aggregate: ``mu = divide(total, n)`` only enters the parts'
            # ``divide(totals, ns) - mu``, which the stack sum evaluates per element.
            return LazyPart(quiet_divide, [plain(inputs[0]), plain(inputs[1])], self.shape)
        if ufunc is np.add and method == "__call__" and not kwargs and len(inputs) == 2:
            into = _scratch_for_sum(inputs)
            if into is not None:
                # ``Ms.sum() + sum(ns * d**2)`` in dask's moment helper: both sums are fresh
                # maps of ours that nothing else holds, so the sum goes into one of them
                # (addition commutes exactly) instead of a third map
                np.add(*(plain(i) for i in inputs), out=plain(into))
                return into
        out = getattr(ufunc, method)(*(plain(i) for i in inputs), **kwargs)
        if method == "__call__" and ufunc.nout == 1 and _partials_only(inputs, out):
            # ``Ms.sum() + sum(ns * d**2)`` in dask's moment combine: the combined M is a
            # partial too, so that the next level stacks it instead of concatenating it
            return as_partial(out)
        return out

    def __array_function__(self, func, types, args, kwargs):
        if func is np.stack and all(isinstance(a, SumPartial) for a in args[0]):
            # dask's moment_chunk stacks its Σ(x - mean)^k sums: still a chunk's partial.
            # One sum (var/std) is stacked as a view: nothing writes into partials.
            arrays, *rest = args
            if len(arrays) == 1 and len(rest) + len(kwargs) <= 1 and set(kwargs) <= {"axis"}:
                axis = kwargs.get("axis", rest[0] if rest else 0)
                return as_partial(np.expand_dims(plain(arrays[0]), axis))
            return as_partial(func(*_plain_all(args), **_plain_all(kwargs)))
        return func(*_plain_all(args), **_plain_all(kwargs))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> np.ndarray:  # type: ignore[override]
        if self.size and not any(self.strides):
            # dask's moment_chunk casts its count (one value everywhere) to int64: a
            # broadcast again, not a fresh map per chunk. Read-only like the count itself.
            one = _first(self).astype(dtype, *args, **kwargs)
            return as_partial(np.broadcast_to(one.reshape(()), self.shape))
        if np.dtype(dtype) == self.dtype and not self.flags.writeable:
            # a read-only partial cast to its own dtype (the NaN-aware counts dask's
            # moment_chunk casts to int64): nothing can write to either, so no copy
            return self
        return super().astype(dtype, *args, **kwargs)

    def copy(self, order: str = "C") -> np.ndarray:  # type: ignore[override]
        # dask's ``finalize`` copies a single-chunk result: hand back numpy's own type
        return np.array(self.view(np.ndarray), order=order, copy=True)

    def __reduce__(self):
        # a partial shipped to another worker arrives as a plain array (no stacking there)
        return self.view(np.ndarray).__reduce__()


@functools.cache
def _moment_chunk_code() -> Any:
    from dask.array import reductions

    func = reductions.moment_chunk
    return getattr(func, "__wrapped__", func).__code__


def _called_from_moment_chunk() -> bool:
    """True when the ufunc being answered was called by dask's ``moment_chunk`` itself."""
    frame = sys._getframe(2)  # 0: here, 1: __array_ufunc__, 2: the operator's caller
    return frame is not None and frame.f_code is _moment_chunk_code()


@functools.cache
def _divide_codes() -> tuple[Any, frozenset]:
    from dask.array import reductions

    def code(func: Any) -> Any:
        return getattr(getattr(func, "__wrapped__", func), "__code__", None)

    moments = frozenset({code(reductions.moment_combine), code(reductions.moment_agg)})
    return code(reductions.divide), moments


def _dividing_for_mu() -> bool:
    """True inside dask's ``mu = divide(total, n)`` of its moment combine or aggregate.

    Only that quotient is left lazy: it is the first ``divide`` of partials there (``mu`` is
    not bound yet), and it only enters ``divide(totals, ns) - mu``. The aggregate's final
    ``divide(M, denominator)``, made once ``mu`` exists, stays a plain array.
    """
    divide, moments = _divide_codes()
    frame = _caller(divide, 5)  # via numpy_compat's dtype-casting divide or numpy's own
    if frame is None:
        return False
    frame = frame.f_back
    return frame is not None and frame.f_code in moments and "mu" not in frame.f_locals


def _caller(code: Any, depth: int) -> Any:
    """The nearest of our ``depth`` callers running ``code`` (a code object), or None."""
    frame = sys._getframe(2)  # 0: here, 1: the check asking
    for _ in range(depth):
        if frame is None or frame.f_code is code:
            return frame
        frame = frame.f_back
    return None


@functools.cache
def _moment_helper_code() -> Any:
    from dask.array import reductions

    func = reductions._moment_helper
    return getattr(func, "__wrapped__", func).__code__


def _scratch_for_sum(inputs: tuple[Any, ...]) -> Any:
    """The input that ``a + b`` may overwrite, or None.

    Only inside dask's ``_moment_helper``, where both operands are stack sums made just
    before its ``+``: an input qualifies when
    it is one of those (:data:`_SCRATCH` marks them), writeable, and of the sum's dtype and
    shape.
    """
    a, b = inputs
    if not (isinstance(a, SumPartial) and isinstance(b, SumPartial) and a.shape == b.shape):
        return None
    if _caller(_moment_helper_code(), 4) is None:
        return None
    dtype = np.result_type(a, b)
    for part in (a, b):
        if getattr(part, _SCRATCH, False) and part.flags.writeable and part.dtype == dtype:
            return part
    return None


def _partials_only(inputs: tuple[Any, ...], out: Any) -> bool:
    shape = getattr(out, "shape", None)
    return all((isinstance(i, SumPartial) and i.shape == shape) or np.ndim(i) == 0 for i in inputs)


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
            if isinstance(p, PartialStack):
                out.extend(p.leaves())
            else:
                out.append(p if isinstance(p, LazyPart) else np.asarray(p))
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
            parts = [
                p.dense() if isinstance(p, PartialStack) else plain(materialize(p))
                for p in self.parts
            ]
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
        if func in SUMS and len(args) == 1 and args[0] is self:
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
        return _apply(AsType(dtype, kwargs), [self], self)

    def __getitem__(self, index: Any) -> Any:
        # ``Ms[..., k]`` picks along the last axis, which is never a stacked one
        if (
            isinstance(index, tuple)
            and index[:1] == (Ellipsis,)
            and all(isinstance(i, int | np.integer | slice) for i in index[1:])
            and all(a < self.ndim - (len(index) - 1) for a in self.axes)
        ):
            return PartialStack([materialize(p)[index] for p in self.parts], self.axis)
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
    # recorded, not run: a sum over the stack evaluates the steps tile by tile
    parts = []
    for k, part in enumerate(ref.parts):
        args = [i.parts[k] if isinstance(i, PartialStack) else i for i in inputs]
        if isinstance(part, PartialStack):
            parts.append(_apply(func, args, part))
        else:
            args = [a if isinstance(a, LazyPart) else plain(a) for a in args]
            shape = np.broadcast_shapes(*(np.shape(a) for a in args))
            parts.append(LazyPart(func, args, shape))
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
    acc = _constant_sum(leaves, rdtype, skipna) if keepdims else None
    if acc is None and FUSE:
        acc = fused_sum(leaves, first.shape, rdtype, skipna)
    if acc is None:
        acc = np.empty(first.shape, rdtype)
        for tile in tile_slices(first.shape):
            _add_tile(acc, tile, leaves, rdtype, skipna)
    if keepdims:
        # a combine step's result: the next level (or dask's aggregate) stacks it in turn
        out = as_partial(acc)
        if isinstance(out, SumPartial):
            setattr(out, _SCRATCH, True)
        return out
    acc = acc.reshape(tuple(n for i, n in enumerate(acc.shape) if i not in axes))
    return acc[()] if acc.ndim == 0 else acc


def _add_tile(acc, tile, leaves, rdtype, skipna) -> None:
    # in part order, like numpy's reduction over the concatenated axis; inputs are left
    # alone. Tile by tile, so the result tile and the parts' temporaries stay in cache.
    out = acc[tile]
    first = _valid(value_at(leaves[0], tile), skipna)
    if len(leaves) == 1:
        np.copyto(out, first, casting="unsafe")
        return
    # the first add writes the result tile: one pass less than copying the first part
    second = _valid(value_at(leaves[1], tile), skipna)
    np.add(first, second, out=out, dtype=rdtype, casting="unsafe")
    for leaf in leaves[2:]:
        np.add(out, _valid(value_at(leaf, tile), skipna), out=out, dtype=rdtype, casting="unsafe")


def _constant_sum(leaves, rdtype, skipna) -> np.ndarray | None:
    """The sum of parts that each hold one value everywhere (dask's counts), broadcast."""
    if not all(
        isinstance(leaf, np.ndarray) and leaf.size and not any(leaf.strides) for leaf in leaves
    ):
        return None
    # read-only, like the counts it adds: a combine step only divides by it and stacks it
    values = [_valid(_first(leaf), skipna) for leaf in leaves]
    total = values[0].astype(rdtype, casting="unsafe")
    for value in values[1:]:  # one after another, like the tile path
        total = np.add(total, value, dtype=rdtype, casting="unsafe")
    return np.broadcast_to(total.reshape(()), leaves[0].shape)


def _first(a: np.ndarray) -> np.ndarray:
    """The first value of ``a`` as a 1-element array (``reshape(-1)`` would copy a broadcast)."""
    return plain(a)[(slice(0, 1),) * a.ndim].reshape(1)


def _valid(leaf: np.ndarray, skipna: bool) -> np.ndarray:
    leaf = plain(leaf)
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


def plain(obj: Any) -> Any:
    """A partial or stack as the plain array numpy would see (stacks concatenated)."""
    if isinstance(obj, SumPartial):
        return obj.view(np.ndarray)
    if isinstance(obj, PartialStack):
        return obj.dense()
    return obj


def plain_nested(obj: Any, leaf: Any = None) -> Any:
    """``leaf`` (default :func:`plain`) of every item of nested lists, tuples and dicts."""
    leaf = plain if leaf is None else leaf
    if isinstance(obj, list | tuple):
        return type(obj)(plain_nested(o, leaf) for o in obj)
    if isinstance(obj, dict):
        return {k: plain_nested(v, leaf) for k, v in obj.items()}
    return leaf(obj)


def _plain_all(obj: Any) -> Any:
    return plain_nested(obj)
