"""Eager reads of small regions (stamps, spectra) without a dask graph.

``hdu.section[index]`` takes any basic index (ints, slices with steps, Ellipsis, None) and
returns native physical values. One :class:`Section` serves every image reader: it checks
the index (the same rules and errors for every reader), reads through the reader's one seam,
:meth:`dfits.array.reader.Reader.read` of the step-1 region bounding the index (a compressed
image's reader decodes only the tiles that region meets, a stamp's tiles as one group), and
decodes the stored values with their spec (the same kernel, dtype and scaling for every
reader). Local plain images take one shortcut: one read-only mapping of the HDU's data block
per process, whose strided view touches only the pages holding the region, so that a
cut-out loop pays no ``mmap`` per stamp; the decode kernel gathers and converts in one pass.
That map has no read-ahead (``sparse``: a decimated plane maps its rows, not its plane); a
dense read (a whole plane) takes a second, plain map of the block, made when first needed.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dfits._lazy import kernels
from dfits.array.image import ImageReader
from dfits.io.ranges import bounding
from dfits.stored.stored import StoredChunk

__all__ = ["Section", "forget"]

_maps: dict[Any, np.ndarray] = {}
#: a read spanning less is sparse whatever its density (read-ahead has little to batch)
_DENSE_MIN = 1 << 20
_lock = threading.Lock()


def forget(token: Any) -> None:
    """Drop this process's maps of the file with this source token (``FitsFile.close``)."""
    with _lock:
        for key in [key for key in _maps if key[0] == token]:
            del _maps[key]


class Section:
    """Index it like a numpy array to read that region now.

    Parameters
    ----------
    block : dfits.array.reader.Reader
        The image's reader (not raw): a plain image's or a compressed image's.

    Examples
    --------
    >>> import numpy as np, dfits
    >>> from dfits.io.writer import ImageWriter
    >>> from tempfile import mkdtemp
    >>> path = mkdtemp() + "/s.fits"
    >>> with ImageWriter(path, (3, 4), ">i2", [("BZERO", 32768)]) as out:  # unsigned
    ...     out.write((np.arange(12) - 32768).astype(np.int16).reshape(3, 4))
    >>> dfits.open(path)[0].section[1:, ::-2]
    array([[ 7,  5],
           [11,  9]], dtype=uint16)
    """

    __slots__ = ("block",)

    def __init__(self, block: Any) -> None:
        self.block = block

    @property
    def shape(self) -> tuple[int, ...]:
        return self.block.shape

    @property
    def dtype(self) -> np.dtype:
        return self.block.spec.physical

    def _stored(self, sparse: bool) -> tuple[np.ndarray, np.ndarray, int]:
        """The whole data block, mapped once per process and kind: its native unsigned N-d
        view, the flat view under it and the flat view's address.

        Two kinds, as one map has one advice for all its pages: the ``sparse`` map (no
        read-ahead) serves stamps, spectra and decimated planes, whose scattered pages would
        each bring megabytes of read-ahead with them; the plain map (made at the first
        dense read) serves whole planes and wide windows, which read-ahead batches.
        """
        block = self.block
        key = (block.source.token, block.offset, block.shape, block.spec.bitpix, sparse)
        entry = _maps.get(key)
        if entry is None:
            nbytes = int(np.prod(block.shape, dtype=object)) * block.spec.itemsize
            buf = block.source.map(block.offset, nbytes, populate=False, sparse=sparse)
            flat = buf.view(f"u{block.spec.itemsize}")
            u = as_strided(flat, block.shape, block.strides(), writeable=False)
            entry = (u, flat, flat.__array_interface__["data"][0])
            with _lock:
                if len(_maps) > 64:
                    _maps.clear()
                _maps[key] = entry
        return entry

    def _region(self, index: tuple) -> tuple[Any, Any]:
        """The stored values at ``index`` and their spec (None: values already), read
        through the reader seam as the step-1 region bounding ``index``; a stepped index of
        a compressed image through its reader's ``gather``, which decodes only the tiles
        holding a selected pixel (a decimated quick look need not decode every tile)."""
        window = _window(index, self.block.shape)
        if window is not None:  # a stamp: the region itself, read as it is
            chunk = self.block.read(window)
            if isinstance(chunk, StoredChunk):
                return chunk.u, chunk.spec
            return np.asarray(chunk), None
        bound, rel = bounding(index, self.block.shape)
        gather = getattr(self.block, "gather", None)
        stepped = any(isinstance(r, slice) and r.step not in (None, 1) for r in rel)
        if gather is not None and stepped:
            picks = _picks(bound, rel, self.block.shape)
            if all(len(p) for p in picks):
                chunk = gather(picks)
                rel = tuple(r if r is None else slice(None) if isinstance(r, slice) else 0
                            for r in rel)  # fmt: skip
                if isinstance(chunk, StoredChunk):
                    return chunk.u[rel], chunk.spec
                return np.asarray(chunk)[rel], None
        chunk = self.block.read(bound)
        if isinstance(chunk, StoredChunk):
            return chunk.u[rel], chunk.spec
        return np.asarray(chunk)[rel], None

    def __getitem__(self, index: Any) -> Any:
        index = _basic(index, len(self.block.shape))
        spec = self.block.spec
        if isinstance(self.block, ImageReader) and self.block.source.mappable:
            u, flat, addr = self._stored(sparse=True)
            view = u[index]
            if _dense(view):
                u, flat, addr = self._stored(sparse=False)
                view = u[index]
            rows = _rows_in(view, addr)
            if rows is not None:
                return kernels.decode_rows(flat, rows, spec).reshape(view.shape)
        else:
            view, spec = self._region(index)
            if spec is None:
                return view
            if isinstance(view, np.ndarray) and _as_stored(spec, view):
                # decoded tiles in native order, no scaling: the values are the bits as
                # they stand, so a copy is the decode (and no kernel is loaded for it)
                return np.array(view, order="C").view(spec.physical)
        if not isinstance(view, np.ndarray):
            return kernels.decode(np.asarray(view).reshape(1), spec)[0]
        return kernels.decode(view, spec)


