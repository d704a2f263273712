"""The image header of a tile-compressed image, rebuilt from its binary table's header.

The contract: :func:`image_header` gives the header astropy's ``CompImageHDU.header`` gives
for the same table header: the table's own keywords (TFIELDS, TTYPEn, THEAP, ...) and the
compression keywords (ZIMAGE, ZCMPTYPE, ZTILEn, ZNAMEn/ZVALn, ZQUANTIZ, ...) removed, the
image's mandatory keywords restored from ZSIMPLE/ZTENSION, ZBITPIX, ZNAXIS, ZNAXISn, ZPCOUNT,
ZGCOUNT, ZEXTEND, ZBLOCKED, ZHECKSUM and ZDATASUM (their stored card bytes kept, renamed), the
default ``EXTNAME = 'COMPRESSED_IMAGE'`` dropped, BSCALE/BZERO moved after the other cards,
and BLANK added from ZBLANK for integer images. Pure: cards in, cards out.
"""

from __future__ import annotations

import re
from typing import Any

from dfits.format.cards import CARD_SIZE, END_CARD, format_card
from dfits.format.header import Header

__all__ = ["image_header"]

_TABLE = re.compile(
    r"(TTYPE|TFORM|TUNIT|TNULL|TSCAL|TZERO|TDISP|TBCOL|TDIM|TCTYP|TCUNI|TCRPX|TCRVL|TCDLT"
    r"|TRPOS)[1-9][0-9]*"
)
_INDEXED_Z = re.compile(r"(ZNAXIS|ZTILE|ZNAME|ZVAL)[1-9][0-9]*")
_RENAMED = {
    "ZSIMPLE": "SIMPLE",
    "ZBITPIX": "BITPIX",
    "ZNAXIS": "NAXIS",
    "ZPCOUNT": "PCOUNT",
    "ZGCOUNT": "GCOUNT",
}
_TAIL = (("ZEXTEND", "EXTEND"), ("ZBLOCKED", "BLOCKED"))
_TAIL += (("ZHECKSUM", "CHECKSUM"), ("ZDATASUM", "DATASUM"))
_DROPPED = frozenset(
    {"SIMPLE", "XTENSION", "BITPIX", "NAXIS", "EXTEND", "PCOUNT", "GCOUNT", "GROUPS"}
    | {"BSCALE", "BZERO", "TFIELDS", "THEAP", "CHECKSUM", "DATASUM", "ZIMAGE", "ZCMPTYPE"}
    | {"ZMASKCMP", "ZQUANTIZ", "ZDITHER0", "ZBLANK", "ZSCALE", "ZZERO", "ZTENSION"}
    | set(_RENAMED)
    | {z for z, _ in _TAIL}
)


_COMMENTARY = frozenset({"", "COMMENT", "HISTORY"})


def _dropped(keyword: str) -> bool:
    return (
        keyword in _DROPPED
        or bool(_TABLE.fullmatch(keyword))
        or bool(_INDEXED_Z.fullmatch(keyword))
        or bool(re.fullmatch(r"NAXIS[1-9][0-9]*", keyword))
    )


def _renamed(header: Header, key: str, new: str) -> bytes:
    """The card of ``key`` under the name ``new``: same value and comment bytes."""
    image = header.card_bytes(header.index(key))
    return new.ljust(8).encode("ascii") + image[8:CARD_SIZE]


def image_header(table: Header) -> tuple[Header, list[str]]:
    """The image header of the compressed image whose table header is ``table``.

    Returns the header and the warnings astropy would give (a BLANK defaulted because a
    ZBLANK column has no keyword).
    """
    notes: list[str] = []
    cards = [c for c in table.cards if c.keyword != "END"]
    blanks = 0
    while cards and not cards[-1].keyword and not cards[-1].image.strip():
        cards.pop()
        blanks += 1
    head: list[bytes] = []
    if "ZSIMPLE" in table:
        head.append(_renamed(table, "ZSIMPLE", "SIMPLE"))
    else:
        comment = table.comments["ZTENSION"] if "ZTENSION" in table else ""
        head.append(format_card("XTENSION", "IMAGE", comment))
    head.append(_renamed(table, "ZBITPIX", "BITPIX"))
    head.append(_renamed(table, "ZNAXIS", "NAXIS"))
    naxis = table.get("ZNAXIS", 0)
    head += [_renamed(table, f"ZNAXIS{i}", f"NAXIS{i}") for i in range(1, naxis + 1)]
    if "ZSIMPLE" not in table:
        for key, default in (("PCOUNT", 0), ("GCOUNT", 1)):
            z = "Z" + key
            head.append(_renamed(table, z, key) if z in table else format_card(key, default))
    kept = [
        c
        for c in cards
        if not _dropped(c.keyword)
        and not (c.keyword == "EXTNAME" and c.value == "COMPRESSED_IMAGE")
    ]
    # new cards go after the last card that is not commentary, as astropy's append puts them
    at = max((i + 1 for i, c in enumerate(kept) if c.keyword not in _COMMENTARY), default=0)
    body = [c.image.encode("latin-1") for c in kept]
    tail: list[bytes] = []
    for key in ("BSCALE", "BZERO"):
        # every card, so that repeated ones reach the image header and its scaling rule
        # (the last applies, with a warning) instead of the first one silently
        # (counted in logical cards: a long string's CONTINUE cards before them shift the
        # 80-byte positions, fuzz seed 8 case 9463)
        count = table.count(key)
        # a zero is dropped, as astropy's `if bscale:`; a value that is not a number (none,
        # a string, a logical) is kept, so that reading the data names it (issue 51)
        last = table[key, count - 1] if count else 0
        if last or not isinstance(last, int | float) or isinstance(last, bool):
            images = (table.card(key, i).image[8:] for i in range(count))
            tail += [key.ljust(8).encode("ascii") + image.encode("latin-1") for image in images]
    tail += [_renamed(table, z, key) for z, key in _TAIL if z in table]
    tail += _blank(table, notes)
    raw = b"".join(head + body[:at] + tail + body[at:]) + b" " * CARD_SIZE * blanks + END_CARD
    return Header(raw), notes


def _blank(table: Any, notes: list[str]) -> list[bytes]:
    """BLANK for an integer image without one: from ZBLANK, or the default of a ZBLANK
    column (astropy's, with its warning)."""
    bitpix = table.get("ZBITPIX")
    if not isinstance(bitpix, int) or bitpix <= 0 or "BLANK" in table:
        return []
    if "ZBLANK" in table:
        return [_renamed(table, "ZBLANK", "BLANK")]
    tfields = table.get("TFIELDS", 0)
    for i in range(1, (tfields if isinstance(tfields, int) else 0) + 1):
        if str(table.get(f"TTYPE{i}", "")).strip().upper() == "ZBLANK":
            value = -(1 << (bitpix - 1))
            notes.append(
                f"Setting default value {value} for missing BLANK keyword in compressed extension"
            )
            return [format_card("BLANK", value)]
    return []
