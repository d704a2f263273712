"""``dfits moment``: a moment map along the spectral axis, written atomically with its WCS.

Without ``--unit`` the map is made in the file's own spectral unit from the linear WCS keywords
(one fused pass over the cube). With ``--unit`` (and ``--velocity-convention`` where frequency
must become velocity) the cube goes through the xarray accessor: ``with_spectral_unit`` (wcslib's
spectral transforms) and ``.fits.moment``, whose units follow the map (``Jy km / (beam s)``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["moment_command"]


def _spectral_axis(header: Any, ndim: int, axis: int) -> Any:
    """Channel coordinates along numpy ``axis`` from the linear WCS keywords (1-based FITS n)."""
    import numpy as np

    n = ndim - axis
    length = header.get(f"NAXIS{n}", 1)
    crval = float(header.get(f"CRVAL{n}", 0.0))
    cdelt = float(header.get(f"CDELT{n}", header.get(f"CD{n}_{n}", 1.0)))
    crpix = float(header.get(f"CRPIX{n}", 1.0))
    return crval + (np.arange(length) + 1 - crpix) * cdelt, cdelt, header.get(f"CUNIT{n}", "")


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


def _map_cards(header: Any, axis: int, ndim: int) -> list[tuple[str, Any, str]]:
    """The kept cards of ``header`` and its WCS less numpy ``axis``: the map's world axes."""
    import warnings

    from astropy.wcs import WCS, FITSFixedWarning

    cards = [(k, header[k], "") for k in _KEPT if k in header]
    if not any(f"CTYPE{n}" in header for n in range(1, ndim + 1)):
        return cards
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FITSFixedWarning)
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


def _native_unit_map(args: argparse.Namespace, hdu: Any, progress: Any) -> int:
    import dask
    import dask.array as da
    import numpy as np

    import dfits
    from dfits.array import weighted_sums

    x = hdu.data
    axis = args.axis if args.axis is not None else _spectral_numpy_axis(hdu, x.ndim)
    coord, cdelt, unit = _spectral_axis(hdu.header, x.ndim, axis)
    x = hdu.to_dask(reduce_axis=axis)  # chunks deep along the axis: small partials
    # One pass of the fused kernel per chunk: Σ I, Σ I·(ν−ν̄), Σ I·(ν−ν̄)² per pixel, NaN/BLANK and
    # values under --clip left out; centring on ν̄ keeps the order-2 difference well conditioned.
    v0 = float(coord.mean())
    sums = weighted_sums(x, axis, coord - v0, threshold=args.clip)
    if args.order == 0:
        result = sums[0] * abs(cdelt)
    else:
        s0 = da.where(sums[0] == 0, np.nan, sums[0])
        m1 = sums[1] / s0
        result = m1 + v0 if args.order == 1 else da.sqrt(da.maximum(sums[2] / s0 - m1**2, 0))
    bunit = str(hdu.header.get("BUNIT", ""))
    units = {0: f"{bunit} {unit}".strip(), 1: unit, 2: unit}[args.order]
    cards = [*_map_cards(hdu.header, axis, x.ndim), ("BUNIT", units)]
    cards.append(("HISTORY", f"dfits moment {args.order} of {_ascii(args.file)}"))
    with progress(args), dask.config.set(scheduler="threads"):
        dfits.to_fits(result.astype(np.float32), args.out, header=cards, overwrite=args.overwrite)
    print(f"wrote moment-{args.order} map {result.shape} to {args.out}")
    return 0


def _unit_map(args: argparse.Namespace, hdu: Any, key: Any, progress: Any) -> int:
    """The map in ``--unit`` through the accessor (wcslib converts the spectral axis)."""
    import dask
    import numpy as np
    import xarray as xr

    if args.axis is not None:
        raise ValueError("--unit converts the WCS's spectral axis: leave --axis out")
    ds = xr.open_dataset(args.file, engine="dfits", hdu=hdu.index if key is None else key)
    cube = ds[next(iter(ds.data_vars))]
    cube = cube.fits.with_spectral_unit(args.unit, args.velocity_convention)
    result = cube.fits.moment(args.order, threshold=args.clip)
    history = [("HISTORY", f"dfits moment {args.order} of {_ascii(args.file)} in {args.unit}")]
    with progress(args), dask.config.set(scheduler="threads"):
        result.astype(np.float32).fits.to_fits(args.out, header=history, overwrite=args.overwrite)
    print(f"wrote moment-{args.order} map {result.shape} in {result.attrs['units']} to {args.out}")
    return 0


def moment_command(
    args: argparse.Namespace, pick: Callable, hdu_key: Callable, progress: Callable
) -> int:
    """Run ``dfits moment`` (``pick``/``hdu_key``/``progress`` are the CLI's shared helpers)."""
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
    if args.unit:
        return _unit_map(args, hdu, key, progress)
    return _native_unit_map(args, hdu, progress)
