"""xarray integration: the ``dfits`` backend engine and the ``.fits`` accessor.

Importing this package registers the accessor on ``xr.DataArray`` and ``xr.Dataset``. The
engine is found through the ``xarray.backends`` entry point
(``dfits.xarray.backend:DfitsBackendEntrypoint``); loading it imports this package first, so
``engine="dfits"`` users get ``.fits`` without importing anything. The backend and the
accessor share the opener of :mod:`dfits.xarray.files` and never import each other.

>>> import xarray as xr, dfits.xarray
>>> ds = xr.open_dataset("cube.fits", engine="dfits")     # doctest: +SKIP
>>> ds["primary"].fits.moment(0).compute()                 # doctest: +SKIP
>>> many = xr.open_mfdataset(paths, combine_attrs=dfits.xarray.combine_attrs)  # doctest: +SKIP
>>> many.attrs["fits_filenames"]                           # doctest: +SKIP
"""

from __future__ import annotations

from dfits.cube.errors import RegionError, WCSError

# Registers the accessor: the entry point's module import runs this package first.
from dfits.xarray.accessor import FitsDataArrayAccessor, FitsDatasetAccessor
from dfits.xarray.backend import DfitsBackendEntrypoint, open_hdu_dataset
from dfits.xarray.combine import combine_attrs

__all__ = [
    "DfitsBackendEntrypoint",
    "FitsDataArrayAccessor",
    "FitsDatasetAccessor",
    "RegionError",
    "WCSError",
    "combine_attrs",
    "open_hdu_dataset",
]
