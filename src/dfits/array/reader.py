"""The reader seam: one protocol every data source implements, one place that makes dask arrays.

A **reader** is a small picklable record (a path or URL, offsets, a decode spec; never data
or an open handle) that, given a region of its array, returns that region's stored values
with their decode spec: a :class:`~dfits.array.stored.StoredChunk`. The spec says how to get
physical values (dtype, byte order, BSCALE/BZERO, BLANK, NaN rule), so the reductions never
know which reader fed them: an mmap of image bytes (:class:`~dfits.array.image.ImageReader`),
remote byte ranges, decoded tiles of a compressed image (native byte order) or the strided
field of a table column.

:func:`dask_array` turns a reader and a chunk plan into a dask array through dask's public
``from_array``, with a deterministic name the caller derives from the file's identity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dfits.array.hooks import register

if TYPE_CHECKING:
    import dask.array as da

__all__ = ["Reader", "dask_array"]


@runtime_checkable
class Reader(Protocol):
    """What dfits needs of a data source to make a lazy array of it."""

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape, in numpy axis order."""
        ...

    @property
    def dtype(self) -> np.dtype:
        """What ``read`` gives once decoded: the physical dtype (or the stored one, raw)."""
        ...

    def read(self, index: tuple[slice, ...]) -> Any:
        """The region ``index`` (one step-1 slice per axis, within the shape): a stored
        chunk, or a numpy array of values when the reader has nothing to defer."""
        ...


class _Regions:
    """The array-like handed to ``from_array``: normalises dask's chunk index to a region."""

    __slots__ = ("reader",)

    def __init__(self, reader: Reader) -> None:
        self.reader = reader

    shape = property(lambda self: tuple(self.reader.shape))
    dtype = property(lambda self: np.dtype(self.reader.dtype))
    ndim = property(lambda self: len(self.reader.shape))

    def __getitem__(self, index: Any) -> Any:
        # a worker process that reads a chunk registers dfits with its own dask (once)
        register()
        if not isinstance(index, tuple):
            index = (index,)
        index = index + (slice(None),) * (self.ndim - len(index))
        region = []
        for sl, n in zip(index, self.shape, strict=True):
            if not isinstance(sl, slice):
                raise TypeError(f"readers take slices, not {sl!r}")
            start, stop, step = sl.indices(n)
            if step != 1:
                raise ValueError("chunk slices must have step 1")
            region.append(slice(start, max(stop, start)))
        return self.reader.read(tuple(region))

    def __reduce__(self):
        return (_Regions, (self.reader,))


def dask_array(reader: Reader, chunks: tuple[tuple[int, ...], ...], name: str) -> da.Array:
    """The lazy dask array of ``reader`` with explicit ``chunks`` and dask ``name``.

    Each chunk task holds the reader and its region, and returns what ``read`` returns.
    """
    import dask.array as da

    register()
    meta = np.empty((0,) * len(reader.shape), dtype=reader.dtype)
    return da.from_array(
        _Regions(reader),
        chunks=chunks,
        name=name,
        lock=False,
        asarray=False,
        fancy=False,
        meta=meta,
        inline_array=False,
    )
