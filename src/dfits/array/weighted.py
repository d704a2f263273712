"""Weighted sums along one axis of a dask array: the one-pass core of moment maps.

Each block gives ``Σ I``, ``Σ I·w`` (and ``Σ I·w²``) over its stretch of the axis: blocks read
from a FITS file (:class:`~dfits.stored.stored.StoredChunk`) through the fused kernel on their
stored bytes, any other block (numpy, an in-memory cube) with numpy in float64. A dask
reduction then adds the per-block partials in place, so graphs, scheduling and memory stay
dask's.

Why this is not an entry of :data:`dfits.array.aggregations.AGGREGATIONS`: an entry's result
has the shape of the kept axes (``da.reduction`` declares it so), while this one has a new
leading axis of three sums that the moment maps (:mod:`dfits.cube.moments`, the CLI) take
apart; and its chunk step needs the weights of the block's stretch of the axis, handed in by
``da.blockwise`` beside the block. Making it three entries (``Σ I``, ``Σ I·w``, ``Σ I·w²``)
would cost three kernel passes per chunk instead of one (the kernel fills all three at once),
and a positional entry (as the arg reductions are) would still have to stack the three sums
after the reduction: the same graph, the same pass, under another name. So moment maps keep
this one function, which is the only other reduction entry of dfits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dfits._lazy import kernels
from dfits.stored import passes
from dfits.stored.cuts import CutValues
from dfits.stored.stored import StoredChunk

__all__ = ["weighted_sums"]


def weighted_sums(x: Any, axis: int, weights: np.ndarray, *, threshold: float | None = None) -> Any:
    """Return a dask array ``(3, *kept axes)``: ``Σ I``, ``Σ I·w`` and ``Σ I·w²``.

    Parameters
    ----------
    x : dask.array.Array
        Values ``I``; NaN (and BLANK, for FITS data) are left out of every sum.
    axis : int
        The axis summed over.
    weights : numpy.ndarray
        One weight per position along ``axis`` (float64).
    threshold : float, optional
        Values below it are left out too.
    """
    import dask.array as da

    (axis,) = kernels.normalize_axis(axis, x.ndim)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (x.shape[axis],):
        raise ValueError(f"weights must have shape ({x.shape[axis]},), not {w.shape}")
    wd = da.from_array(w, chunks=(x.chunks[axis],))
    ind = tuple(range(1, x.ndim + 1))
    parts = da.blockwise(
        _block_sums, (0, *ind),
        x, ind,
        wd, (ind[axis],),
        new_axes={0: 3},
        adjust_chunks={ind[axis]: 1},
        dtype=np.float64,
        meta=np.empty((0,) * (x.ndim + 1)),
        axis=axis, threshold=threshold,
    )  # fmt: skip
    # dask's own sum would copy every partial in its chunk step and concatenate them before
    # each combine (a 3 × 8 MiB partial per 128 MiB chunk of a 1k × 1k cube): add them in
    # place instead, one new array per combine.
    return da.reduction(
        parts, _keep, _add, axis=axis + 1, dtype=np.float64, concatenate=False,
        meta=np.empty((0,) * x.ndim), name="weighted-sums",
    )  # fmt: skip


def _keep(part: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    return part


def _add(parts: Any, axis: Any, keepdims: bool) -> np.ndarray:
    # a flat list (one reduced axis) of partials, or one partial when nothing needs combining
    if isinstance(parts, np.ndarray):
        parts = [parts]
    # One partial is passed on as is: tasks never write into their inputs.
    total = parts[0] if len(parts) == 1 else np.add(parts[0], parts[1])
    for part in parts[2:]:
        np.add(total, part, out=total)
    return total if keepdims else total.squeeze(axis=axis)


def _block_sums(block: Any, w: np.ndarray, *, axis: int, threshold: float | None):
    if _lower_cut(block):
        # x.where(x > t) (a cube's with_mask(lambda c: c > t)): the cut's closed float64 lower
        # bound is exactly the kernel's threshold (both compare the physical float64 value)
        lo = block.cut.band[0]
        threshold = lo if threshold is None else max(lo, threshold)
        block = block.chunk
    if isinstance(block, StoredChunk) and not block.decoded:
        # the stored pass (quantised tiles answer it from their integers)
        out = passes.weighted_sums(block, axis, w, threshold)
    else:
        # not from a file (loaded, computed, rechunked): no stored bytes to fuse over, so the
        # block is widened once to float64 as numpy's own nansum would accumulate it
        out = _numpy_sums(np.asarray(block, dtype=np.float64), axis, w, threshold)
    return np.expand_dims(out, axis + 1)


def _lower_cut(block: Any) -> bool:
    """``block`` is a stored chunk's values above a bound, NaN elsewhere, in a type that holds
    them exactly: what the kernel's threshold gives."""
    return (
        isinstance(block, CutValues)
        and block.nan_filled
        and block.cut.band[1] == np.inf
        and np.can_cast(block.chunk.dtype, block.dtype, "safe")
    )


def _numpy_sums(v: np.ndarray, axis: int, w: np.ndarray, threshold: float | None):
    with np.errstate(invalid="ignore"):
        keep = v >= threshold if threshold is not None else ~np.isnan(v)
    v = np.where(keep, v, 0.0)
    shape = [1] * v.ndim
    shape[axis] = w.size
    wb = w.reshape(shape)
    return np.stack([v.sum(axis=axis), (v * wb).sum(axis=axis), (v * (wb * wb)).sum(axis=axis)])
