"""Small reductions computed now, without a dask graph: the same steps on the same chunks.

A one-shot script (open a file, ask for one sum) pays for ``dask.array`` before its first
chunk is read: importing it loads xarray, pandas, pyarrow and scipy, and dask's own scheduler
lookup imports ``distributed``. When the whole request is small (at most
:func:`limit` stored bytes, ``dask.config`` key ``dfits.eager-bytes``, 256 MiB by default),
:func:`reduce_hdu` computes it eagerly instead, on the one reduction route:

* the chunks are the dask array's own plan (``hdu.data``'s, or ``hdu.column(name)``'s), each
  read by the same reader call (``reader.read(region)``) that a dask chunk task makes;
* each block's partials come from the request's chunk step, then the combine and aggregate
  steps of :func:`dfits.array.aggregations.prepare` (the functions ``da.reduction`` is handed),
  in the order of dask's tree reduction (``split_every``, by default dask's ``split_every``
  setting, 4): the same operations on the same values in the same order, so results are
  bit for bit those of ``dfits.array.reduce(...).compute()`` (``tests/array/test_eager.py``
  compares every entry of the table);
* the blocks are read and reduced by a small thread pool (dask's ``num_workers``, else the
  CPU count): at most one chunk per thread is held, as with dask's threads.

Only :mod:`dask.config` is imported (for ``array.chunk-size``, which plans the chunks, and
the settings): neither ``dask.array`` nor ``distributed``. A request over the limit takes the
dask route (``hdu.data``, :func:`~dfits.array.aggregations.reduce`, computed through
:mod:`dfits.array.scheduler`), so either way the caller gets numpy values. Where dfits'
API promises a dask array (``hdu.data``, ``reduce``, ``hdu.aggregate``), it stays lazy and
dask's: wrapping an eager result in a dask array would import ``dask.array``, the very cost
this route avoids.

The dask tree's shape (which partials combine with which) is dask's ``_tree_reduce``; it is
mirrored in :func:`_tree` only, and the identity tests fail by name if a dask release
changes it.

>>> import numpy as np, dfits, tempfile, os
>>> from astropy.io import fits
>>> path = os.path.join(tempfile.mkdtemp(), "small.fits")
>>> fits.PrimaryHDU(np.arange(12, dtype=np.int16).reshape(3, 4)).writeto(path)
>>> reduce_hdu(dfits.open(path)[0], "sum")
array(66)
>>> reduce_hdu(dfits.open(path)[0], ["max", "mean"], axis=1)
[array([ 3,  7, 11], dtype=int16), array([1.5, 5.5, 9.5])]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from dfits.array.aggregations import Steps, prepare

__all__ = ["DEFAULT_LIMIT", "LIMIT_KEY", "Blocks", "limit", "reduce_hdu", "run"]

#: the ``dask.config`` key of the largest request (stored bytes) computed without a graph
LIMIT_KEY = "dfits.eager-bytes"
#: its default: a request this small takes well under a second of kernel time
DEFAULT_LIMIT = "256MiB"


def limit() -> int:
    """The most stored bytes a request may read to be computed eagerly (0: never).

    >>> import dask
    >>> with dask.config.set({"dfits.eager-bytes": "1 MiB"}):
    ...     limit()
    1048576
    """
    import dask
    from dask.utils import parse_bytes

    value = dask.config.get(LIMIT_KEY, DEFAULT_LIMIT)
    return int(parse_bytes(value) if isinstance(value, str) else value or 0)


@dataclass(frozen=True)
class Blocks:
    """A reader and its chunk plan (dask's ``chunks``): an array's blocks, without dask."""

    reader: Any
    chunks: tuple[tuple[int, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.reader.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.reader.dtype)

    @property
    def numblocks(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.chunks)

    @property
    def stored_bytes(self) -> int:
        """Bytes of stored values the blocks hold: at the stored width where the reader has a
        decode spec (images, tiles: their decoded integers), else at the values' width (a
        table column's physical values: an upper bound of its field bytes)."""
        spec = getattr(self.reader, "spec", None)
        itemsize = getattr(spec, "itemsize", None) or self.dtype.itemsize
        return math.prod(self.shape) * int(itemsize)

    def region(self, k: tuple[int, ...]) -> tuple[slice, ...]:
        """The region of block ``k``: what dask's chunk task asks the reader for."""
        starts = [sum(c[:i]) for c, i in zip(self.chunks, k, strict=True)]
        return tuple(slice(s, s + c[i]) for s, c, i in zip(starts, self.chunks, k, strict=True))


def run(
    blocks: Blocks,
    requests: Sequence[Steps],
    split_every: int | dict | None = None,
    threads: int | None = None,
) -> list[np.ndarray]:
    """Every request of ``requests`` over ``blocks``, each block read once for all of them.

    Returns one ndarray per request (0-d for a full reduction), as ``dask.compute`` of the
    same requests built by :func:`dfits.array.aggregations.reduce` gives them.
    """
    grid = blocks.numblocks
    where = any(s.positional for s in requests)

    def partials(k: tuple[int, ...]) -> list[dict]:
        region = blocks.region(k)
        block = blocks.reader.read(region)  # the chunk task's call: the same stored chunk
        # the positional entries take the block's global positions, as da.arange's blocks
        positions = tuple(np.arange(r.start, r.stop) for r in region) if where else ()
        return [s.partial(block, positions) for s in requests]

    keys = list(np.ndindex(*grid))
    workers = min(len(keys), threads or _threads())
    parts = [np.empty(grid, object) for _ in requests]
    if workers > 1:
        with ThreadPoolExecutor(workers, thread_name_prefix="dfits-eager") as pool:
            done = pool.map(partials, keys)  # each task holds one chunk while it runs
            _place(parts, keys, done)
    else:
        _place(parts, keys, map(partials, keys))
    return [_tree(p, s, split_every) for p, s in zip(parts, requests, strict=True)]


def _place(parts: list[np.ndarray], keys: list, done: Any) -> None:
    for k, got in zip(keys, done, strict=True):
        for grid, part in zip(parts, got, strict=True):
            grid[k] = part


def _threads() -> int:
    """dask's threads: its ``num_workers`` setting, else the CPU count."""
    import dask
    from dask.system import CPU_COUNT

    return int(dask.config.get("num_workers", None) or CPU_COUNT)


def _tree(parts: np.ndarray, steps: Steps, split_every: int | dict | None) -> np.ndarray:
    """The partials of a grid of blocks reduced as ``da.reduction`` reduces them: levels
    of ``combine`` over groups of ``split_every`` neighbouring blocks per reduced axis, then
    ``aggregate``; each group's partials in C order (dask's ``_tree_reduce`` and
    ``partial_reduce``, whose nested lists the steps flatten in that order)."""
    import dask

    axes = steps.axes
    split = split_every or dask.config.get("split_every", 4)
    if isinstance(split, dict):
        split = {k: split.get(k, 2) for k in axes}
    elif isinstance(split, Integral):
        split = dict.fromkeys(axes, max(int(split ** (1 / (len(axes) or 1))), 2))
    else:
        raise ValueError("split_every must be a int or a dict")
    depth = 1
    for i, n in enumerate(parts.shape):
        if i in split and split[i] != 1:
            depth = int(max(depth, math.ceil(math.log(n, split[i]))))
    for _ in range(depth - 1):
        parts = _partial(parts, split, lambda g: steps.combine(g, axis=axes, keepdims=True))
    out = _partial(parts, split, lambda g: steps.aggregate(g, axis=axes, keepdims=steps.keepdims))
    if not steps.keepdims:
        out = out.reshape([n for i, n in enumerate(out.shape) if i not in axes])
    return _join(out)


def _partial(parts: np.ndarray, split: dict, func: Callable[[list], Any]) -> np.ndarray:
    groups = [
        [range(a, min(a + split.get(i, 1), n)) for a in range(0, n, split.get(i, 1))]
        for i, n in enumerate(parts.shape)
    ]
    out = np.empty(tuple(len(g) for g in groups), object)
    for k in np.ndindex(*out.shape):
        members = itertools.product(*(groups[i][j] for i, j in enumerate(k)))
        out[k] = func([parts[m] for m in members])
    return out


def _join(grid: np.ndarray, axis: int = 0) -> np.ndarray:
    """The result blocks of a grid joined into one array (dask's final concatenation)."""
    if grid.ndim == 0:
        return grid[()]
    if grid.ndim == 1:  # iterating a 1-d object array gives the blocks themselves
        return np.concatenate(list(grid), axis=axis)
    return np.concatenate([_join(g, axis + 1) for g in grid], axis=axis)


def reduce_hdu(
    hdu: Any,
    how: str | Sequence[str],
    axis: int | tuple[int, ...] | None = None,
    *,
    column: str | None = None,
    keepdims: bool = False,
    split_every: int | None = None,
    band: tuple[float, float] | None = None,
    **options: Any,
) -> Any:
    """``how`` of an HDU's data (or of one ``column`` of a table), computed now.

    The values are those of ``dfits.array.reduce(hdu.data, how, axis, ...).compute()``, bit
    for bit. At most :func:`limit` stored bytes run eagerly (no graph, no ``dask.array``);
    a larger request is computed through dask (:mod:`dfits.array.scheduler`'s choice).

    Parameters
    ----------
    hdu : dfits.HDU
        An image or compressed-image HDU, or a table HDU with ``column``.
    how : str or sequence of str
        Keys of :data:`~dfits.array.aggregations.AGGREGATIONS`; several share each read.
    axis, keepdims, split_every, band, **options
        As :func:`dfits.array.aggregations.reduce` takes them.
    column : str, optional
        A table column (TTYPEn), chunked as ``hdu.column(column)``.

    Returns
    -------
    numpy.ndarray or list of numpy.ndarray
        One array per ``how`` (0-d for a full reduction), a list when ``how`` is.
    """
    hows = [how] if isinstance(how, str) else list(how)
    reader, chunks = hdu._plan(False) if column is None else hdu._column_plan(column)
    blocks = Blocks(reader, chunks)
    kw = {"keepdims": keepdims, "band": band, **options}
    requests = [prepare(blocks, h, axis, **kw) for h in hows]
    if blocks.stored_bytes <= limit():
        values = run(blocks, requests, split_every)
    else:
        from dfits.array.aggregations import reduce
        from dfits.array.scheduler import compute

        x = hdu.data if column is None else hdu.column(column)
        values = list(compute(*(reduce(x, h, axis, split_every=split_every, **kw) for h in hows)))
    return values[0] if isinstance(how, str) else values
