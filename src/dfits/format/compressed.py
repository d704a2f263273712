"""A compressed image HDU described as the image it holds.

The contract: :func:`describe_compressed` turns the header of a ``ZIMAGE = T`` binary table
into what the HDU's layout records for its image — the :class:`~dfits.format.tiles.TileLayout`,
the image header (:func:`~dfits.format.zheader.image_header`, astropy's ``CompImageHDU.header``),
the image's numpy shape and the decode spec of its *decoded* values: ZBITPIX with the image's
own BSCALE/BZERO/BLANK, in native byte order (``"="``), since the codecs decode to native
integers. Hostile Z keywords raise :class:`~dfits.errors.HeaderError` (see
:mod:`dfits.format.tiles`).
"""

from __future__ import annotations

from typing import Any

from dfits.format.dtypes import DecodeSpec, parse_decode_spec
from dfits.format.header import Header
from dfits.format.scaling import scaling_values
from dfits.format.tiles import TileLayout, parse_tiles
from dfits.format.zheader import image_header

__all__ = ["DEFAULT_NAME", "compressed_name", "describe_compressed", "image_header_of"]

#: The table's EXTNAME astropy and fpack write when the image has none (never the image's).
DEFAULT_NAME = "COMPRESSED_IMAGE"

# the table's cards that the image header's scaling is rebuilt from (with a ZBLANK column)
_SCALING = ("BSCALE", "BZERO", "BLANK", "ZBLANK")


def describe_compressed(
    header: Any, where: str, notes: list[str]
) -> tuple[TileLayout, Header | None, tuple[int, ...], DecodeSpec]:
    """``(tiles, image header, shape, decode spec)`` of a compressed image's table header.

    The image header is None when no card of the table sets the image's scaling: it is then
    built on first use by :func:`image_header_of`. Recoverable oddities (a defaulted BLANK,
    BLANK on float data) are appended to ``notes``.
    """
    tiles = parse_tiles(header, where)
    image: Header | None = None
    scaling: tuple[object, ...] = (None, None, None)
    if any(key in header for key in _SCALING) or tiles.column("ZBLANK") is not None:
        image, messages = image_header(header)
        notes += [f"{where}: {m}" for m in messages]
        scaling = scaling_values(image, where, notes)
    # else no card the image's BSCALE/BZERO/BLANK (or a note) could come from: rebuilding
    # the image header is most of a compressed HDU's open, so it waits for image_header_of
    # Quantised floats come out of the dequantiser as floats: only the image's own
    # scaling applies after it, as astropy does.
    spec, messages = parse_decode_spec(tiles.zbitpix, *scaling, where=where, byteorder="=")
    notes += messages
    return tiles, image, tiles.shape, spec


def compressed_name(header: Any) -> str:
    """The name of a compressed image HDU, as astropy's ``CompImageHDU.name``: the image
    header's EXTNAME (the table's first EXTNAME card whose value is not the default
    ``COMPRESSED_IMAGE``: a table may carry the default, then the image's own), else the
    default.

    >>> from dfits.format.cards import END_CARD, format_card
    >>> cards = format_card("EXTNAME", "COMPRESSED_IMAGE") + format_card("EXTNAME", "SCI")
    >>> compressed_name(Header.fromstring(cards + END_CARD))
    'SCI'
    >>> compressed_name(Header.fromstring(END_CARD))
    'COMPRESSED_IMAGE'
    """
    for i in range(header.count("EXTNAME")):
        value = header["EXTNAME", i]
        if value is not None and str(value) != DEFAULT_NAME:
            return str(value)
    return DEFAULT_NAME


def image_header_of(layout: Any) -> Header | None:
    """The image header of a compressed image's HDU layout (None for any other HDU, or a
    compressed image whose Z keywords are unusable): the one built at open, or built now
    from the table header and kept on the layout."""
    if layout.image_header is None and getattr(layout, "tiles", None) is not None:
        image, _ = image_header(layout.header)  # no notes: those come with scaling cards
        # frozen: set once, and every call would build the same header from the same cards
        object.__setattr__(layout, "image_header", image)
    return layout.image_header
