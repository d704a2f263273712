"""The reduction table: numpy functions on stored chunks → fused kernels.

Each handler has numpy's signature and numpy's result semantics (dtype, NaN propagation,
``keepdims``), so dask's chunk/combine/aggregate steps cannot tell a stored chunk from a
decoded one. Sums of floating data are accumulated in float64 (more accurate than numpy's
float32 pairwise sum) and returned in the dtype dask asks for: its combine step would cast
float64 partials to that dtype before adding them anyway.

dask computes ``mean``/``var`` through ``numel``/``nannumel`` followed by ``sum``; we register
``numel``/``nannumel`` for stored chunks so that when dask's ``moment_chunk`` is the caller one
kernel pass yields ``(n, mean, M2)`` and the later ``sum((x - mean) ** 2)`` is answered from it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dfits import kernels
from dfits.array import partials
from dfits.array.argpartials import ArgPair, ArgValues, concatenate_pairs, wants_pair
from dfits.array.concat import concatenate_partials
from dfits.array.cuts import CutValues
from dfits.array.fused import shifted_m2
from dfits.array.nanmask import NanMask, NanZeroed, nan_zeroed
from dfits.array.partials import PartialStack, SumPartial, as_partial
from dfits.array.stored import Deviation, StoredChunk, called_from
from dfits.array.tiles import LazyPart, reshaped, tile_slices, value_at

__all__ = ["HANDLED", "HANDLED_DEVIATION", "HANDLED_MASK", "HANDLED_ZEROED", "register_dask_hooks"]

HANDLED: dict[Callable[..., Any], Callable[..., Any]] = {}
HANDLED_DEVIATION: dict[Callable[..., Any], Callable[..., Any]] = {}
HANDLED_MASK: dict[Callable[..., Any], Callable[..., Any]] = {}
HANDLED_ZEROED: dict[Callable[..., Any], Callable[..., Any]] = {}


def _implements(*funcs: Callable[..., Any], table: dict = HANDLED):
    def deco(impl):
        for f in funcs:
            table[f] = impl
        return impl

    return deco


def _shape_out(x: StoredChunk, axes: tuple[int, ...], keepdims: bool, value: np.ndarray):
    if keepdims:
        shape = tuple(1 if ax in axes else n for ax, n in enumerate(x.shape))
        return np.reshape(value, shape)
    return value


def _finish(value: np.ndarray, dtype: Any, out: Any) -> Any:
    if dtype is not None:
        value = np.asarray(value).astype(dtype, copy=False)
    if out is not None:
        out[...] = value
        return out
    return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value


def _stats(x: StoredChunk, axes: tuple[int, ...], skipna: bool, need_m2: bool):
    """Memoised ``(n, total, mean, M2)`` of a chunk.

    M2 is None unless asked for; with M2 the total is None until :func:`_total` needs it.
    """
    key = (axes, skipna)
    memo = x._memo.get(key)
    if memo is not None and (memo[3] is not None or not need_m2):
        return memo
    if need_m2:
        n, mean, m2 = kernels.moments(x.u, x.spec, axes, skipna=skipna)
        memo = (n, None, mean, m2)
    else:
        total, n = kernels.sum_count(x.u, x.spec, axes, skipna=skipna)
        memo = (n, total, None, None)
    x._memo[key] = memo
    return memo


def _total(x: StoredChunk, axes: tuple[int, ...], skipna: bool, dtype: Any = None):
    """The chunk's sums (float64, or float32 when ``dtype`` asks for it), memoised in float64.

    After the moments kernel they are ``n · mean``, worked out once, straight into the
    dtype dask asks for: a std map's chunk step otherwise fills a float64 map and then its
    float32 cast. NaN means (unskipped NaN) give NaN totals; empty slices sum to 0.
    """
    n, total, mean, m2 = _stats(x, axes, skipna, need_m2=False)
    if total is not None:
        return total
    narrow = dtype is not None and np.dtype(dtype) == np.float32
    total = np.empty(np.shape(mean), np.float32 if narrow else np.float64)
    with np.errstate(invalid="ignore"):
        np.multiply(mean, n, out=total, casting="unsafe")
    if not any(np.asarray(n).strides):  # one count everywhere (a broadcast, or 0-d)
        if total.size and np.asarray(n).flat[0] <= 0:
            total[...] = 0.0
    else:
        total[n <= 0] = 0.0
    if not narrow:
        x._memo[(axes, skipna)] = (n, total, mean, m2)
    return total[()] if total.ndim == 0 else total


def _sum(x, axis=None, dtype=None, out=None, keepdims=False, skipna=False, **_):
    axes = kernels.normalize_axis(axis, x.ndim)
    if kernels.is_integer_kind(x.spec):
        value = kernels.integer_sum(x.u, x.spec, axes)
    elif _narrow_partial(x, axes, dtype, skipna):
        # dask's combine step casts every partial to ``dtype`` before adding, so storing
        # it in ``dtype`` straight from the kernel loses nothing; for a partial as large as
        # a moment map it halves the fresh memory each chunk task fills (on this project's
        # VM page faults cost ~0.6 ms per fresh MiB, more than the arithmetic).
        value = kernels.sum_count(x.u, x.spec, axes, skipna=skipna, dtype=dtype, counts=False)[0]
    else:
        value = _total(x, axes, skipna, dtype)
    return _partial(_finish(_shape_out(x, axes, keepdims, value), dtype, out), keepdims, out)


def _partial(value: Any, keepdims: bool, out: Any) -> Any:
    # keepdims is how dask's chunk step calls us: mark large partials so that its combine
    # step adds them instead of concatenating them (see dfits.array.partials)
    return as_partial(value) if keepdims and out is None else value


def _narrow_partial(x: StoredChunk, axes: tuple[int, ...], dtype: Any, skipna: bool) -> bool:
    """True for a float32 sum not memoised yet (other dtypes cast a float64 partial)."""
    return dtype is not None and np.dtype(dtype) == np.float32 and (axes, skipna) not in x._memo


@_implements(np.sum)
def _np_sum(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return _sum(x, axis, dtype, out, keepdims, skipna=False, **kw)


@_implements(np.nansum)
def _np_nansum(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return _sum(x, axis, dtype, out, keepdims, skipna=True, **kw)


def _extreme(x, axis, out, keepdims, want_max, skipna, name):
    axes = kernels.normalize_axis(axis, x.ndim)
    if x.size == 0 or any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if _called_from("arg_chunk"):
        # dask's arg_chunk asks for the extremes, then for their indices: one indexed
        # pass gives both (the value-only kernel first and then the indexed one read the
        # chunk twice)
        val, idx, nanidx = _indexed(x, axes, want_max)
        # indexed kernel: idx is -1 where a slice has no valid value
        none_valid = idx < 0
        missing = none_valid | (nanidx >= 0 if not skipna else False)
        if keepdims and out is None and wants_pair(val):
            # the values dask's arg_chunk pairs with the indices: kept apart from them (and
            # combined part by part) instead of packed into a structured array
            val = _with_nan(val, missing, x, skipna, none_valid)
            return _shape_out(x, axes, keepdims, val).view(ArgValues)
    else:
        val, idx, nanidx = kernels.extrema(x.u, x.spec, axes, want_max=want_max, with_index=False)
        # value-only kernel: idx counts valid values, nanidx missing ones
        none_valid = idx == 0
        missing = none_valid | (nanidx > 0 if not skipna else False)
    val = _with_nan(val, missing, x, skipna, none_valid)
    return _finish(_shape_out(x, axes, keepdims, val), None, out)


def _with_nan(val, missing, x: StoredChunk, skipna: bool, none_valid):
    """The extremes with NaN where a slice has no valid value (or, unskipped, a NaN)."""
    if np.any(missing):
        val = val.astype(x.dtype, copy=True)
        val[missing] = np.nan
        if skipna and np.any(none_valid):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)
    return val


@_implements(np.min, np.amin)
def _np_min(x, axis=None, out=None, keepdims=False, **_):
    return _extreme(x, axis, out, keepdims, False, False, "minimum")


@_implements(np.max, np.amax)
def _np_max(x, axis=None, out=None, keepdims=False, **_):
    return _extreme(x, axis, out, keepdims, True, False, "maximum")


@_implements(np.nanmin)
def _np_nanmin(x, axis=None, out=None, keepdims=False, **_):
    return _extreme(x, axis, out, keepdims, False, True, "minimum")


@_implements(np.nanmax)
def _np_nanmax(x, axis=None, out=None, keepdims=False, **_):
    return _extreme(x, axis, out, keepdims, True, True, "maximum")


def _arg(x, axis, out, keepdims, want_max, skipna):
    if axis is not None and np.ndim(axis) != 0:
        raise TypeError("argmin/argmax take a single axis or None")
    axes = kernels.normalize_axis(axis, x.ndim)
    if x.size == 0:
        raise ValueError("attempt to get argmin of an empty sequence")
    # in dask's arg_chunk the indices are the pass's last use: the memoised maps are handed
    # over (and may be written in place) instead of copied
    own = called_from("arg_chunk", 3, 6)
    _, idx, nanidx = _indexed(x, axes, want_max)
    if own:
        x._memo.pop(("extrema", axes, want_max), None)
    if skipna:
        if np.any(idx < 0):
            if not own:
                raise ValueError("All-NaN slice encountered")
            # dask's nanarg chunk step would catch numpy's error and decode the chunk to
            # fill NaN with ∓inf, which gives index 0 for a slice of NaN (its value stays NaN,
            # and loses to any value in the combine): the same, without the decode
            np.copyto(idx, 0, where=idx < 0)
        res = idx
    elif own:
        first_nan = nanidx >= 0
        if np.any(first_nan):
            np.copyto(idx, nanidx, where=first_nan)
        res = idx
    else:
        res = np.where(nanidx >= 0, nanidx, idx)
    if keepdims:
        res = _shape_out(x, axes, True, res)
    return _finish(np.asarray(res, dtype=np.intp), None, out)


def _indexed(x: StoredChunk, axes: tuple[int, ...], want_max: bool):
    """Memoised ``(value, index, nan_index)`` of the chunk's extremes over ``axes``."""
    key = ("extrema", axes, want_max)
    memo = x._memo.get(key)
    if memo is None:
        memo = x._memo[key] = kernels.extrema(x.u, x.spec, axes, want_max=want_max)
    return memo


