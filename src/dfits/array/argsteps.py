"""Positions of extremes (``argmax``/``argmin`` and their ``nan`` forms): entries of the
aggregation table whose chunk step needs each block's place in the array.

An index is only meaningful with the block's place in the array, which a ``da.reduction``
chunk step is not told. So these entries are *positional* (:attr:`Aggregation.positional`):
:func:`positional_reduce` makes each block's partial with ``da.blockwise`` over the block and
one ``arange`` per axis (their blocks carry the global positions), and a ``da.reduction``
then combines the partials with the entry's combine and finalize, as for every other entry.
A partial is ``{"value", "index", "valid", "nan"}`` with the reduced axes kept: the extreme
of the valid values, its global index (flat over the reduced axes, C order, as numpy counts),
whether the slice had a valid value, and the global index of its first NaN (-1 where none).
Ties and NaNs go to the smaller global index, which is numpy's "first occurrence" whatever
order the blocks combine in. An all-NaN slice makes ``nanargmax``/``nanargmin`` raise, as
numpy's do, unless the option ``allnan`` gives the index it gets instead (a peak's position,
:func:`dfits.cube.moments.peak_position`, asks for -1: no padding channel, no second pass).
A stored chunk's partial comes from the memoised indexed kernel pass (the same pass its
maximum answers from).
"""

from __future__ import annotations

import functools
import math
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from dfits.stored import passes
from dfits.stored.stored import StoredChunk

if TYPE_CHECKING:
    import dask.array as da

__all__ = [
    "ARG_REDUCTIONS",
    "arg_chunk",
    "arg_combine",
    "arg_finalize",
    "flat_parts",
    "positional_reduce",
    "positional_steps",
]

#: name -> (wants the maximum, skips NaN)
ARG_REDUCTIONS = {
    "argmax": (True, False),
    "argmin": (False, False),
    "nanargmax": (True, True),
    "nanargmin": (False, True),
}


def positional_steps(
    shape: tuple[int, ...], agg: Any, axis: int | None = None, *, allnan: int | None = None
) -> tuple[tuple[int, ...], Any, Any, Any]:
    """The reduced axes and the chunk, combine and finish steps of the positional table entry
    ``agg`` over one ``axis`` or None (the flat index over the whole array, C order);
    ``allnan``: the index of an all-NaN slice (``nan`` forms only), which raises
    ``ValueError`` by default, as numpy does. The chunk step takes a block and its positions."""
    how = agg.name
    if allnan is not None:
        if not agg.skipna:
            raise TypeError(f"allnan is an option of nanargmax and nanargmin, not of {how}")
        allnan = operator.index(allnan)
    if axis is not None and np.ndim(axis) != 0:
        raise TypeError(f"{how} takes a single axis or None, not {axis!r}")
    ndim = len(shape)
    axes = tuple(range(ndim)) if axis is None else (int(axis) % max(ndim, 1),)
    if math.prod(shape) == 0:
        raise ValueError(f"attempt to get {how} of an empty sequence")
    first = functools.partial(agg.chunk, axes, tuple(shape))
    return axes, first, functools.partial(_combine, agg), functools.partial(_finish, agg, allnan)


def positional_reduce(x: da.Array, steps: Any, split_every: int | None = None) -> da.Array:
    """The graph of a positional request ``steps`` (:func:`positional_steps`, bound by
    :func:`dfits.array.aggregations.prepare`) over ``x``."""
    import dask.array as da

    ind = tuple(range(x.ndim))
    positions = [da.arange(n, chunks=(c,)) for n, c in zip(x.shape, x.chunks, strict=True)]
    pos_args = [a for i, p in enumerate(positions) for a in (p, (ind[i],))]
    parts = da.blockwise(
        steps.chunk, ind, x, ind, *pos_args, adjust_chunks=dict.fromkeys(steps.axes, 1),
        dtype=np.intp, meta=np.empty((0,) * x.ndim),
    )  # fmt: skip
    out_ndim = x.ndim if steps.keepdims else x.ndim - len(steps.axes)
    return da.reduction(
        parts, _keep, steps.aggregate, axis=steps.axes, combine=steps.combine,
        keepdims=steps.keepdims, dtype=np.intp, split_every=split_every, concatenate=False,
        meta=np.empty((0,) * out_ndim, np.intp), name=f"dfits-{steps.name}",
    )  # fmt: skip


