"""Cubes with beams for the beam and convolution tests: a CASA multi-beam cube (BEAMS table)."""

from __future__ import annotations

import numpy as np
from astropy.io import fits

from .conftest import spectral_cube_file


def multibeam_file(directory, kind: str = "freq-ascending-3d", npol: int = 1) -> str:
    """``spectral_cube_file(kind)`` with a CASA ``BEAMS`` table: beams growing with channel.

    With ``npol`` > 1 the cube gets a Stokes axis of ``npol`` planes, each its own beams.
    """
    path = spectral_cube_file(directory, kind, beam=False)
    with fits.open(path) as hdus:
        data, header = hdus[0].data, hdus[0].header.copy()
    nchan = data.shape[-3]
    if npol > 1:
        plane = data if data.ndim == 3 else data[0]
        data = np.stack([plane * (1 + p) for p in range(npol)])
        header["CTYPE4"], header["CRVAL4"], header["CDELT4"] = "STOKES", 1.0, 1.0
        header["CRPIX4"], header["CUNIT4"] = 1.0, ""
    header["CASAMBM"] = True
    chan, pol = np.meshgrid(np.arange(nchan), np.arange(npol))
    chan, pol = chan.ravel(), pol.ravel()
    bmaj = 9.0 + 0.3 * chan + 0.7 * pol  # arcsec, like CASA
    table = fits.BinTableHDU.from_columns(
        [
            fits.Column("BMAJ", "E", "arcsec", array=bmaj),
            fits.Column("BMIN", "E", "arcsec", array=0.75 * bmaj),
            fits.Column("BPA", "E", "deg", array=10.0 + 2.0 * chan),
            fits.Column("CHAN", "J", array=chan),
            fits.Column("POL", "J", array=pol),
        ],
        name="BEAMS",
    )
    header["NCHAN"], header["NPOL"] = nchan, npol
    out = str(directory / f"multibeam-{kind}-{npol}.fits")
    fits.HDUList([fits.PrimaryHDU(data, header=header), table]).writeto(out, overwrite=True)
    return out
