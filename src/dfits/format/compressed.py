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

__all__ = ["describe_compressed"]


def describe_compressed(
    header: Any, where: str, notes: list[str]
) -> tuple[TileLayout, Header, tuple[int, ...], DecodeSpec]:
    """``(tiles, image header, shape, decode spec)`` of a compressed image's table header.

    Recoverable oddities (a defaulted BLANK, BLANK on float data) are appended to ``notes``.
    """
    tiles = parse_tiles(header, where)
    image, messages = image_header(header)
    notes += [f"{where}: {m}" for m in messages]
    scaling = scaling_values(image, where, notes)
    # Quantised floats come out of the dequantiser as floats: only the image's own
    # scaling applies after it, as astropy does.
    spec, messages = parse_decode_spec(tiles.zbitpix, *scaling, where=where, byteorder="=")
    notes += messages
    return tiles, image, tiles.shape, spec
