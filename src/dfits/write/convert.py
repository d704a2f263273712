"""FITS ↔ zarr: image HDUs as zarr arrays, their headers as attributes, and back.

The contract: :func:`fits_to_zarr` writes each image HDU's physical values (``hdu.data``:
native, NaN for BLANK) through ``dask.array.to_zarr`` in the HDU's own chunks, so memory
stays at chunk × threads; the array is named ``hdu<i>`` and carries the HDU's header as
``fits_header`` (one card a line, as the ``dfits`` engine's attribute) and ``fits_extname``;
the group's ``fits_hdus`` lists the arrays in file order and ``fits_primary_header`` keeps
a data-less primary header (not written back: the writer makes the empty primary itself).
:func:`zarr_to_fits` reads that back (``dask.array.from_zarr``) and writes it with
:func:`dfits.to_fits`'s machinery: values and dtype as stored in zarr, every
card of the header but the mandatory and scaling ones, which the writer makes for the data
(so a scaled integer image comes back as the floats it meant). One image comes back as the
primary HDU, several as IMAGE extensions after an empty primary.

Tables and other non-image HDUs raise :class:`~dfits.errors.UnsupportedError` naming the HDU;
nothing is written then.
"""

from __future__ import annotations

import os
from typing import Any

from dfits.errors import HeaderError, OutputExistsError, UnsupportedError, where

__all__ = ["fits_to_fits", "fits_to_zarr", "zarr_to_fits"]


def _header_text(hdu: Any) -> str:
    from dfits.format.headertext import readable_header

    return readable_header(hdu.header.tostring().decode("latin-1"))


def _images(f: Any) -> list[Any]:
    """The image HDUs with data; a table or other HDU raises, naming it."""
    from dfits.write.api import dataless

    images = []
    for hdu in f:
        if dataless(hdu):
            continue  # no data (NAXIS = 0)
        if not hdu.is_image:
            raise UnsupportedError(
                f"{where(f.filename, hdu.index, hdu.name)}: a {hdu.kind} HDU; only images convert"
            )
        images.append(hdu)
    return images


def fits_to_zarr(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], *, overwrite: bool
) -> str:
    """Write the image HDUs of FITS file ``src`` to a new zarr group at ``dst``."""
    import dask.array as da
    import zarr

    from dfits.array.scheduler import compute
    from dfits.file import open as open_fits

    target = os.fspath(dst)
    if os.path.exists(target) and not overwrite:
        raise OutputExistsError(f"{where(target)}: exists; pass overwrite=True to replace it")
    f = open_fits(src)
    images = _images(f)
    group = zarr.open_group(target, mode="w" if overwrite else "w-")
    group.attrs["fits_hdus"] = [f"hdu{h.index}" for h in images]
    if not f[0].shape:
        group.attrs["fits_primary_header"] = _header_text(f[0])
    stores = []
    for hdu in images:
        x = hdu.data
        arr = group.create_array(
            f"hdu{hdu.index}", shape=x.shape, dtype=x.dtype,
            chunks=tuple(c[0] for c in x.chunks), fill_value=None,
        )  # fmt: skip
        arr.attrs.update({"fits_header": _header_text(hdu), "fits_extname": hdu.name})
        stores.append(da.to_zarr(x, arr, compute=False))
    compute(*stores)
    return target


def zarr_to_fits(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], *, overwrite: bool,
    compression: str | None = None,
) -> str:  # fmt: skip
    """Write a zarr group made by :func:`fits_to_zarr` back as the FITS file ``dst``
    (tile-compressed with ``compression``, see :func:`fits_to_fits`)."""
    import dask.array as da
    import zarr

    from dfits.format.header import Header
    from dfits.format.headertext import card_text
    from dfits.format.imagehdu import user_cards
    from dfits.format.mandatory import MANDATORY
    from dfits.write.images import ImageItem

    group = zarr.open_group(os.fspath(src), mode="r")
    names = group.attrs.get("fits_hdus")
    if not isinstance(names, list):
        raise HeaderError(f"{where(os.fspath(src))}: no 'fits_hdus' attribute: not from dfits")
    items = []
    for name in names:
        arr = group[name]
        header = Header(card_text(str(arr.attrs.get("fits_header", ""))).encode("latin-1"))
        cards = [c for c in user_cards(header) if not MANDATORY.fullmatch(c[0])]
        extname = arr.attrs.get("fits_extname") or None
        extname = None if extname == "PRIMARY" else extname
        items.append(ImageItem(da.from_zarr(arr), cards, extname))
    # the primary HDU's data back in the primary (the file's first HDU is hdu0 when it held
    # data); else IMAGE extensions after an empty primary (the writer makes that one; a
    # data-less primary's own cards stay in the group's attributes only)
    primary = len(items) == 1 or names[0] == "hdu0"
    return _write(items, dst, primary, overwrite, compression)


def _write(items: list[Any], dst: Any, primary: bool, overwrite: bool, compression: Any) -> str:
    from dfits.write.api import write_items

    return str(write_items(items, primary, dst, overwrite=overwrite, compression=compression))


def fits_to_fits(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], *, overwrite: bool,
    compression: str,
) -> str:  # fmt: skip
    """Write the image HDUs of ``src`` tile-compressed (``compression``, with the defaults of
    :func:`dfits.to_fits`: row tiles, floats quantised at level 16 with SUBTRACTIVE_DITHER_2)
    to ``dst``, as fpack does; each keeps its cards but the mandatory and scaling ones (a
    scaled image is written as its physical values). Tables raise before anything is written.
    """
    from dfits.file import open as open_fits
    from dfits.write.api import hdu_item

    items = [hdu_item(hdu) for hdu in _images(open_fits(src))]
    return _write(items, dst, False, overwrite, compression)
