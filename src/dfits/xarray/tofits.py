"""The xarray adapter of :mod:`dfits.write`: DataArrays and Datasets as image HDUs.

The contract: every DataArray becomes one image HDU (:class:`~dfits.write.images.ImageItem`)
with cards from its ``fits_header`` attribute (as the ``dfits`` engine sets it) less its WCS,
the WCS of what it now is (``.fits.wcs``, right for slices and cut-outs, its dimensions put
back in FITS axis order), or linear WCS cards from evenly spaced numeric coordinates when it
came from elsewhere, and ``BUNIT``/``BTYPE``/``OBJECT`` from ``units``, ``long_name`` and
``object``. A Dataset gives one HDU per data variable (EXTNAME = its name); a list or tuple
gives one HDU each, after an empty primary HDU; anything else is :mod:`dfits.write.api`'s.
:func:`to_fits` and :func:`append` then write through :mod:`dfits.write`, with its options.
``dfits.to_fits``/``dfits.append`` send xarray objects here.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import xarray as xr

from dfits.format.imagehdu import UserCard, user_cards
from dfits.format.longcards import format_cards
from dfits.format.mandatory import MANDATORY
from dfits.write.api import append_items, item_of, write_items
from dfits.write.api import items_of as plain_items
from dfits.write.images import ImageItem

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
    if not isinstance(obj, xr.DataArray):
        return item_of(obj, header)
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
            if not isinstance(x, xr.DataArray):
                items += plain_items([x], header)[0]  # arrays, HDUs (data-less ones skipped)
                continue
            items.append(_item(x, header, str(x.name).upper() if x.name is not None else None))
        return items, False
    return [_item(obj, header, None)], True


def to_fits(obj: Any, path: str | os.PathLike[str], *, header: Any = None, **options: Any) -> Any:
    """:func:`dfits.to_fits` of DataArrays, Datasets and lists holding them (``options``:
    those of :func:`dfits.write.to_fits`).

    >>> import numpy as np, xarray as xr
    >>> to_fits(xr.DataArray(np.ones((2, 3)), dims=("y", "x")), "x.fits")  # doctest: +SKIP
    'x.fits'
    """
    items, primary = items_of(obj, header)
    return write_items(items, primary, path, **options)


def append(path: str | os.PathLike[str], obj: Any, *, header: Any = None, **options: Any) -> str:
    """:func:`dfits.append` of DataArrays, Datasets and lists holding them (``options``:
    those of :func:`dfits.write.append`); an appended DataArray's name is its EXTNAME."""
    items, primary = items_of(obj, header)
    named = isinstance(obj, xr.DataArray) and obj.name is not None and not items[0].extname
    if named and os.path.exists(path):
        items[0].extname = str(obj.name).upper()
    return append_items(items, primary, path, **options)
