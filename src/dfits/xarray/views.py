"""HDU-like views of DataArrays, so the quick-look figures draw sliced or computed cubes.

The contract: an :class:`ArrayHDU` offers what the figures registered by :mod:`dfits.jupyter`
read from an HDU — ``data`` (a dask array), ``header``, ``shape``, ``dtype``, ``index``,
``name``, ``kind``, ``is_image`` and ``section[...]`` — over a dask array and a header; its
``section`` computes only the chunks an index touches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ArrayHDU", "DaskSection"]


class ArrayHDU:
    """The few HDU attributes quick-look needs, over a dask array and a header."""

    is_image = True
    index = 0
    kind = "image"

    def __init__(self, data: Any, header: Any, name: str = "") -> None:
        self.data = data
        self.header = header
        self.name = name
        self.shape = tuple(data.shape)
        self.dtype = data.dtype
        self.section = DaskSection(data)


class DaskSection:
    """``section[...]`` over a dask array: only the chunks the index touches are computed."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __getitem__(self, index: Any) -> np.ndarray:
        return np.asarray(self.data[index].compute())
