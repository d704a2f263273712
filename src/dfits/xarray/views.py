"""HDU-like views of DataArrays, so the quick-look figures draw sliced or computed cubes.

The contract: an :class:`ArrayHDU` offers what the figures registered by :mod:`dfits.jupyter`
read from an HDU — ``data`` (a dask array), ``header``, ``shape``, ``dtype``, ``index``,
``name``, ``kind``, ``is_image`` and ``section[...]`` — over a dask array and a header; its
``section`` computes only the chunks an index touches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ArrayHDU", "DaskSection", "spectral_labels"]


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
        from dfits.array.scheduler import compute

        return np.asarray(compute(self.data[index])[0])


def spectral_labels(obj: Any) -> tuple[np.ndarray, str] | None:
    """(value per channel, ``"NAME [unit]"``) of ``obj``'s spectral coordinate, for the
    figures' titles; None when ``obj`` has no spectral dimension with a numeric coordinate."""
    from dfits.cube.errors import SpectralError
    from dfits.cube.spectral import spectral_dim

    try:
        dim = spectral_dim(obj)
    except SpectralError:
        return None
    if dim not in obj.coords or obj[dim].dtype.kind not in "fiu":
        return None
    coord = obj[dim]
    name = str(coord.attrs.get("ctype", dim)).split("-")[0] or str(dim)
    unit = str(coord.attrs.get("units", ""))
    values = np.asarray(coord.values, dtype=float)
    if unit == "Hz":  # radio cubes: GHz titles read better than 1e11 Hz
        values, unit = values / 1e9, "GHz"
    return values, f"{name} [{unit}]" if unit else name
