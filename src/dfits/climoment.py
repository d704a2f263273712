"""``dfits moment``: a moment map along the spectral axis, written atomically with its WCS.

The map is the accessor's: the cube opened as a DataArray by the ``dfits`` engine (its
spectral coordinate is the WCS's world values, non-linear axes included), over the HDU's
chunks planned for the reduction, then :func:`dfits.cube.moments.moment` (one fused pass per
chunk). With ``--unit`` (and ``--velocity-convention`` where frequency must become velocity)
the axis goes through :func:`dfits.cube.spectral.with_spectral_unit` (wcslib's spectral
transforms) first; units follow the map (``Jy km / (beam s)``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["moment_command"]


# Cards a map keeps from its cube: what was observed, and the beam (a map has the cube's).
_KEPT = ("OBJECT", "TELESCOP", "INSTRUME", "OBSERVER", "DATE-OBS", "MJD-OBS", "BMAJ", "BMIN", "BPA")


def _ascii(text: str) -> str:
    """A path as printable ASCII for a HISTORY card (others escaped, as Python writes them)."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _refuse_existing(path: str, overwrite: bool) -> None:
    import os

    from dfits.errors import OutputExistsError, where

    if os.path.exists(path) and not overwrite:
        raise OutputExistsError(f"{where(path)}: exists; pass --overwrite to replace it")


def _map_cards(header: Any, axis: int, ndim: int, result: Any) -> list[tuple[str, Any, str]]:
    """The kept cards of ``header`` and the WCS of the map ``result``: its own pixels' WCS
    (length-1 axes such as Stokes gone with the spectral one), else the cube's WCS less numpy
    ``axis`` (a map along a celestial axis, whose WCS cannot lose one of a pair)."""
    import warnings

    from astropy.wcs import WCS, FITSFixedWarning

    from dfits.cube.errors import WCSError
    from dfits.cube.wcs import dataarray_wcs

    cards = [(k, header[k], "") for k in _KEPT if k in header]
    if not any(f"CTYPE{n}" in header for n in range(1, ndim + 1)):
        return cards
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FITSFixedWarning)
        try:
            wcs = dataarray_wcs(result)[0]
        except WCSError:
            wcs = None
        if wcs is None or wcs.pixel_n_dim != result.ndim:
            wcs = WCS(header.to_astropy(), naxis=ndim).dropaxis(ndim - 1 - axis)
        extra = wcs.to_header()
    return cards + [(k, extra[k], extra.comments[k]) for k in extra]


def _spectral_numpy_axis(hdu: Any, ndim: int) -> int:
    """The numpy axis of the WCS's spectral axis (not assumed first: 4-D cubes have Stokes)."""
    import warnings

    import numpy as np
    from astropy.wcs import WCS, FITSFixedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FITSFixedWarning)
        wcs = WCS(hdu.header.to_astropy(), naxis=ndim)
    spec = wcs.wcs.spec
    pixels = np.flatnonzero(np.asarray(wcs.axis_correlation_matrix)[spec]) if spec >= 0 else []
    if len(pixels) != 1:
        raise ValueError(
            f"HDU {hdu.index} has no (separable) spectral axis in its WCS {list(wcs.wcs.ctype)}; "
            "pass --axis to take moments along another axis"
        )
    return ndim - 1 - int(pixels[0])


def _ctype(cube: Any, dim: str) -> str:
    """The FITS type of ``cube``'s axis ``dim`` (FREQ, VRAD...), as its coordinate says."""
    return str(cube[dim].attrs.get("ctype", dim)).split("-")[0] if dim in cube.coords else dim


def _cube(args: argparse.Namespace, hdu: Any, key: Any, axis: int) -> Any:
    """The HDU as the engine's DataArray, over its chunks planned for reducing ``axis``."""
    import xarray as xr

    ds = xr.open_dataset(args.file, engine="dfits", hdu=hdu.index if key is None else key)
    cube = ds[next(iter(ds.data_vars))]
    # the same values as the engine's lazily indexed array, in chunks deep along the axis
    return cube.copy(deep=False, data=hdu.to_dask(reduce_axis=axis))


def _map(args: argparse.Namespace, hdu: Any, key: Any, progress: Any, shown: bool) -> int:
    import dask

    import dfits
    from dfits.cube import spectral
    from dfits.cube.errors import ConventionError
    from dfits.cube.moments import moment
    from dfits.errors import where
    from dfits.progress import bar_chunks

    ndim = len(hdu.shape)
    if args.unit and args.axis is not None:
        raise ValueError("--unit converts the WCS's spectral axis: leave --axis out")
    axis = args.axis if args.axis is not None else _spectral_numpy_axis(hdu, ndim)
    if not -ndim <= axis < ndim:
        raise ValueError(f"--axis {axis} is out of range for {ndim}-d data")
    with bar_chunks(shown, hdu.data.nbytes):  # chunks a shown bar advances through
        cube = _cube(args, hdu, key, axis % ndim)
    dim = str(cube.dims[axis])
    history = f"dfits moment {args.order} of {_ascii(args.file)}"
    if args.unit:
        try:
            cube = spectral.with_spectral_unit(cube, args.unit, args.velocity_convention)
        except ConventionError as err:
            # the API's message names its keyword; here the option is what the user types
            raise ConventionError(
                f"{where(args.file, hdu.index, hdu.name)}: --unit {args.unit} on this "
                f"{_ctype(cube, dim)} axis is a velocity: pass --velocity-convention radio, "
                "optical or relativistic"
            ) from err
        dim = spectral.spectral_dim(cube)
        history += f" in {args.unit}"
    result = moment(cube, args.order, dim, threshold=args.clip)
    units = result.attrs.get("units", "")
    cards = [*_map_cards(hdu.header, axis % ndim, ndim, result), ("BUNIT", units),
             ("HISTORY", history)]  # fmt: skip
    with progress(args), dask.config.set(scheduler="threads"):
        # the map keeps the cube's float type (float32 → BITPIX -32, float64 → -64)
        dfits.to_fits(result.data, args.out, header=cards, overwrite=args.overwrite)
    print(f"wrote moment-{args.order} map {result.shape} in {units or 'no unit'} to {args.out}")
    return 0


def moment_command(
    args: argparse.Namespace,
    pick: Callable,
    hdu_key: Callable,
    progress: Callable,
    shown: bool = False,
) -> int:
    """Run ``dfits moment`` (``pick``/``hdu_key``/``progress`` are the CLI's shared helpers;
    ``shown``: a progress bar is shown, so chunks are planned for it to advance)."""
    import dfits

    if args.order not in (0, 1, 2):
        raise ValueError(f"--order must be 0, 1 or 2, not {args.order}")
    if args.velocity_convention and not args.unit:
        raise ValueError("--velocity-convention goes with --unit (e.g. --unit km/s)")
    _refuse_existing(args.out, args.overwrite)  # before the cube is read, not after
    key = hdu_key(args.hdu)
    hdu = pick(dfits.open(args.file), key)
    ndim = len(hdu.shape)
    if ndim < 2:
        raise ValueError(f"moment maps need at least 2-d data, HDU {hdu.index} is {ndim}-d")
    return _map(args, hdu, key, progress, shown)
