"""The values of one HDU cut into blocks, one write task each — dask or numpy alike.

The contract: :func:`as_blocks` takes what a caller writes (a dask array, a numpy array or
anything ``numpy.asarray`` takes) and returns a :class:`Blocks`: its shape, dtype and chunks,
and :meth:`Blocks.tasks`, the ``(block, starts)`` pairs for the write graph — a dask array's
own chunks (as ``Delayed`` blocks), a numpy array's contiguous slabs of about dask's
``array.chunk-size`` (:func:`~dfits.array.chunks.file_chunks`, views: no copy). A numpy array
never goes through ``dask.array``: importing it imports xarray, and a plain write must not.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Blocks", "as_blocks", "is_dask"]


def is_dask(data: Any) -> bool:
    """Whether ``data`` is a dask array (without importing dask.array: if it is not loaded,
    ``data`` cannot be one)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(data, da.Array)


@dataclass(frozen=True)
class Blocks:
    """A dask array or a numpy array, and the chunks its write tasks cover."""

    data: Any
    chunks: tuple[tuple[int, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.data.dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def rechunk(self, chunks: tuple[int, ...]) -> Blocks:
        """The same values in chunks of (at most) ``chunks`` elements per axis."""
        if is_dask(self.data):
            x = self.data.rechunk(chunks)
            return Blocks(x, x.chunks)
        return Blocks(self.data, _regular(self.shape, chunks))

    def tasks(self) -> list[tuple[Any, tuple[int, ...]]]:
        """``(block, starts)`` per chunk, in C order of the chunk grid."""
        offsets = [np.cumsum((0, *c[:-1])).tolist() for c in self.chunks]
        starts = [tuple(s) for s in itertools.product(*offsets)]
        if is_dask(self.data):
            blocks = self.data.to_delayed().ravel()
            return list(zip(blocks, starts, strict=True))
        sizes = itertools.product(*self.chunks)
        return [
            (self.data[tuple(slice(a, a + n) for a, n in zip(s, size, strict=True))], s)
            for s, size in zip(starts, sizes, strict=True)
        ]


def _regular(shape: tuple[int, ...], step: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    out = []
    for n, c in zip(shape, step, strict=True):
        c = max(1, min(c, n)) if n else 1
        full, rest = divmod(n, c)
        out.append((c,) * full + ((rest,) if rest else ()) or (0,))
    return tuple(out)


def as_blocks(data: Any, what: str) -> Blocks:
    """The values of one HDU (a 0-d array becomes 1 value long) and their chunks.

    >>> b = as_blocks(np.zeros((5, 3), "f4"), "x")
    >>> b.shape, b.chunks, [s for _, s in b.tasks()]
    ((5, 3), ((5,), (3,)), [(0, 0)])
    """
    if is_dask(data):
        x = data.reshape(1) if data.ndim == 0 else data
        if any(np.isnan(n) for n in x.shape):
            raise ValueError(
                f"{what}: the array's shape is unknown {x.shape}; compute_chunk_sizes()"
            )
        return Blocks(x, x.chunks)
    import dask
    from dask.utils import parse_bytes

    from dfits.array.chunks import file_chunks

    x = np.asarray(data)
    if x.ndim == 0:
        x = x.reshape(1)
    target = parse_bytes(dask.config.get("array.chunk-size"))
    return Blocks(x, file_chunks(x.shape, x.dtype.itemsize, target))
