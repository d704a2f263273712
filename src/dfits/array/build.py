"""Dask arrays over an image's data block, built with dask's public ``from_array``.

The array-like handed to dask is an :class:`ImageBlock`: a frozen record of (source, data
offset, shape, decode spec) — a path and a few integers, so each pickled task stays tiny and
the graph holds no data, no open handle and no memmap. Its ``__getitem__`` maps exactly the
chunk's bytes and returns a :class:`~dfits.array.stored.StoredChunk` (or, for ``.raw``, the
big-endian stored values as a zero-copy numpy view).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dfits.array.stored import StoredChunk

__all__ = ["ImageBlock", "dask_array"]


@dataclass(frozen=True)
class ImageBlock:
    """The data block of one image HDU, addressable by slices of its numpy shape."""

    source: Any
    offset: int
    shape: tuple[int, ...]
    spec: Any
    raw: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.spec.stored if self.raw else self.spec.physical

    def strides(self) -> tuple[int, ...]:
        """C-order byte strides of the stored array."""
        item = self.spec.itemsize
        out = []
        acc = item
        for n in reversed(self.shape):
            out.append(acc)
            acc *= max(n, 1)
        return tuple(reversed(out))

    def region(self, index: tuple[slice, ...]) -> tuple[int, int, tuple[int, ...], bool]:
        """Byte offset and length of the run covering ``index``, its shape, and density."""
        strides = self.strides()
        starts, counts = [], []
        for sl, n in zip(index, self.shape, strict=True):
            start, stop, step = sl.indices(n)
            if step != 1:
                raise ValueError("chunk slices must have step 1")
            starts.append(start)
            counts.append(max(stop - start, 0))
        if math.prod(counts) == 0:
            return self.offset, 0, tuple(counts), True
        first = sum(s * st for s, st in zip(starts, strides, strict=True))
        last = sum((s + c - 1) * st for s, c, st in zip(starts, counts, strides, strict=True))
        nbytes = last - first + self.spec.itemsize
        dense = nbytes == math.prod(counts) * self.spec.itemsize
        return self.offset + first, nbytes, tuple(counts), dense

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, tuple):
            index = (index,)
        index = index + (slice(None),) * (self.ndim - len(index))
        start, nbytes, counts, dense = self.region(index)
        buf = self.source.map(start, nbytes, populate=dense)
        view_dtype = np.dtype(f"u{self.spec.itemsize}")
        if nbytes == 0:
            u = np.empty(counts, view_dtype)
        else:
            # Zero-copy: the stored bytes stay where the mmap put them; kernels swap in
            # registers. Strides are the file's, so a chunk split along inner axes is a
            # strided view of the covering run rather than a gathered copy.
            flat = buf.view(view_dtype)
            u = as_strided(flat, counts, self.strides(), writeable=False)
        if self.raw:
            return u.view(self.spec.stored)
        return StoredChunk(u, self.spec)


def dask_array(block: ImageBlock, chunks: tuple[tuple[int, ...], ...], name: str):
    """Return the lazy dask array of ``block`` with explicit ``chunks`` and dask ``name``."""
    import dask.array as da

    from dfits.array.dispatch import register_dask_hooks

    register_dask_hooks()
    meta = np.empty((0,) * block.ndim, dtype=block.dtype)
    return da.from_array(
        block,
        chunks=chunks,
        name=name,
        lock=False,
        asarray=False,
        fancy=False,
        meta=meta,
        inline_array=False,
    )
