"""Eager reads of small regions (stamps, spectra) without a dask graph.

``hdu.section[index]`` takes any basic index (ints, slices with steps, Ellipsis, None) and
returns native physical values. Local files are read through one read-only mapping of the
HDU's data block per process: the strided view touches only the pages holding the region, and
the decode kernel gathers and converts in one pass.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dfits._lazy import kernels
from dfits.io.ranges import bounding

__all__ = ["Section", "forget"]

_maps: dict[Any, np.ndarray] = {}
_lock = threading.Lock()


def forget(token: Any) -> None:
    """Drop this process's maps of the file with this source token (``FitsFile.close``)."""
    with _lock:
        for key in [key for key in _maps if key[0] == token]:
            del _maps[key]


class Section:
    """Index it like a numpy array to read that region now."""

    __slots__ = ("block",)

    def __init__(self, block: Any) -> None:
        self.block = block

    @property
    def shape(self) -> tuple[int, ...]:
        return self.block.shape

    @property
    def dtype(self) -> np.dtype:
        return self.block.spec.physical

    def _stored(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The whole data block, mapped once per process: its native unsigned N-d view, the
        flat view under it and the flat view's address."""
        block = self.block
        key = (block.source.token, block.offset, block.shape, block.spec.bitpix)
        entry = _maps.get(key)
        if entry is None:
            nbytes = int(np.prod(block.shape, dtype=object)) * block.spec.itemsize
            buf = block.source.map(block.offset, nbytes, populate=False)
            flat = buf.view(f"u{block.spec.itemsize}")
            u = as_strided(flat, block.shape, block.strides(), writeable=False)
            entry = (u, flat, flat.__array_interface__["data"][0])
            with _lock:
                if len(_maps) > 64:
                    _maps.clear()
                _maps[key] = entry
        return entry

    def _remote(self, index: Any) -> Any:
        """Read only the run of bytes covering ``index`` (remote sources), then slice it."""
        bound, rel = bounding(index, self.block.shape)
        shape = self.block.shape
        bound = tuple(bound) + (slice(None),) * (len(shape) - len(bound))
        region = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(bound, shape, strict=True))
        chunk = self.block.read(region)
        return chunk.u[rel]

    def __getitem__(self, index: Any) -> Any:
        items = index if isinstance(index, tuple) else (index,)
        for item in items:
            if not (isinstance(item, slice | int | np.integer) or item is Ellipsis or item is None):
                raise IndexError(
                    f"section takes basic indices (ints, slices, ..., None), not {item!r}; "
                    "use hdu.data for fancy indexing"
                )
        spec = self.block.spec
        if self.block.source.mappable:
            u, flat, addr = self._stored()
            view = u[index]
            rows = _rows_in(view, addr)
            if rows is not None:
                return kernels.decode_rows(flat, rows, spec).reshape(view.shape)
        else:
            view = self._remote(index)
        if not isinstance(view, np.ndarray):
            return kernels.decode(np.asarray(view).reshape(1), spec)[0]
        return kernels.decode(view, spec)


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
