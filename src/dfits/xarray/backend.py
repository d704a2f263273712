"""The ``dfits`` xarray backend engine: ``xr.open_dataset("cube.fits")``.

A thin entry point in the rioxarray mould: it maps keywords onto :func:`dfits.open`, picks the
HDU and hands xarray lazily indexed backend arrays, as xarray's own backends do: the image as
an :class:`ImageArray` (each indexing reads just that region through ``hdu.section``), with
1-D world coordinates, ``pixel_<dim>`` indices and the header as ``attrs["fits_header"]``.
The 2-D sky coordinates are derived from those (:mod:`dfits.xarray.sky`: ``da.fits.sky_coords``)
and only put in the Dataset with ``sky_coords=True``, so that ``to_zarr``/``to_netcdf`` write
the data, not 2-D float64 arrays the header already defines. So with the
default ``chunks=None`` nothing is read at open, selections read their region, and ``.load()``
/ ``.compute()`` / ``.values`` give plain numpy arrays; with ``chunks=`` xarray builds the
dask array over :class:`ImageArray`, in dfits' planned chunks (``preferred_chunks``), each task
reading its region from the file.

xarray wraps what a backend returns in adapters whose ``.data`` and ``.load()`` are the same
call, so no backend array can be a dask array for reductions and numpy for ``.load()``; dfits'
fused kernels are reached through the ``.fits`` accessor instead (``moment``, ``spectrum``,
and ``.fits.chunk()``, which puts the DataArray over dfits' own dask chunks so that plain
xarray reductions run them). Data and coordinates hold a path, an HDU index and a header text —
never an open file — so datasets and their dask graphs pickle.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from dfits.cube.coords import WCSPlan, axis_values, parse_wcs, plan_axes, stokes_names
from dfits.cube.errors import WCSError
from dfits.cube.index import with_world_index
from dfits.errors import DfitsWarning, HDUNotFoundError, where
from dfits.format.headertext import readable_header
from dfits.xarray.files import open_file
from dfits.xarray.sky import sky_variables
from dfits.xarray.tables import table_dataset

__all__ = ["DfitsBackendEntrypoint", "ImageArray", "open_hdu_dataset"]

# whole-file compressed FITS is claimed too, so that opening it gives dfits' explanation
# (decompress it first) rather than xarray's "no backend matched"
_EXTENSIONS = (".fits", ".fit", ".fts", ".fz", ".fits.gz", ".fit.gz", ".fits.bz2", ".fits.z")
_MAGIC = b"SIMPLE  ="


class ImageArray(BackendArray):
    """The physical values of an image HDU, read region by region: xarray's lazy array.

    Holds the path, fsspec options and HDU index (the file is reopened through
    :func:`~dfits.xarray.files.open_file` where it is used, so it pickles to dask workers) and
    reads each basic-indexed region with ``hdu.section``: native numpy, NaN for BLANK.
    """

    def __init__(
        self,
        path: str,
        hdu: int,
        storage_options: dict | None,
        shape: tuple[int, ...],
        dtype: np.dtype,
    ) -> None:
        self.path = path
        self.hdu = hdu
        self.storage_options = storage_options
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        # Section takes ints and stepped slices; xarray turns outer and vectorized indexers
        # into those plus a numpy step on the (small) region read.
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._raw_getitem
        )

    def _raw_getitem(self, key: tuple) -> np.ndarray:
        hdu = open_file(self.path, self.storage_options)[self.hdu]
        return np.asarray(hdu.section[key])


def _select(f: Any, hdu: Any) -> Any:
    """The HDU asked for (an image or a table), or the first with image data; errors list
    what the file has."""
    if hdu is None:
        for h in f:
            if h.is_image and h.shape and np.prod(h.shape) > 0:
                return h
        raise HDUNotFoundError(
            f"{where(f.filename)}: no HDU holds image data; available: {f._names()}"
        )
    h = f[hdu] if isinstance(hdu, int | str) else f[tuple(hdu)]
    if h.is_table:
        return h
    if not (h.is_image and h.shape):
        raise HDUNotFoundError(
            f"{where(f.filename, h.index, h.name)}: {h.kind} HDU without image data; "
            f"available: {_with_data(f)}"
        )
    return h


def _with_data(f: Any) -> str:
    names = [f"{h.index}:{h.name or '-'} {h.shape}" for h in f if h.is_image and h.shape]
    names += [f"{h.index}:{h.name or '-'} table" for h in f if h.is_table]
    return ", ".join(names) or "none with image data"


def _header_text(h: Any) -> str:
    raw = h.header.tostring()
    return raw[: h.header.ncards * 80].decode("latin-1") + "END".ljust(80)


def _coords(plan: WCSPlan, wcs: Any, h: Any, text: str, chunks: dict, sky: bool) -> dict[str, Any]:
    shape = h.shape
    coords: dict[str, Any] = {}
    for axis, n in zip(plan.axes, shape, strict=True):
        coords[f"pixel_{axis.dim}"] = xr.Variable(
            axis.dim, np.arange(n), {"fits_axis": axis.fits_axis}
        )
        if axis.kind != "world":
            continue
        values = axis_values(wcs, axis.fits_axis, axis.world, n)
        unit = h.header.get(f"CUNIT{axis.fits_axis}")  # as written, e.g. 'm/s' not 'm / s'
        attrs = {"units": unit.strip() if isinstance(unit, str) else axis.units,
                 "ctype": axis.ctype}  # fmt: skip
        if axis.ctype.upper().startswith("STOKES"):
            attrs["stokes_codes"] = values.round().astype(int).tolist()
            del attrs["units"]
            # object strings: zarr v3 has no specification for fixed-width unicode and warns
            values = stokes_names(values).astype(object)
        coords[axis.dim] = xr.Variable(axis.dim, values, attrs)
    if sky and plan.lon is not None:
        x = next(a for a in plan.axes if a.dim == "x")
        y = next(a for a in plan.axes if a.dim == "y")
        ny, nx = shape[plan.dims.index("y")], shape[plan.dims.index("x")]
        ys, xs = np.arange(ny), np.arange(nx)
        coords.update(sky_variables(text, x.fits_axis, y.fits_axis, ys, xs, chunks))
    return coords


def _attrs(h: Any, text: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {"fits_hdu": h.index, "fits_extname": h.name}
    for key, name in (("BUNIT", "units"), ("BTYPE", "long_name"), ("OBJECT", "object")):
        value = h.header.get(key)
        if isinstance(value, str) and value.strip():
            attrs[name] = value.strip()
    # last: the short attributes above first in every repr
    attrs["fits_header"] = readable_header(text)
    return attrs


def open_hdu_dataset(
    path: str,
    hdu: Any = None,
    storage_options: dict | None = None,
    decode_wcs: bool = True,
    sky_coords: bool = False,
) -> xr.Dataset:
    """The Dataset of one HDU: an image (one data variable named after it, WCS coordinates;
    the 2-D sky coordinates too with ``sky_coords``) or a table (a ``row`` dimension, one
    variable per column)."""
    return _dataset(path, hdu, storage_options, decode_wcs, sky_coords, stacklevel=2)


def _dataset(
    path: str,
    hdu: Any,
    storage_options: dict | None,
    decode_wcs: bool,
    sky_coords: bool,
    stacklevel: int,
) -> xr.Dataset:
    """:func:`open_hdu_dataset`, its warnings ``stacklevel`` frames up (1: its caller)."""
    f = open_file(path, storage_options, stacklevel=stacklevel + 1)
    h = _select(f, hdu)
    if h.is_table:
        return table_dataset(path, h, storage_options, f.filename)
    text = _header_text(h)
    wcs = None
    if decode_wcs:
        try:
            wcs = parse_wcs(text)
        except WCSError as err:
            warnings.warn(
                f"{where(f.filename, h.index, h.name)}: WCS unusable, using pixel-index "
                f"dimensions ({err})",
                DfitsWarning,
                stacklevel=stacklevel + 1,
            )
    plan = plan_axes(wcs, len(h.shape))
    chunks = dict(zip(plan.dims, h.data.chunks, strict=True))
    coords = _coords(plan, wcs, h, text, chunks, sky_coords)
    # A lazily indexed backend array, as xarray's own backends hand over: xarray adds the dask
    # wrapping for chunks= (in these preferred chunks), and the accessor finds the file
    # through the encoding.
    data = ImageArray(path, h.index, storage_options, h.shape, h.dtype)
    var = xr.Variable(plan.dims, indexing.LazilyIndexedArray(data), _attrs(h, text))
    var.encoding.update(
        preferred_chunks=chunks,
        dfits_source=path,
        dfits_hdu=h.index,
        dfits_storage_options=storage_options,
    )
    name = (h.name or f"hdu{h.index}").lower()
    ds = xr.Dataset({name: var}, coords=coords, attrs={"fits_filename": f.filename})
    return with_world_index(ds)  # .sel(freq=slice(lo, hi)) on descending axes too


class DfitsBackendEntrypoint(BackendEntrypoint):
    """Open FITS images with dfits: lazy data, WCS dimensions and coordinates; or a table HDU
    (``hdu=`` naming it) as a Dataset with a ``row`` dimension (:mod:`dfits.xarray.tables`).

    Keywords: ``hdu`` (index, EXTNAME or (EXTNAME, EXTVER); default the first HDU with
    image data), ``storage_options`` (fsspec, for URLs), ``decode_wcs`` (False: pixel-index
    dimensions only), ``sky_coords`` (True: the 2-D ``ra``/``dec`` (``glon``/``glat``, ...)
    coordinates in the Dataset, lazy; by default ``da.fits.sky_coords`` gives them, so that
    ``to_zarr``/``to_netcdf`` do not compute and write them), ``drop_variables``.
    """

    description = "Open FITS images lazily with dfits (WCS coordinates, .fits accessor)"
    url = "https://github.com/dfits/dfits"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "hdu", "storage_options",
                               "decode_wcs", "sky_coords")  # fmt: skip

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Any = None,
        hdu: Any = None,
        storage_options: dict | None = None,
        decode_wcs: bool = True,
        sky_coords: bool = False,
    ) -> xr.Dataset:
        if not isinstance(filename_or_obj, str | os.PathLike):
            raise TypeError(
                f"the dfits engine opens paths and URLs, not {type(filename_or_obj).__name__}"
            )
        path = os.fspath(filename_or_obj)
        # warnings point at the user's xr.open_dataset call: this line, xarray's call of it,
        # then the user's line
        ds = _dataset(path, hdu, storage_options, decode_wcs, sky_coords, stacklevel=3)
        if drop_variables is not None:
            names = [drop_variables] if isinstance(drop_variables, str) else drop_variables
            ds = ds.drop_vars(names, errors="ignore")
        ds.set_close(None)  # dfits holds no handle that outlives a read
        return ds

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if not isinstance(filename_or_obj, str | os.PathLike):
            return False
        path = os.fspath(filename_or_obj)
        if path.lower().endswith(_EXTENSIONS):
            return True
        try:
            with open(path, "rb") as fh:
                return fh.read(len(_MAGIC)) == _MAGIC
        except (OSError, ValueError):
            return False
