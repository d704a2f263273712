"""xarray integration: the ``dfits`` backend engine and the ``.fits`` accessor.

Importing this package registers the accessor on ``xr.DataArray`` and ``xr.Dataset``;
the engine is found through the ``xarray.backends`` entry point.

>>> import xarray as xr, dfits.xarray
>>> ds = xr.open_dataset("cube.fits", engine="dfits")     # doctest: +SKIP
>>> ds["primary"].fits.moment(0).compute()                 # doctest: +SKIP
"""

from __future__ import annotations

from dfits.xarray.accessor import FitsDataArrayAccessor, FitsDatasetAccessor
from dfits.xarray.backend import DfitsBackendEntrypoint, open_hdu_dataset
from dfits.xarray.errors import RegionError, WCSError

__all__ = [
    "DfitsBackendEntrypoint",
    "FitsDataArrayAccessor",
    "FitsDatasetAccessor",
    "RegionError",
    "WCSError",
    "open_hdu_dataset",
]
