"""Exact medians of dask arrays, lazily, in a fixed number of passes of bounded memory.

The contract: :func:`nanmedian` is ``numpy.nanmedian`` of a dask array, and
:func:`median_deviation` is ``nanmedian(|x - nanmedian(x)|)`` (astropy's
``median_absolute_deviation(..., ignore_nan=True)``), each a 0-d dask array computed on
``.compute()``, equal to numpy's in numpy's own arithmetic (float32 data: float32 median and
deviations; other kinds: float64). NaN is left out; no valid value gives NaN.

How: a rank's value is found from the order keys of the floats
(:mod:`dfits.kernels.histogram`), 16 key bits per pass over the chunks: a pass counts the
values per 16-bit slice among those whose higher bits are already known, and the cumulative
counts say which slice holds the rank. Two passes pin a float32 rank exactly, four a float64
one, whatever the values; the first pass also counts the valid values, which fixes the ranks.
Each counting task carries its block's own small graph (the array's, optimised and cut per
block) and computes it, so every pass reads a chunk, counts it and drops it: memory stays at a
chunk per thread plus ``2 × 65536`` counts per partial, never the array. (Passes sharing the
array's block keys would make dask hold every block until the last pass;
``dask.graph_manipulation.bind``, made for this, loses dependencies in dask 2026.8.)

Examples
--------
>>> import dask.array as da, numpy as np
>>> x = da.from_array(np.array([4.0, np.nan, 1.0, 3.0, 2.0]), chunks=2)
>>> float(nanmedian(x).compute())
2.5
>>> float(median_deviation(x).compute())
1.0
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import dask.array as da

__all__ = ["median_deviation", "nanmedian"]


@dataclass(frozen=True)
class _Search:
    """Where the search for the middle ranks stands after some passes.

    ``prefixes`` are the key bits above ``shift + 16`` known for each rank, ``ranks`` the
    ranks among the values under that prefix (None before the first pass counted them), ``n``
    the valid values (-1: not counted yet).
    """

    dtype: str
    centre: float | None = None
    shift: int = 0
    prefixes: tuple[int, ...] = (0, 0)
    ranks: tuple[int, ...] | None = None
    n: int = -1


def _floats(x: da.Array) -> da.Array:
    """``x`` as the float array numpy would take the median of (ints, float16: float64)."""
    if x.dtype.kind == "f" and x.dtype.itemsize in (4, 8):
        return x
    return x.astype(np.float64)


class _Block:
    """One block of an array as its own small graph, computed inside the task that counts it.

    Passes that shared the array's block keys would make dask keep every block in memory
    until the last pass; a block carried as data is read afresh by each pass and dropped.
    """

    __slots__ = ("graph", "key")

    def __init__(self, graph: dict, key: Any) -> None:
        self.graph, self.key = graph, key

    def __dask_tokenize__(self) -> Any:
        return ("dfits-block", self.key)  # dask names are hashes of what the block holds

    def counts(self, search: _Search) -> np.ndarray:
        from dask.local import get_sync

        from dfits.kernels.histogram import key_counts

        block = get_sync(self.graph, self.key)
        ut = np.uint32 if np.dtype(search.dtype).itemsize == 4 else np.uint64
        prefixes = np.array(search.prefixes, ut)
        total = None
        # A stored chunk decodes here (no pass over stored bytes counts keys yet), so it
        # decodes a slab of rows at a time: a whole decoded chunk per thread would add a
        # chunk's worth of memory per thread on top of the mapped bytes
        for rows in _slabs(block.shape, np.dtype(search.dtype).itemsize):
            v = np.asarray(block[rows], dtype=search.dtype)
            part = key_counts(v, search.centre, search.shift, prefixes)
            total = part if total is None else total + part
        return total


#: the bytes a counting pass decodes at once (a chunk is counted a slab at a time)
SLAB_BYTES = 8 * 2**20


def _slabs(shape: tuple[int, ...], itemsize: int) -> list[tuple[slice, ...]]:
    """Basic indexes that cut a block of ``shape`` into slabs along its first axis of about
    :data:`SLAB_BYTES` decoded (one slab for a 0-d or empty block)."""
    if not shape or 0 in shape:
        return [()]
    row = itemsize * int(np.prod(shape[1:], dtype=np.int64))
    step = max(1, SLAB_BYTES // max(row, 1))
    return [(slice(i, i + step),) for i in range(0, shape[0], step)]


def _blocks(x: da.Array) -> list[_Block]:
    """Every block of ``x`` as a :class:`_Block` (the array's graph, optimised, cut per key)."""
    import dask
    from dask.core import flatten
    from dask.optimization import cull

    (x,) = dask.optimize(x)
    graph = dict(x.__dask_graph__())
    return [_Block(cull(graph, [key])[0], key) for key in flatten(x.__dask_keys__())]


def _add(*parts: np.ndarray) -> np.ndarray:
    total = parts[0].copy()
    for part in parts[1:]:
        total += part
    return total


def _narrow(search: _Search, counts: np.ndarray) -> _Search:
    """The search after one more pass, whose counts per prefix are ``counts``."""
    if search.n == 0:
        return replace(search, shift=search.shift - 16)
    ranks, n = search.ranks, search.n
    if ranks is None:  # the first pass counted every valid value
        n = int(counts[0].sum())
        if n == 0:
            return replace(search, n=0, shift=search.shift - 16)
        ranks = ((n - 1) // 2, n // 2)
    new_ranks, prefixes = [], []
    for rank, prefix in zip(ranks, search.prefixes, strict=True):
        cum = np.cumsum(counts[search.prefixes.index(prefix)])
        slot = int(np.searchsorted(cum, rank, side="right"))
        new_ranks.append(rank - (int(cum[slot - 1]) if slot else 0))
        prefixes.append((prefix << 16) | slot)
    return replace(
        search, ranks=tuple(new_ranks), prefixes=tuple(prefixes), shift=search.shift - 16, n=n
    )


def _value(search: _Search) -> np.floating:
    """The median the finished ``search`` found, as numpy computes it (the mean of the two
    middle values in the data's type), or NaN."""
    from dfits.kernels.histogram import value_of

    dtype = np.dtype(search.dtype)
    if search.n == 0:
        return dtype.type(np.nan)
    return np.mean(np.array([value_of(k, dtype) for k in search.prefixes], dtype))


def _deviations(done: _Search) -> _Search:
    """The start of the search for the median of ``|x - median|``."""
    return _Search(done.dtype, float(_value(done)), shift=8 * np.dtype(done.dtype).itemsize - 16)


def _search(blocks: list[_Block], start: Any, itemsize: int) -> Any:
    """The delayed finished search from ``start`` (a delayed or plain :class:`_Search`)."""
    import dask

    search = start
    for _ in range(itemsize // 2):  # 16 key bits a pass
        parts = [dask.delayed(_Block.counts, pure=True)(b, search) for b in blocks]
        while len(parts) > 1:  # a tree of sums, as dask's own reductions combine
            parts = [dask.delayed(_add, pure=True)(*parts[i : i + 8])
                     for i in range(0, len(parts), 8)]  # fmt: skip
        search = dask.delayed(_narrow, pure=True)(search, parts[0])
    return search


def _start(x: da.Array) -> tuple[list[_Block], _Search]:
    x = _floats(x)
    if x.ndim == 0:
        x = x.reshape(1)
    return _blocks(x), _Search(x.dtype.str, shift=8 * x.dtype.itemsize - 16)


def nanmedian(x: da.Array) -> da.Array:
    """``numpy.nanmedian(x)`` over the whole of dask array ``x``, lazily (module docstring)."""
    import dask
    import dask.array as da

    blocks, start = _start(x)
    value = dask.delayed(_value, pure=True)(_search(blocks, start, _size(start)))
    return da.from_delayed(value, shape=(), dtype=start.dtype)


def median_deviation(x: da.Array) -> da.Array:
    """``nanmedian(|x - nanmedian(x)|)`` over the whole of ``x``, lazily (module docstring)."""
    import dask
    import dask.array as da

    blocks, start = _start(x)
    size = _size(start)
    centre = _search(blocks, start, size)
    spread = _search(blocks, dask.delayed(_deviations, pure=True)(centre), size)
    return da.from_delayed(dask.delayed(_value, pure=True)(spread), shape=(), dtype=start.dtype)


def _size(search: _Search) -> int:
    return np.dtype(search.dtype).itemsize
