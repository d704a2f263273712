"""A DataArray's values as a dask array, never read whole to find out.

The contract: :func:`as_dask` returns ``obj``'s own dask array when it has one (the xarray
adapter hands the cube functions DataArrays over dfits' fused chunks, so their reductions run
the kernels on the stored bytes), wraps in-memory values in one chunk, and chunks a lazily
indexed (backend) array without reading it: like the file where a selection left a dimension
whole, ``"auto"`` elsewhere.

Examples
--------
>>> import numpy as np, xarray as xr
>>> as_dask(xr.DataArray(np.arange(4.0), dims="x")).chunks
((4,),)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

__all__ = ["as_dask"]


def as_dask(obj: xr.DataArray) -> Any:
    """``obj``'s values as a dask array (see the module docstring)."""
    import dask.array as da

    if obj.chunks is not None:
        return obj.data
    var = obj.variable
    if var._in_memory:
        return da.from_array(np.asarray(obj.data), chunks=-1)
    # A lazily indexed (backend) array: ``obj.data`` would read all of it; chunk it instead.
    preferred = var.encoding.get("preferred_chunks", {})
    chunks = {
        d: c
        for d, c in preferred.items()
        if d in obj.dims and (isinstance(c, int) or sum(c) == obj.sizes[d])
    }
    return obj.chunk({d: chunks.get(d, "auto") for d in obj.dims}).data
