"""``dfits.to_fits`` and ``dfits.append``: arrays, DataArrays, Datasets and lists of them.

The contract: every object becomes one image HDU (:class:`~dfits.array.tofits.ImageItem`) —
a DataArray with cards from its ``fits_header`` attribute (as the ``dfits`` engine sets it)
less its WCS, the WCS of what it now is (``.fits.wcs``, right for slices and cut-outs, its
dimensions put back in FITS axis order), or linear WCS cards from evenly spaced numeric
coordinates when it came from elsewhere, and ``BUNIT``/``BTYPE``/``OBJECT`` from ``units``,
``long_name`` and ``object``. A Dataset gives one HDU per data variable (EXTNAME = its name);
a list or tuple gives one HDU each, after an empty primary HDU.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import xarray as xr

from dfits.array.tocompressed import write_compressed
from dfits.array.tofits import ImageItem, append_images, write_images
from dfits.format.imagehdu import UserCard, user_cards
from dfits.format.longcards import format_cards
from dfits.format.mandatory import MANDATORY

__all__ = ["append", "items_of", "to_fits"]

# WCS cards of the original header: replaced by those of what the DataArray now is.
_WCS = re.compile(
    r"(WCSAXES|CRPIX|CRVAL|CDELT|CTYPE|CUNIT|CROTA|CNAME|CRDER|CSYER|PC\d+_|CD\d+_|PV\d+_|"
    r"PS\d+_|LONPOLE|LATPOLE|RADESYS|EQUINOX|EPOCH|WCSNAME|MJDREF|SPECSYS|RESTFRQ|RESTFREQ|"
    r"RESTWAV|VELREF)\w*"
)
_ATTR_CARDS = {"units": "BUNIT", "long_name": "BTYPE", "object": "OBJECT"}


def _linear_wcs(obj: xr.DataArray) -> list[tuple[str, Any]]:
    """Linear WCS cards from evenly spaced 1-d numeric coordinates (FITS axis n = ndim - i)."""
    cards: list[tuple[str, Any]] = []
    for i, dim in enumerate(obj.dims):
        n = obj.ndim - i
        if dim not in obj.coords or obj[dim].ndim != 1 or obj[dim].dtype.kind not in "iuf":
            continue
        v = obj[dim].values.astype(float)
        step = v[1] - v[0] if v.size > 1 else 1.0
        if v.size > 1 and not np.allclose(np.diff(v), step, rtol=1e-9, atol=0):
            continue
        cards += [(f"CTYPE{n}", str(dim).upper()[:8]), (f"CRPIX{n}", 1.0),
                  (f"CRVAL{n}", float(v[0])), (f"CDELT{n}", float(step))]  # fmt: skip
        units = obj[dim].attrs.get("units")
        if isinstance(units, str) and units:
            cards.append((f"CUNIT{n}", units))
    return cards


def _from_dfits(obj: xr.DataArray) -> tuple[xr.DataArray, list[UserCard]]:
    """Cards of a DataArray the dfits engine opened: its header less WCS, plus its WCS now."""
    from dfits.format.header import Header
    from dfits.format.headertext import card_text

    header = Header(card_text(obj.attrs["fits_header"]).encode("latin-1"))
    # the mandatory cards described the file's array, not this (maybe sliced) one
    cards = [c for c in user_cards(header) if not MANDATORY.fullmatch(c[0])]
    kept = [c for c in cards if not _WCS.fullmatch(c[0])]
    if len(kept) == len(cards):
        return obj, kept  # no WCS to carry over
    axes = {d: obj.coords.get(f"pixel_{d}") for d in obj.dims}
    if all(c is not None and "fits_axis" in c.attrs for c in axes.values()):
        # numpy order is FITS order reversed: put transposed dimensions back
        order = sorted(obj.dims, key=lambda d: -int(axes[d].attrs["fits_axis"]))
        obj = obj.transpose(*order)
        try:
            wcs = obj.fits.wcs.to_header()
        except (ValueError, KeyError):
            return obj, kept
        kept += user_cards([(k, wcs[k], wcs.comments[k]) for k in wcs])
    return obj, kept


def _item(obj: Any, header: Any, extname: str | None) -> ImageItem:
    if isinstance(obj, ImageItem):
        return obj
    if not isinstance(obj, xr.DataArray):
        return ImageItem(obj, user_cards(header), extname)
    cards: list[UserCard] = []
    if isinstance(obj.attrs.get("fits_header"), str):
        obj, cards = _from_dfits(obj)
    else:
        cards = user_cards(_linear_wcs(obj))
    for attr, key in _ATTR_CARDS.items():
        value = obj.attrs.get(attr)
        if isinstance(value, str) and value:
            # the attribute says what obj is now (a moment map's BUNIT is Jy/beam km/s);
            # the header's card said what the file held
            cards = [c for c in cards if c[0] != key]
            cards.append((key, value, format_cards(key, value)))
    cards += user_cards(header)
    return ImageItem(obj.data, cards, extname)


def items_of(obj: Any, header: Any = None) -> tuple[list[ImageItem], bool]:
    """The HDUs ``obj`` becomes, and whether the first is the primary HDU."""
    if isinstance(obj, xr.Dataset):
        names = [str(n) for n in obj.data_vars]
        return [_item(obj[n], header, n.upper()) for n in names], False
    if isinstance(obj, list | tuple):
        items = []
        for x in obj:
            name = getattr(x, "name", None) if isinstance(x, xr.DataArray) else None
            items.append(_item(x, header, str(name).upper() if name is not None else None))
        return items, False
    return [_item(obj, header, None)], True


def _quantize(
    bitpix: int | None, bscale: float, bzero: float, blank: int | None
) -> dict[str, Any] | None:
    if bitpix is not None:
        return {"bitpix": bitpix, "bscale": bscale, "bzero": bzero, "blank": blank}
    if (bscale, bzero, blank) != (1.0, 0.0, None):
        raise ValueError("bscale, bzero and blank quantise floats: pass bitpix as well")
    return None


def to_fits(
    obj: Any,
    path: str | os.PathLike[str],
    *,
    header: Any = None,
    overwrite: bool = False,
    checksum: bool = True,
    compute: bool = True,
    fsync: bool = True,
    bitpix: int | None = None,
    bscale: float = 1.0,
    bzero: float = 0.0,
    blank: int | None = None,
    compression: str | None = None,
    tile_shape: Any = None,
    quantize_level: float = 16.0,
    quantize_method: str = "SUBTRACTIVE_DITHER_2",
    dither_seed: int | None = None,
) -> Any:
    """Write arrays, DataArrays or Datasets to a FITS file, in parallel and atomically.

    Parameters
    ----------
    obj : dask or numpy array, xarray.DataArray, xarray.Dataset, or a list of them
        One array or DataArray: the primary HDU. A Dataset: one IMAGE extension per data
        variable (EXTNAME = its name, upper case). A list: one IMAGE extension each. Extensions
        follow an empty primary HDU.
    path : str or os.PathLike
        The target. Its directory must exist; it is replaced only when complete.
    header : optional
        Extra cards for every HDU written: a ``dfits.Header``, an astropy Header, a mapping or
        ``(keyword, value[, comment])`` tuples. Cards contradicting the data raise
        :class:`~dfits.HeaderError`; BSCALE/BZERO/BLANK/CHECKSUM/DATASUM are the writer's own.
    overwrite : bool
        Replace an existing file (else :class:`~dfits.errors.OutputExistsError`).
    checksum : bool
        Write DATASUM and CHECKSUM (computed in the encoding pass).
    compute : bool
        False: return a ``dask.delayed`` object whose computation writes the file.
    fsync : bool
        Flush the data to disk before the rename (and the directory after), so that even a
        power cut leaves the old file or the new one. False skips the flush (about 0.5 s per
        256 MiB on a virtual disk): still atomic if the process dies, not if the machine does.
    bitpix : {8, 16, 32, 64}, optional
        Store float data as scaled integers of this BITPIX: ``rint((x - bzero) / bscale)``
        (round half to even), clipped to the type's range, NaN as ``blank``; readers get
        ``q * bscale + bzero`` back. Encoded in the same pass as the byte swap and checksum.
    bscale, bzero : float
        The scaling (with ``bitpix`` only).
    blank : int, optional
        The stored value of NaN (default: the type's minimum; 255 for BITPIX 8).
    compression : {"RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS"}, optional
        Write every image tile-compressed (a ``ZIMAGE`` binary table extension after an empty
        primary HDU, as fpack and astropy's ``CompImageHDU``): the chunk tasks compress their
        tiles in parallel. Integers are lossless; floats are quantised per tile (RICE_1
        needs that; with GZIP_1/GZIP_2/NOCOMPRESS ``quantize_level=0`` keeps them exact), NaN
        stored as ZBLANK. Not with ``bitpix``.
    tile_shape : tuple of int, optional
        Tile shape in numpy axis order (default: one image row per tile, as fpack). Edge tiles
        are partial; chunks are rechunked to whole tiles.
    quantize_level : float
        Floats: ZSCALE = the tile's noise / level (> 0), or ``-quantize_level`` (< 0); 0 stores
        floats losslessly (not with RICE_1).
    quantize_method : {"SUBTRACTIVE_DITHER_2", "SUBTRACTIVE_DITHER_1", "NO_DITHER"}
        The dither of quantised floats (_2 keeps exact zeros exact).
    dither_seed : int, optional
        ZDITHER0, 1..10000 (default: from the clock, as astropy and fpack).

    Returns
    -------
    str or dask.delayed.Delayed
        The path written, or the delayed write.

    Examples
    --------
    >>> import numpy as np, dfits
    >>> dfits.to_fits(np.arange(6.0).reshape(2, 3), "x.fits")     # doctest: +SKIP
    'x.fits'
    """
    items, primary = items_of(obj, header)
    quantize = _quantize(bitpix, bscale, bzero, blank)
    if compression is not None:
        if quantize is not None:
            raise ValueError("bitpix/bscale/bzero/blank and compression: use quantize_level")
        return write_compressed(
            items, path, compression=compression, tile_shape=tile_shape,
            quantize_level=quantize_level, quantize_method=quantize_method,
            dither_seed=dither_seed, overwrite=overwrite, checksum=checksum, compute=compute,
            fsync=fsync,
        )  # fmt: skip
    return write_images(
        items, path, primary=primary, overwrite=overwrite, checksum=checksum, compute=compute,
        fsync=fsync, quantize=quantize,
    )  # fmt: skip


def append(
    path: str | os.PathLike[str],
    obj: Any,
    *,
    header: Any = None,
    checksum: bool = True,
    fsync: bool = True,
    bitpix: int | None = None,
    bscale: float = 1.0,
    bzero: float = 0.0,
    blank: int | None = None,
    wait: float = 60.0,
) -> str:
    """Append arrays, DataArrays or Datasets to a FITS file as IMAGE extensions, in place.

    The existing HDUs are neither read nor rewritten (only the first block is checked), so
    an append costs the same whatever the file holds. The data are written first, in parallel
    by the chunk tasks, then the headers; until then readers see the old HDUs followed by
    zero padding. On failure the file is cut back to its old size; a process killed
    mid-append leaves a journal beside the file, and the next append cuts its partial HDUs
    off first. Appends to one file are serialised by a lock (``flock``).

    Parameters
    ----------
    path : str or os.PathLike
        A FITS file (SIMPLE first, whole 2880-byte blocks). Absent: written by
        :func:`to_fits` instead (a single array then becomes the primary HDU).
    obj : dask or numpy array, xarray.DataArray, xarray.Dataset, or a list of them
        One IMAGE extension per array or DataArray (EXTNAME = its name, upper case, when it
        has one), per data variable of a Dataset, per list item.
    header, checksum, fsync, bitpix, bscale, bzero, blank
        As for :func:`to_fits`.
    wait : float
        Seconds to wait while another process appends to the file, before
        :class:`~dfits.errors.FileBusyError`.

    Returns
    -------
    str
        The path.

    Examples
    --------
    >>> import numpy as np, dfits
    >>> dfits.append("x.fits", np.ones((2, 3), "f4"), header={"EXTNAME": "NEXT"})  # doctest: +SKIP
    'x.fits'
    """
    quantize = _quantize(bitpix, bscale, bzero, blank)
    if not os.path.exists(path):
        return str(to_fits(obj, path, header=header, checksum=checksum, fsync=fsync,
                           bitpix=bitpix, bscale=bscale, bzero=bzero, blank=blank))  # fmt: skip
    items, _ = items_of(obj, header)
    if isinstance(obj, xr.DataArray) and obj.name is not None and not items[0].extname:
        items[0].extname = str(obj.name).upper()
    return append_images(items, path, checksum=checksum, fsync=fsync, quantize=quantize, wait=wait)