def arg_chunk(want_max: bool, axes, shape, block, *positions) -> dict:
    """One block's partial (kept dims), indices made global from its positions."""
    offsets = [int(p[0]) if p.size else 0 for p in positions]
    if isinstance(block, StoredChunk) and not block.decoded:
        value, idx, nanidx = passes.indexed(block, axes, want_max)
    else:
        value, idx, nanidx = _numpy_indexed(np.asarray(block), axes, want_max)
    kept = tuple(1 if i in axes else n for i, n in enumerate(block.shape))
    local = [block.shape[a] for a in axes]
    total = [shape[a] for a in axes]
    offs = [offsets[a] for a in axes]
    return {
        "value": np.reshape(np.asarray(value), kept),
        "index": np.reshape(_global(np.asarray(idx), local, offs, total), kept),
        "valid": np.reshape(np.asarray(idx) >= 0, kept),
        "nan": np.reshape(_global(np.asarray(nanidx), local, offs, total), kept),
    }


def _global(idx: np.ndarray, local: list[int], offsets: list[int], total: list[int]):
    """Flat indices within a block's reduced axes as flat indices within the array's
    (-1, for none, stays -1)."""
    found = idx >= 0
    coords = np.unravel_index(np.where(found, idx, 0), local)
    shifted = tuple(c + o for c, o in zip(coords, offsets, strict=True))
    return np.where(found, np.ravel_multi_index(shifted, total), -1).astype(np.int64)


def _numpy_indexed(v: np.ndarray, axes, want_max: bool):
    """``(value, index, first NaN index)`` of an in-memory block, flat over ``axes``."""
    kept = [i for i in range(v.ndim) if i not in axes]
    flat = np.transpose(v, kept + list(axes)).reshape([v.shape[i] for i in kept] + [-1])
    if flat.dtype.kind != "f":
        idx = (np.argmax if want_max else np.argmin)(flat, axis=-1)
        return np.take_along_axis(flat, idx[..., None], -1)[..., 0], idx, np.full(idx.shape, -1)
    nan = np.isnan(flat)
    none = nan.all(axis=-1)
    filled = np.where(none[..., None], 0, flat)  # numpy's nanarg* refuse all-NaN slices
    idx = (np.nanargmax if want_max else np.nanargmin)(filled, axis=-1)
    value = np.take_along_axis(filled, idx[..., None], -1)[..., 0]
    nanidx = np.where(nan.any(axis=-1), np.argmax(nan, axis=-1), -1)
    return value, np.where(none, -1, idx), nanidx


def _keep(part: dict, axis, keepdims: bool, **_) -> dict:
    return part


def flat_parts(parts) -> list[dict]:
    """The partials of a (nested) list of them, flat."""
    if isinstance(parts, dict):
        return [parts]
    return [p for item in parts for p in flat_parts(item)]


def arg_combine(want_max: bool, a: dict, b: dict) -> dict:
    """The partial of two partials: the better valid extreme (ties to the smaller index)."""
    ahead = (b["value"] > a["value"]) if want_max else (b["value"] < a["value"])
    tie = (b["value"] == a["value"]) & (b["index"] < a["index"])
    take_b = b["valid"] & (~a["valid"] | ahead | tie)
    nan = np.where(a["nan"] < 0, b["nan"], np.where(b["nan"] < 0, a["nan"],
                   np.minimum(a["nan"], b["nan"])))  # fmt: skip
    return {
        "value": np.where(take_b, b["value"], a["value"]),
        "index": np.where(take_b, b["index"], a["index"]),
        "valid": a["valid"] | b["valid"],
        "nan": nan,
    }


def _combine(agg, parts, axis, keepdims: bool, **_) -> dict:
    return functools.reduce(agg.combine, flat_parts(parts))


def _finish(agg, allnan, parts, axis, keepdims: bool, **kw) -> np.ndarray:
    if kw.get("computing_meta"):
        return parts
    value = agg.finalize(_combine(agg, parts, axis, keepdims), 0, allnan=allnan)
    return value if keepdims else value.squeeze(axis=tuple(axis))


def arg_finalize(skipna: bool, p: dict, size: int, allnan: int | None = None, **_) -> np.ndarray:
    """The index of the extreme, or of the first NaN (numpy's, unless ``skipna``); with
    ``skipna``, ``allnan`` where a slice has no valid value (None: raise, as numpy)."""
    if skipna:
        if allnan is None and not np.all(p["valid"]):
            raise ValueError("All-NaN slice encountered")
        value = p["index"] if allnan is None else np.where(p["valid"], p["index"], allnan)
    else:
        value = np.where(p["nan"] >= 0, p["nan"], p["index"])  # numpy: the first NaN wins
    return np.asarray(value, dtype=np.intp)
