"""The reader seam: one protocol every data source implements, one place that makes dask arrays.

A **reader** is a small picklable record (a path or URL, offsets, a decode spec; never data
or an open handle) that, given a region of its array, returns that region's stored values
with their decode spec: a :class:`~dfits.stored.stored.StoredChunk`. The spec says how to get
physical values (dtype, byte order, BSCALE/BZERO, BLANK, NaN rule), so the reductions never
know which reader fed them: an mmap of image bytes (:class:`~dfits.array.image.ImageReader`),
remote byte ranges, decoded tiles of a compressed image (native byte order) or the strided
field of a table column.

A reader may also defer reading: its chunk then holds a :class:`PendingRegion` instead of
stored values (``StoredChunk(None, spec, pending)``), which says the chunk's shape, reads it
on demand (``fetch``) and narrows to a slice without reading (``narrow``), so that a slice
dask applies after the chunk task decides what is fetched. A pending region may also offer
the passes of :class:`dfits.stored.passes.FusedSource` (quantised tiles sum their integers).
That is the whole contract between readers and the reductions, which never import a reader.

:func:`dask_array` turns a reader and a chunk plan into a dask array through dask's public
``from_array``, with a deterministic name the caller derives from the file's identity.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dfits.stored import handlers
from dfits.stored.partials import PartialStack, SumPartial, concatenate_partials
from dfits.stored.recognised import install
from dfits.stored.stored import StoredChunk

if TYPE_CHECKING:
    import dask.array as da

__all__ = ["PendingRegion", "Reader", "dask_array", "register"]


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
        chunk (holding stored values, or a :class:`PendingRegion` not read yet), or a numpy
        array of values when the reader has nothing to defer."""
        ...


@runtime_checkable
class PendingRegion(Protocol):
    """A region a reader has not read yet, held by a stored chunk until a value is needed.

    Implemented by :class:`dfits.array.image.Pending` (remote byte ranges) and
    :class:`dfits.tiles.quantised.QuantisedTiles` (decoded integers of quantised tiles).
    """

    @property
    def shape(self) -> tuple[int, ...]:
        """The region's shape (the chunk's, without reading)."""
        ...

    def fetch(self) -> np.ndarray:
        """Read the region: the native unsigned view of its stored values (``StoredChunk.u``)."""
        ...

    def narrow(self, index: Any) -> PendingRegion | None:
        """The pending region of ``self[index]`` (a basic index), or None when it cannot stay
        pending: the chunk then fetches and slices the values."""
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


@functools.cache
def register() -> None:
    """Register stored chunks and partials with dask's public dispatch tables (once).

    ``numel``/``nannumel`` (the counts of dask's mean and variance steps) answer from the
    chunk; concatenation decodes each piece into its place (a single block stays stored);
    quantiles and ``to_numpy`` decode; sum partials concatenate into a lazy stack that a
    combine step's sum adds up (see :mod:`dfits.stored.partials`).
    """
    from dask.array.dispatch import (
        concatenate_lookup,
        nannumel_lookup,
        numel_lookup,
        percentile_lookup,
        to_numpy_dispatch,
    )

    install()

    def numel(x: StoredChunk, **kwargs: Any):
        if x.decoded:
            return numel_lookup(x.decode(), **kwargs)
        return handlers.count(x, False, **kwargs)

    def nannumel(x: StoredChunk, **kwargs: Any):
        if x.decoded:
            return nannumel_lookup(x.decode(), **kwargs)
        return handlers.count(x, True, **kwargs)

    numel_lookup.register(StoredChunk, numel)
    nannumel_lookup.register(StoredChunk, nannumel)
    concatenate_lookup.register(StoredChunk, _concatenate_chunks)
    percentile_lookup.register(
        StoredChunk, lambda a, q, *args, **kw: percentile_lookup(a.decode(), q, *args, **kw)
    )
    to_numpy_dispatch.register(StoredChunk, lambda x, **kw: x.copy())
    concatenate_lookup.register(SumPartial, concatenate_partials)
    concatenate_lookup.register(PartialStack, concatenate_partials)


def _concatenate_chunks(arrays: Any, axis: int = 0, out: Any = None) -> Any:
    arrays = list(arrays)
    if len(arrays) == 1 and out is None and isinstance(arrays[0], StoredChunk):
        # one block (map_blocks with drop_axis "concatenates" single blocks): keep it stored
        return arrays[0]
    # numpy dispatches to the stored chunks' handler, which decodes each piece into place
    return np.concatenate(arrays, axis=axis, out=out)
