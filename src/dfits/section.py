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
        bound, rel = _bounding(index, self.block.shape)
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


def _bounding(index: Any, shape: tuple[int, ...]) -> tuple[tuple[slice, ...], tuple[Any, ...]]:
    """Split a basic index into step-1 bounding slices and the index relative to them.

    Examples
    --------
    >>> _bounding((3, slice(2, 10, 3)), (5, 20))
    ((slice(3, 4, None), slice(2, 9, None)), (0, slice(0, 7, 3)))
    """
    items = list(index) if isinstance(index, tuple) else [index]
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = len(shape) - (len(items) - 1 - items.count(None))
        items[at : at + 1] = [slice(None)] * fill
    bound, rel = [], []
    axis = 0
    for item in items:
        if item is None:
            rel.append(None)
            continue
        n = shape[axis]
        axis += 1
        if isinstance(item, slice):
            r = range(*item.indices(n))
            if len(r) == 0:
                bound.append(slice(0, 0))
                rel.append(slice(0, 0))
                continue
            lo, hi = min(r[0], r[-1]), max(r[0], r[-1]) + 1
            stop = r.stop - lo
            bound.append(slice(lo, hi))
            rel.append(slice(r.start - lo, stop if stop >= 0 else None, r.step))
        else:
            i = int(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis - 1} with size {n}")
            i %= n
            bound.append(slice(i, i + 1))
            rel.append(0)
    bound.extend(slice(None) for _ in range(len(shape) - axis))
    return tuple(bound), tuple(rel)
