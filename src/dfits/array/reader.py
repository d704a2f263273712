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
    """The array-like handed to ``from_array``: turns dask's chunk index into a region.

    dask fuses a slice of a chunk into the chunk's own getter when ``from_array`` is told the
    array takes any index (``fancy=True``), so ``column[a:b]`` reaches here as the index
    ``a:b`` rather than the whole chunk. Any index is therefore accepted: the reader reads
    the smallest step-1 region holding what it selects, and the rest of the index (steps,
    integers, lists) is applied to those values.
    """

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
        if len(index) > self.ndim or any(i is None or i is Ellipsis for i in index):
            # an index that adds or skips axes: read it all, numpy applies the index
            return self.reader.read(tuple(slice(0, n) for n in self.shape))[index]
        index = index + (slice(None),) * (self.ndim - len(index))
        pairs = [_bounds(i, n) for i, n in zip(index, self.shape, strict=True)]
        values = self.reader.read(tuple(region for region, _ in pairs))
        rest = tuple(r for _, r in pairs)
        if all(isinstance(r, slice) and r == slice(None) for r in rest):
            return values  # the common case: a whole chunk, kept as the reader made it
        return values[rest]

    def __reduce__(self):
        return (_Regions, (self.reader,))


def _bounds(index: Any, n: int) -> tuple[slice, Any]:
    """The step-1 region of an axis of length ``n`` that ``index`` selects from, and the
    index that selects the same values from that region."""
    if isinstance(index, slice):
        start, stop, step = index.indices(n)
        count = len(range(start, stop, step))
        if count == 0:
            return slice(start, start), slice(0, 0)
        if step == 1:
            return slice(start, stop), slice(None)
        last = start + (count - 1) * step
        lo, hi = min(start, last), max(start, last) + 1
        return slice(lo, hi), slice(start - lo, None, step)
    if isinstance(index, (int, np.integer)):
        i = int(index)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for an axis of length {n}")
        i %= n
        return slice(i, i + 1), 0
    picks = np.asarray(index)
    if picks.dtype.kind not in "iu" or picks.ndim != 1 or not picks.size:
        # booleans and anything unusual: the whole axis, the index as given
        return slice(0, n), index
    picks = np.where(picks < 0, picks + n, picks)
    if picks.min() < 0 or picks.max() >= n:
        raise IndexError(f"index {index!r} is out of bounds for an axis of length {n}")
    lo = int(picks.min())
    return slice(lo, int(picks.max()) + 1), picks - lo


def dask_array(
    reader: Reader, chunks: tuple[tuple[int, ...], ...], name: str, *, narrow: bool = False
) -> da.Array:
    """The lazy dask array of ``reader`` with explicit ``chunks`` and dask ``name``.

    Each chunk task holds the reader and its region, and returns what ``read`` returns.
    With ``narrow``, a slice of the array reads only what it selects: dask fuses the slice
    into the chunk's read (``x[a:b]`` reads rows ``a`` to ``b``, not their whole chunk).
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
        # fancy=True is what lets dask's optimisation fuse later slices into the read
        fancy=narrow,
        meta=meta,
        inline_array=False,
    )