@_implements(np.argmin)
def _np_argmin(x, axis=None, out=None, keepdims=False, **_):
    return _arg(x, axis, out, keepdims, False, False)


@_implements(np.argmax)
def _np_argmax(x, axis=None, out=None, keepdims=False, **_):
    return _arg(x, axis, out, keepdims, True, False)


@_implements(np.nanargmin)
def _np_nanargmin(x, axis=None, out=None, keepdims=False, **_):
    return _arg(x, axis, out, keepdims, False, True)


@_implements(np.nanargmax)
def _np_nanargmax(x, axis=None, out=None, keepdims=False, **_):
    return _arg(x, axis, out, keepdims, True, True)


def _moment_stat(x, axis, dtype, out, keepdims, ddof, skipna, kind):
    axes = kernels.normalize_axis(axis, x.ndim)
    n, _, _, m2 = _stats(x, axes, skipna, need_m2=kind != "mean")
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "mean":
            value = np.where(n > 0, _total(x, axes, skipna) / np.maximum(n, 1), np.nan)
        else:
            value = m2 / np.maximum(n - ddof, 0)
            value = np.where(n - ddof > 0, value, np.nan)
            if kind == "std":
                value = np.sqrt(value)
    if dtype is None:
        dtype = x.dtype if x.dtype.kind == "f" else np.float64
    return _finish(_shape_out(x, axes, keepdims, value), dtype, out)


