"""The index of a cube's world coordinates: label slices between two values, in either order.

The contract: :class:`WorldIndex` is xarray's :class:`~xarray.indexes.PandasIndex` except that
``.sel(dim=slice(a, b))`` keeps the values between ``a`` and ``b`` whatever the direction of the
axis. pandas (and so xarray) slice by position in the index: on a descending frequency axis, as
radio cubes often have, ``slice(lo, hi)`` finds nothing. Here the bounds are put in the axis's
order first, so ``slice(lo, hi)`` and ``slice(hi, lo)`` both give the channels between them, as
:func:`dfits.cube.spectral.spectral_slab` does. Anything else (a stepped slice, one bound,
labels, lists, ``method=``) is PandasIndex's. :func:`with_world_index` puts it on the numeric
dimension coordinates of a Dataset or DataArray (the ``dfits`` engine and
``with_spectral_unit`` do).

Examples
--------
>>> import numpy as np, xarray as xr
>>> a = xr.DataArray(np.arange(5.0), dims="freq", coords={"freq": [5.0, 4.0, 3.0, 2.0, 1.0]})
>>> a.sel(freq=slice(2, 4)).size
0
>>> with_world_index(a).sel(freq=slice(2, 4))["freq"].values
array([4., 3., 2.])
"""

from __future__ import annotations

from typing import Any, TypeVar

import xarray as xr
from xarray.indexes import PandasIndex

__all__ = ["WorldIndex", "with_world_index"]

T = TypeVar("T", xr.Dataset, xr.DataArray)


class WorldIndex(PandasIndex):
    """A PandasIndex whose two-bound label slices work in either order on either direction."""

    def sel(self, labels: dict[Any, Any], method: Any = None, tolerance: Any = None) -> Any:
        ordered = {k: _in_axis_order(self.index, v) for k, v in labels.items()}
        return super().sel(ordered, method=method, tolerance=tolerance)


def _in_axis_order(index: Any, label: Any) -> Any:
    """``label`` with its bounds swapped where they run against a monotonic ``index``."""
    if not isinstance(label, slice) or label.step is not None:
        return label
    if label.start is None or label.stop is None:
        return label
    try:
        rising = bool(label.start < label.stop)
    except TypeError:  # labels numpy cannot order: PandasIndex's error
        return label
    if label.start == label.stop:
        return label
    up, down = index.is_monotonic_increasing, index.is_monotonic_decreasing
    if (rising and down and not up) or (not rising and up and not down):
        return slice(label.stop, label.start)
    return label


def with_world_index(obj: T) -> T:
    """``obj`` with a :class:`WorldIndex` on each numeric 1-D dimension coordinate."""
    for name, coord in obj.coords.items():
        if coord.dims == (name,) and coord.dtype.kind in "fiu":
            obj = obj.drop_indexes(name).set_xindex(name, WorldIndex)
    return obj