def _as_stored(spec: Any, view: np.ndarray) -> bool:
    """True when decoding ``view`` with ``spec`` only reinterprets its bits: native order,
    no BSCALE/BZERO/BLANK, the physical type of the stored width."""
    return (
        spec.byteorder == "="
        and spec.mode == "raw"
        and getattr(spec, "error", None) is None
        and np.dtype(spec.physical).itemsize == view.itemsize
        and (spec.bitpix > 0) == (np.dtype(spec.physical).kind in "iu")
        and np.dtype(spec.physical).byteorder in "=|"
    )


def _window(index: tuple, shape: tuple[int, ...]) -> tuple[slice, ...] | None:
    """``index`` as the step-1 region it is, when it is one non-empty slice of step 1 per
    axis (a stamp): what :func:`~dfits.io.ranges.bounding` would give, with nothing left
    to apply after the read. None for anything else.

    >>> _window((slice(2, 5), slice(-3, None)), (10, 8))
    (slice(2, 5, None), slice(5, 8, None))
    """
    if len(index) != len(shape):
        return None
    out = []
    for item, n in zip(index, shape, strict=True):
        if type(item) is not slice or item.step not in (None, 1):
            return None
        lo, hi, _ = item.indices(n)
        if hi <= lo:
            return None
        out.append(slice(lo, hi))
    return tuple(out)


def _picks(bound: tuple, rel: tuple, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The indices each axis selects, from :func:`~dfits.io.ranges.bounding`'s split."""
    rel = [r for r in rel if r is not None]
    picks = []
    for axis, (b, n) in enumerate(zip(bound, shape, strict=True)):
        lo, hi = b.indices(n)[:2]
        r = rel[axis] if axis < len(rel) else slice(None)
        picks.append(np.arange(lo, hi, dtype=np.int64)[r if isinstance(r, slice) else [r]])
    return tuple(picks)


def _basic(index: Any, ndim: int) -> tuple:
    """``index`` as a tuple, checked to be a basic index of an ``ndim``-d array: ints (not
    booleans), slices, at most one Ellipsis, None; at most ``ndim`` of the ints and slices.
    Raises IndexError as numpy does, so every reader refuses the same indices alike."""
    items = index if isinstance(index, tuple) else (index,)
    used = 0
    for item in items:
        if isinstance(item, slice) or (
            isinstance(item, int | np.integer) and not isinstance(item, bool)
        ):
            used += 1
        elif item is not Ellipsis and item is not None:
            raise IndexError(
                f"section takes basic indices (ints, slices, ..., None), not {item!r}; "
                "use hdu.data for fancy indexing"
            )
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    return items


def _dense(view: Any) -> bool:
    """True for a view of at least :data:`_DENSE_MIN` bytes' span whose rows cover at
    least a quarter of the span's pages (a whole plane, a wide window, a decimation by 2),
    which read-ahead serves better than page-by-page faults."""
    if not isinstance(view, np.ndarray) or view.size == 0 or view.ndim == 0:
        return False
    span = view.itemsize + sum(
        abs(st) * (n - 1) for n, st in zip(view.shape, view.strides, strict=True)
    )
    if span < _DENSE_MIN:
        return False
    last = view.shape[-1]
    row = abs(view.strides[-1]) * (last - 1) + view.itemsize
    touched = view.size // last * min(row, last * 4096)  # a row's pages, at most
    return 4 * touched >= span


def _rows_in(view: Any, addr: int) -> tuple[int, int, int, int] | None:
    """Where a 1-D or 2-D view of the mapped block lies in its flat view, as decode rows.

    A stamp is rows of the block: finding them from the view's address is cheaper than
    building a flat view of each stamp (this is the per-stamp cost of a cut-out loop).
    None for anything else (N-d, empty, a stepped last axis), which takes the general path.
    """
    if not isinstance(view, np.ndarray) or view.ndim not in (1, 2) or view.size == 0:
        return None
    item = view.itemsize
    if view.shape[-1] > 1 and view.strides[-1] != item:
        return None
    off = (view.__array_interface__["data"][0] - addr) // item
    if view.ndim == 1:
        return 1, view.shape[0], off, 0
    return view.shape[0], view.shape[1], off, view.strides[0] // item
