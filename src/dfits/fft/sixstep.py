"""One axis of an FFT as a dask graph: direct, six-step or Bluestein (see :mod:`.plan`).

Six-step, for ``N = N1 * N2`` along ``axis`` (``n = N2 * n1 + n2``, ``k = k1 + N1 * k2``)::

    X[k1 + N1 k2] = sum_n2 W_N2^(n2 k2) · W_N^(n2 k1) · sum_n1 W_N1^(n1 k1) x[N2 n1 + n2]

1. split the axis into ``(N1, N2)``: each input chunk is whole rows (a reshape per block);
2. transpose so each block holds whole columns; FFT them (length ``N1``) and twiddle;
3. transpose so each block holds whole rows; FFT them (length ``N2``): ``Z[k1, k2]``;
4. natural order: swap the two axes, transpose so rows are whole again, merge them.

``order="transposed"`` stops after step 3 and returns the split axes ``(N1, N2)`` with
``Z[..., k1, k2, ...] == X[k1 + N1 * k2]``: two passes over the data instead of three.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from dfits.fft import blocks
from dfits.fft.plan import Split, plan_length
from dfits.fft.transpose import _tile, goes_to_disk, store_path, transpose

__all__ = ["Options", "along"]


@dataclass(frozen=True)
class Options:
    """How big a block may be, when transposes go to disk and where, which order to return."""

    block_bytes: int
    memory_limit: int
    scratch: str | Path | None = None
    natural: bool = True


def along(
    x: da.Array, axis: int, *, inverse: bool, factor: float, dtype: np.dtype, opts: Options
) -> da.Array:
    """The unnormalised FFT of ``x`` along ``axis`` times ``factor``, in ``dtype``.

    With ``opts.natural`` false the axis comes back split in two (see the module docstring).
    """
    n = x.shape[axis]
    chunked = len(x.chunks[axis]) > 1 and x.size > 0
    max_line = max(2, opts.block_bytes // dtype.itemsize)
    split = plan_length(n, max_line, chunked=chunked, prefer=_tile(x.chunks[axis]))
    if split.method == "sixstep":
        return _sixstep(x, axis, split, inverse, factor, dtype, opts)
    if split.method == "bluestein":
        y = _bluestein(x, axis, split, inverse, factor, dtype, opts)
    else:
        y = _direct(x, axis, inverse, factor, dtype, opts)
    return y if opts.natural else _split(y, axis, 1)


def _limit(x: da.Array, dtype: np.dtype, opts: Options) -> int:
    """A block budget in ``x``'s bytes such that its transform in ``dtype`` fits the budget."""
    return max(1, opts.block_bytes * x.dtype.itemsize // max(dtype.itemsize, x.dtype.itemsize))


def _whole(x: da.Array, full: int, auto: int, limit: int) -> dict[int, Any]:
    """Chunks making axis ``full`` one chunk, ``auto`` sized to the budget; the other axes keep
    theirs unless even one line of blocks would pass the budget."""
    others = [i for i in range(x.ndim) if i not in (full, auto)]
    spec: dict[int, Any] = {full: -1, auto: "auto"}
    line = x.shape[full] * prod(max(x.chunks[i], default=1) for i in others)
    if line * x.dtype.itemsize > limit:
        spec.update(dict.fromkeys(others, "auto"))
    return spec


def _move(
    x: da.Array,
    spec: dict[int, Any],
    limit: int,
    opts: Options,
    *,
    first: bool = False,
    release: tuple[str, ...] = (),
    chain: str = "",
) -> tuple[da.Array, tuple[str, ...]]:
    """``x`` transposed to ``spec`` and the scratch store it went through (none in memory);
    ``release``: stores of this chain that ``x`` has read in full, deleted after the write;
    ``chain``: which transform's chain of stores this is (see :func:`transpose`)."""
    # The first transpose may hold the caller's blocks: dfits stored chunks, whose pieces a
    # task rechunk decodes straight into the blocks the FFT transforms (one pass over the
    # stored bytes, no decoded copy). P2P would first decode each shard into a copy of its
    # own (it needs buffers, which a Python class can export only from Python 3.12), so
    # that one runs as tasks.
    y = transpose(
        x,
        spec,
        memory_limit=opts.memory_limit,
        block_bytes=limit,
        scratch=opts.scratch,
        method="tasks" if first else None,
        release=release,
        chain=chain,
    )
    if not goes_to_disk(x, y.chunks, opts.memory_limit):
        return y, ()
    return y, (store_path(x, y.chunks, opts.scratch, chain),)


def _direct(x, axis, inverse, factor, dtype, opts) -> da.Array:
    store: tuple[str, ...] = ()
    if len(x.chunks[axis]) > 1:
        limit = _limit(x, dtype, opts)
        spec = {i: "auto" for i in range(x.ndim) if i != axis} | {axis: -1}
        chain = tokenize("direct", inverse, factor, dtype.str)
        x, store = _move(x, spec, limit, opts, first=True, chain=chain)
    return x.map_blocks(
        blocks.lines,
        axis=axis,
        inverse=inverse,
        ctype=dtype,
        factor=factor,
        workers=_workers(x),
        overwrite=bool(store),
        meta=_meta(x, dtype),
    )


def _workers(x: da.Array) -> int:
    """Threads per block for a pass over ``x``: the cores its blocks would leave idle (one
    big chunk transformed directly would otherwise run on one core)."""
    return max(1, (os.cpu_count() or 1) // max(1, x.npartitions))


def _meta(x: da.Array, dtype: np.dtype, ndim: int | None = None) -> np.ndarray:
    return np.empty((0,) * (x.ndim if ndim is None else ndim), dtype=dtype)


def _split(x: da.Array, axis: int, n2: int) -> da.Array:
    chunks = (
        *x.chunks[:axis],
        tuple(c // n2 for c in x.chunks[axis]),
        (n2,),
        *x.chunks[axis + 1 :],
    )
    return x.map_blocks(
        blocks.split_axis,
        axis=axis,
        n2=n2,
        chunks=chunks,
        new_axis=axis + 1,
        meta=_meta(x, x.dtype, x.ndim + 1),
    )


def _merge(x: da.Array, axis: int) -> da.Array:
    width = x.shape[axis + 1]
    index = tuple(range(x.ndim))
    # blockwise without concatenation: ``axis + 1`` is one chunk, and map_blocks' drop_axis
    # would join that one block with itself first (a copy of the whole result)
    return da.blockwise(
        blocks.merge_axes,
        index[: axis + 1] + index[axis + 2 :],
        x,
        index,
        axis=axis,
        concatenate=False,
        adjust_chunks={axis: lambda c: c * width},
        dtype=x.dtype,
        meta=_meta(x, x.dtype, x.ndim - 1),
    )


def _aligned(x: da.Array, axis: int, n2: int, limit: int) -> da.Array:
    """``x`` with every inner chunk boundary along ``axis`` a multiple of ``n2`` (whole rows)
    and no chunk over ``limit`` bytes: the input's own chunks may be far bigger than a block
    (dask's default is 128 MiB), and every later pass inherits the first pass' blocks."""
    others = prod(max(c, default=1) for i, c in enumerate(x.chunks) if i != axis)
    most = max(1, limit // (n2 * others * x.dtype.itemsize))
    longest = max(x.chunks[axis])
    if _tile(x.chunks[axis]) % n2 == 0 and longest <= most * n2:
        return x
    rows = min(most, max(1, round(longest / n2)))
    return x.rechunk({axis: rows * n2}, method="tasks")  # the caller's blocks: see _move


def _sixstep(x, axis, split: Split, inverse, factor, dtype, opts) -> da.Array:
    n1, n2 = split.n1, split.n2
    limit = _limit(x, dtype, opts)
    y = _split(_aligned(x, axis, n2, limit), axis, n2)
    # each store is deleted by the next one's barrier: at most two exist at once
    # a block read back from a scratch store is its task's own: transformed in place
    # the stores are this transform's own: another of the same input (inverse, transposed
    # order) releases them at other points, and dask may run both at once (see transpose)
    chain = tokenize("sixstep", n1, n2, inverse, factor, dtype.str, opts.natural)
    y, store = _move(y, _whole(y, axis, axis + 1, limit), limit, opts, first=True, chain=chain)
    y = y.map_blocks(
        blocks.columns,
        axis=axis,
        n=n1 * n2,
        inverse=inverse,
        ctype=dtype,
        overwrite=bool(store),
        meta=_meta(y, dtype),
    )
    y, store = _move(
        y,
        _whole(y, axis + 1, axis, opts.block_bytes),
        opts.block_bytes,
        opts,
        release=store,
        chain=chain,
    )
    y = y.map_blocks(
        blocks.lines,
        axis=axis + 1,
        inverse=inverse,
        ctype=dtype,
        factor=factor,
        overwrite=bool(store),
        meta=_meta(y, dtype),
    )
    if not opts.natural:
        return y
    y = y.swapaxes(axis, axis + 1)
    y, _ = _move(
        y,
        _whole(y, axis + 1, axis, opts.block_bytes),
        opts.block_bytes,
        opts,
        release=store,
        chain=chain,
    )
    return _merge(y, axis)


def _bluestein(x, axis, split: Split, inverse, factor, dtype, opts) -> da.Array:
    """Length-``n`` DFT as a chirp convolution of length ``m`` (six-step inside)::

    X[k] = c[k] · sum_j (x[j] c[j]) conj(c[k - j]),   c[j] = exp(∓iπ j²/n)
    """
    n, m = split.n, split.m
    inner = Split("sixstep", m, split.n1, split.n2, m)
    natural = Options(opts.block_bytes, opts.memory_limit, opts.scratch, natural=True)
    line = [None] * x.ndim
    line[axis] = slice(None)
    c = da.map_blocks(
        blocks.chirp,
        n=n,
        inverse=inverse,
        ctype=dtype,
        chunks=(x.chunks[axis],),
        meta=_meta(x, dtype, 1),
    )
    a = (x * c[tuple(line)]).astype(dtype)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, m - n)
    a = da.pad(a, pad)
    kernel = da.map_blocks(
        blocks.kernel,
        n=n,
        m=m,
        inverse=inverse,
        ctype=dtype,
        chunks=(a.chunks[axis],),
        meta=_meta(x, dtype, 1),
    )
    fa = _sixstep(a, axis, inner, False, 1.0, dtype, natural)
    fb = _sixstep(kernel, 0, inner, False, 1.0, dtype, natural)
    conv = _sixstep(fa * fb[tuple(line)], axis, inner, True, 1.0 / m, dtype, natural)
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, n)
    return (conv[tuple(index)] * (c[tuple(line)] * dtype.type(factor))).astype(dtype)
