"""A DataArray's values as a dask array, read through dfits' fused chunks when possible.

The contract: :func:`fused_dask` returns ``obj``'s values as a dask array. When ``obj`` is an
unmodified selection of a dfits HDU — its encoding names the file and HDU (``dfits_source``,
``dfits_hdu``), every dimension still carries its ``pixel_<dim>`` coordinate with evenly
stepped pixel indices, and the dtype is the HDU's — the array is ``hdu.data`` (or
``hdu.to_dask(reduce_axis=...)``, chunks planned for reducing along one dimension) sliced and
transposed like ``obj``: its chunks hold stored bytes and its reductions run the fused
kernels. Anything else is :func:`dfits.cube.lazy.as_dask`'s: its own dask array, its
in-memory values in one chunk, or chunked lazily (a backend array is never read whole).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import xarray as xr

from dfits.cube.axis_smooth import along_chunks
from dfits.cube.coords import pixel_picks
from dfits.cube.errors import WCSError
from dfits.cube.lazy import as_dask
from dfits.cube.wcs import pixel_coords
from dfits.xarray.files import open_file

__all__ = ["fused", "fused_dask"]


def fused_dask(obj: xr.DataArray, along: Hashable | None = None, whole: bool = False) -> Any:
    """``obj``'s values as a dask array, read through dfits' fused chunks when possible.

    ``along``: a dimension the caller will reduce over; file-backed data then get chunks
    planned for that reduction (:func:`dfits.array.chunks.reduction_chunks`), or, with
    ``whole``, chunks holding all of it (:func:`dfits.cube.axis_smooth.along_chunks`).
    """
    var = obj.variable
    if not var._in_memory and "dfits_source" in var.encoding:
        rebuilt = _rebuild(obj, along, whole)
        if rebuilt is not None:
            return rebuilt
    return as_dask(obj)


def fused(obj: xr.DataArray, along: Hashable | None = None, whole: bool = False) -> xr.DataArray:
    """``obj`` over :func:`fused_dask`'s array (encoding kept: it names the file, for the
    beam table and error messages): what the accessor hands :mod:`dfits.cube`."""
    return obj.copy(deep=False, data=fused_dask(obj, along, whole))


def _rebuild(obj: xr.DataArray, along: Hashable | None = None, whole: bool = False) -> Any:
    """``hdu.data`` indexed like ``obj``, or None when ``obj`` is not such a selection."""
    enc = obj.variable.encoding
    hdu = open_file(enc["dfits_source"], enc.get("dfits_storage_options"))[enc["dfits_hdu"]]
    pixels = pixel_coords(obj)
    naxis = len(hdu.shape)
    if set(pixels) != set(range(1, naxis + 1)) or hdu.dtype != obj.dtype:
        return None
    try:
        picks = pixel_picks(pixels)
    except WCSError:
        return None
    index, dims = [], []
    for axis in range(naxis, 0, -1):  # numpy order
        pick = picks[axis]
        if isinstance(pick, int):
            index.append(pick)
            continue
        start, step = pick
        dim = next(d for d in obj.dims if obj[f"pixel_{d}"].attrs.get("fits_axis") == axis)
        stop = start + step * obj.sizes[dim]
        index.append(slice(start, None if stop < 0 else stop, step))
        dims.append(dim)
    if set(dims) != set(obj.dims):
        return None
    if along is None:
        x = hdu.data
    else:
        # the FITS axis of ``along`` (FITS axis n is numpy axis naxis - n)
        fits_axis = obj[f"pixel_{along}"].attrs["fits_axis"]
        if whole:
            size = hdu.dtype.itemsize
            x = hdu.to_dask(along_chunks(hdu.shape, hdu.dtype, size, naxis - fits_axis))
        else:
            x = hdu.to_dask(reduce_axis=naxis - fits_axis)
    x = x[tuple(index)]
    order = [dims.index(d) for d in obj.dims]
    if order != sorted(order):
        x = x.transpose(order)
    return x if x.shape == obj.shape else None