@_implements(np.mean)
def _np_mean(x, axis=None, dtype=None, out=None, keepdims=False, **_):
    return _moment_stat(x, axis, dtype, out, keepdims, 0, False, "mean")


@_implements(np.nanmean)
def _np_nanmean(x, axis=None, dtype=None, out=None, keepdims=False, **_):
    return _moment_stat(x, axis, dtype, out, keepdims, 0, True, "mean")


@_implements(np.var)
def _np_var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **_):
    return _moment_stat(x, axis, dtype, out, keepdims, ddof, False, "var")


@_implements(np.nanvar)
def _np_nanvar(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **_):
    return _moment_stat(x, axis, dtype, out, keepdims, ddof, True, "var")


@_implements(np.std)
def _np_std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **_):
    return _moment_stat(x, axis, dtype, out, keepdims, ddof, False, "std")


@_implements(np.nanstd)
def _np_nanstd(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **_):
    return _moment_stat(x, axis, dtype, out, keepdims, ddof, True, "std")


def _deviation_sum(d: Deviation, axis=None, dtype=None, out=None, keepdims=False, skipna=False):
    if d.power != 2:
        func = np.nansum if skipna else np.sum
        return func(d.materialize(), axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    x = d.chunk
    axes = kernels.normalize_axis(axis, x.ndim)
    if isinstance(x, CutValues) and not x.nan_filled:
        # the values inside a cut, zero elsewhere: the banded moments and the zeros, pooled
        n, mean, m2 = _with_zeros(*x.moments(axes), math.prod(x.shape[a] for a in axes))
    elif isinstance(x, CutValues):
        # the values inside a cut, NaN elsewhere: its banded moments; unskipped, a slice
        # with a value outside the cut sums to NaN
        n, mean, m2 = x.moments(axes)
        if not skipna:
            size = math.prod(x.shape[a] for a in axes)
            mean = np.where(n == size, mean, np.nan)
            n = np.broadcast_to(np.int64(size), np.shape(mean))
    else:
        n, _, mean, m2 = _stats(x, axes, skipna, need_m2=True)
    centre = d.centre
    if keepdims or np.ndim(centre) == x.ndim:
        if isinstance(centre, LazyPart):
            if math.prod(centre.shape) == np.size(mean):
                centre = reshaped(centre, np.shape(mean))
        elif np.size(centre) == np.size(mean):
            centre = np.reshape(centre, np.shape(mean))
    value = _shifted_m2(n, mean, m2, centre, dtype)
    if isinstance(x, StoredChunk) and d.keeps_nan and x.spec.is_float:
        _infinite_squares(x, axes, skipna, value)
    return _partial(_finish(_shape_out(x, axes, keepdims, value), dtype, out), keepdims, out)


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


def _infinite_squares(x: StoredChunk, axes: tuple[int, ...], skipna: bool, value) -> None:
    """Set the sums of squares that an infinite value makes infinite (numpy's ``inf``).

    ``M2 + n·mean²`` is NaN there (``inf - inf`` in the moments), and numpy's sum of
    ``(x - c) ** 2`` is ``inf`` unless a NaN is summed too. Only slices whose sum came out
    NaN are looked at, with the value-only extrema kernel, and only when there are any.
    """
    bad = np.isnan(value)
    if not bad.any():
        return
    top = kernels.extrema(x.u, x.spec, axes, want_max=True, with_index=False)
    low = kernels.extrema(x.u, x.spec, axes, want_max=False, with_index=False)
    # value-only extrema skip NaN; their third result counts the NaN values
    infinite = (np.isinf(top[0]) & (top[1] > 0)) | (np.isinf(low[0]) & (low[1] > 0))
    if not skipna:
        infinite &= np.asarray(top[2]) == 0
    value[bad & infinite] = np.inf


def _shifted_m2(n, mean, m2, centre, dtype) -> np.ndarray:
    """``Σ(x - c)² = M2 + n (mean - c)²``, the exact shift identity (c is dask's mean, so ≈ M2).

    Worked out in float64 tile by tile and stored once in ``dtype``: a map's chunk step
    otherwise fills a float64 map and then its cast, and fresh memory costs more than the
    arithmetic. NaN means stay NaN; empty slices sum to 0.
    """
    rdtype = np.dtype(np.float64 if dtype is None else dtype)
    counts = np.broadcast_to(n, np.shape(mean))
    if partials.FUSE and np.size(mean) * rdtype.itemsize >= partials.STACK_MIN_BYTES:
        # a map: one compiled pass (no per-tile numpy calls); small ones are not worth a
        # compilation
        value = shifted_m2(counts, np.asarray(mean), np.asarray(m2), centre, rdtype)
        if value is not None:
            return value
    value = np.empty(np.shape(mean), rdtype)
    if not isinstance(centre, LazyPart):
        centre = np.broadcast_to(centre, value.shape)
    for tile in tile_slices(value.shape):
        with np.errstate(invalid="ignore"):
            v = np.asarray(np.subtract(mean[tile], value_at(centre, tile), dtype=np.float64))
            np.multiply(v, v, out=v)
            np.multiply(v, counts[tile], out=v)
            np.add(v, m2[tile], out=v)
        v[counts[tile] <= 0] = 0.0
        value[tile] = v
    return value


@_implements(np.sum, table=HANDLED_DEVIATION)
def _dev_sum(d, axis=None, dtype=None, out=None, keepdims=False, **_):
    return _deviation_sum(d, axis, dtype, out, keepdims, skipna=False)


@_implements(np.nansum, table=HANDLED_DEVIATION)
def _dev_nansum(d, axis=None, dtype=None, out=None, keepdims=False, **_):
    return _deviation_sum(d, axis, dtype, out, keepdims, skipna=True)


# -- NaN masks and NaN-zeroed chunks (xarray's skipna sum and count) ------------------------


def _mask_count(m: NanMask, axis: Any, keepdims: bool) -> tuple[Any, tuple[int, ...]]:
    """Per-slice count of the mask's True values (int64), and the reduced axes."""
    x = m.chunk
    axes = kernels.normalize_axis(axis, x.ndim)
    size = math.prod(x.shape[a] for a in axes)
    if isinstance(x, CutValues) and not x.nan_filled:  # zeros outside the cut: no NaN
        shape = tuple(n for ax, n in enumerate(x.shape) if ax not in axes)
        value = np.broadcast_to(np.int64(size if m.valid else 0), shape)
    elif isinstance(x, CutValues):  # NaN outside the cut (x.where(x > t))
        valid = x.counts(axes)
        value = valid if m.valid else size - valid
    elif x.spec.has_missing and x.size:
        valid = _stats(x, axes, True, need_m2=False)[0]
        value = valid if m.valid else size - np.asarray(valid, dtype=np.int64)
    else:
        shape = tuple(n for ax, n in enumerate(x.shape) if ax not in axes)
        value = np.broadcast_to(np.int64(size if m.valid else 0), shape)
    return _shape_out(x, axes, keepdims, value), axes


@_implements(np.sum, np.nansum, table=HANDLED_MASK)
def _mask_sum(m, axis=None, dtype=None, out=None, keepdims=False, **_):
    value, _ = _mask_count(m, axis, keepdims)
    if dtype is None:  # numpy's: int64 for bool and small integers, else the mask's dtype
        dtype = np.zeros(0, m.dtype).sum().dtype
    value = _finish(value, dtype, out)
    return _partial(value, keepdims, out)


@_implements(np.count_nonzero, table=HANDLED_MASK)
def _mask_count_nonzero(m, axis=None, *, keepdims=False):
    value, _ = _mask_count(m, axis, keepdims)
    return _finish(value, np.intp, None)


@_implements(np.any, table=HANDLED_MASK)
def _mask_any(m, axis=None, out=None, keepdims=False, **_):
    value, _ = _mask_count(m, axis, keepdims)
    return _finish(np.asarray(value) > 0, None, out)


@_implements(np.all, table=HANDLED_MASK)
def _mask_all(m, axis=None, out=None, keepdims=False, **_):
    value, axes = _mask_count(m, axis, keepdims)
    size = math.prod(m.shape[a] for a in axes)
    return _finish(np.asarray(value) == size, None, out)


@_implements(np.where, table=HANDLED_MASK)
def _mask_where(condition, x=None, y=None):
    if x is None or y is None:
        return NotImplemented
    zeroed = nan_zeroed(condition, x, y)
    return NotImplemented if zeroed is None else zeroed


@_implements(np.sum, np.nansum, table=HANDLED_ZEROED)
def _zeroed_sum(z: NanZeroed, axis=None, dtype=None, out=None, keepdims=False, **_):
    x = z.chunk
    if isinstance(x, Deviation):  # NaN squares as 0: the skipping sum of squares
        return _deviation_sum(x, axis, dtype, out, keepdims, skipna=True)
    if isinstance(x, CutValues):
        axes = kernels.normalize_axis(axis, x.ndim)
        value = _shape_out(x, axes, keepdims, x.sums(axes, dtype or x.dtype))
        return _partial(_finish(value, dtype or x.dtype, out), keepdims, out)
    return _sum(x, axis, dtype, out, keepdims, skipna=True)


@_implements(np.concatenate)
def _np_concatenate(arrays, axis=0, out=None, **kwargs):
    decoded = [a.decode() if isinstance(a, StoredChunk) else np.asarray(a) for a in arrays]
    return np.concatenate(decoded, axis=axis, out=out, **kwargs)


# -- dask hooks -------------------------------------------------------------------------------


def _called_from_moment_chunk() -> bool:
    # dask's moment_chunk calls numel → sum → (x - mean) ** 2 → sum; knowing that we are
    # inside it lets one kernel pass produce all three. Anything else gets the cheaper kernel.
    return _called_from("moment_chunk")


def _called_from(name: str) -> bool:
    """True when a dask function ``name`` is among our caller's few nearest callers."""
    return called_from(name, 4, 4)  # 0: called_from, 1: here, 2: a handler, 3: its caller


def _count(x: StoredChunk, skipna: bool, **kwargs):
    axes = kernels.normalize_axis(kwargs.get("axis"), x.ndim)
    keepdims = kwargs.get("keepdims", False)
    dtype = kwargs.get("dtype", np.float64)
    if not skipna or not x.spec.has_missing:
        # every count is the same: a read-only broadcast, not a map of fresh memory per chunk
        # (dask only adds and divides by counts; a stack sum or concatenation copies them)
        shape = tuple(
            1 if ax in axes else n for ax, n in enumerate(x.shape) if keepdims or ax not in axes
        )
        count = np.asarray(int(np.prod([x.shape[a] for a in axes])), dtype=dtype)
        if _called_from_moment_chunk():
            _stats(x, axes, skipna, need_m2=True)
        return _partial(_finish(np.broadcast_to(count, shape), None, None), keepdims, None)
    moment = _called_from_moment_chunk()
    n = _stats(x, axes, True, need_m2=moment)[0]
    if moment and "dtype" not in kwargs:
        # moment_chunk casts the count to int64 at once: hand over the kernel's int64 counts,
        # read-only, so that the cast is a view (SumPartial.astype), not two fresh maps
        n = np.asarray(n).view()
        n.flags.writeable = False
        return _partial(_shape_out(x, axes, keepdims, n), keepdims, None)
    return _partial(_finish(_shape_out(x, axes, keepdims, n), dtype, None), keepdims, None)


def register_dask_hooks() -> None:
    """Register stored chunks with dask's dispatch tables (idempotent)."""
    from dask.array.dispatch import (
        concatenate_lookup,
        nannumel_lookup,
        numel_lookup,
        percentile_lookup,
        to_numpy_dispatch,
    )

    numel_lookup.register(StoredChunk, lambda x, **kw: _count(x, False, **kw))
    nannumel_lookup.register(StoredChunk, lambda x, **kw: _count(x, True, **kw))
    concatenate_lookup.register(StoredChunk, _concatenate_chunks)
    # quantiles need the values sorted: numpy's, on the decoded chunk
    percentile_lookup.register(
        StoredChunk, lambda a, q, *args, **kw: percentile_lookup(a.decode(), q, *args, **kw)
    )
    to_numpy_dispatch.register(StoredChunk, lambda x, **kw: x.decode())
    concatenate_lookup.register(SumPartial, concatenate_partials)
    concatenate_lookup.register(PartialStack, concatenate_partials)
    concatenate_lookup.register(ArgPair, concatenate_pairs)


def _concatenate_chunks(arrays, axis=0, out=None):
    arrays = list(arrays)
    if len(arrays) == 1 and out is None and isinstance(arrays[0], StoredChunk):
        # one block (map_blocks with drop_axis "concatenates" single blocks): keep it stored
        return arrays[0]
    decoded = [a.decode() if isinstance(a, StoredChunk) else np.asarray(a) for a in arrays]
    return np.concatenate(decoded, axis=axis, out=out)
