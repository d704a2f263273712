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

__all__ = ["Section"]

_maps: dict[Any, np.ndarray] = {}
_lock = threading.Lock()


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

    def _stored(self) -> np.ndarray:
        """Native unsigned view of the whole data block (mapped once per process)."""
        block = self.block
        key = (block.source.token, block.offset, block.shape, block.spec.bitpix)
        u = _maps.get(key)
        if u is None:
            nbytes = int(np.prod(block.shape, dtype=object)) * block.spec.itemsize
            buf = block.source.map(block.offset, nbytes, populate=False)
            flat = buf.view(f"u{block.spec.itemsize}")
            u = as_strided(flat, block.shape, block.strides(), writeable=False)
            with _lock:
                if len(_maps) > 64:
                    _maps.clear()
                _maps[key] = u
        return u

    def _remote(self, index: Any) -> Any:
        """Read only the run of bytes covering ``index`` (remote sources), then slice it."""
        bound, rel = bounding(index, self.block.shape)
        chunk = self.block[bound]
        return chunk.u[rel]

    def __getitem__(self, index: Any) -> Any:
        items = index if isinstance(index, tuple) else (index,)
        for item in items:
            if not (isinstance(item, slice | int | np.integer) or item is Ellipsis or item is None):
                raise IndexError(
                    f"section takes basic indices (ints, slices, ..., None), not {item!r}; "
                    "use hdu.data for fancy indexing"
                )
        if hasattr(self.block.source, "identity"):
            view = self._stored()[index]
        else:
            view = self._remote(index)
        spec = self.block.spec
        if not isinstance(view, np.ndarray):
            return kernels.decode(np.asarray(view).reshape(1), spec)[0]
        return kernels.decode(view, spec)
