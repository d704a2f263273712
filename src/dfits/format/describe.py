"""Describing one HDU from its header, shared between alike headers.

The contract: :func:`build_hdu` turns a header found by the scan into an
:class:`~dfits.format.geometry.HDULayout` — kind, XTENSION, name, version, BITPIX, shape, data
size and decode spec — checking the mandatory keywords (:mod:`dfits.format.mandatory`) and
turning recoverable oddities into one ``DfitsWarning`` each. Everything but EXTVER follows
from the keywords and the bytes of a few cards, so headers with the same keywords (the 10,000
extensions of one file) share one description through a :class:`Memo` and bounded caches;
:func:`extend_run` appends, in bulk, the HDUs of a run whose headers match the last one
(:mod:`dfits.format.runs`). Descriptions carrying messages (warnings, a decode error) name
their HDU and are never shared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from operator import itemgetter
from typing import TypeVar

import numpy as np

from dfits.errors import HeaderError, where
from dfits.format.cards import BLOCK_SIZE, CARD_SIZE
from dfits.format.compressed import compressed_name, describe_compressed
from dfits.format.dtypes import DecodeSpec, parse_decode_spec
from dfits.format.geometry import HDULayout
from dfits.format.header import Header, index_cards
from dfits.format.keywords import KeywordIndex
from dfits.format.mandatory import MANDATORY, check_mandatory
from dfits.format.runs import alike_run, fixed_mask
from dfits.format.scaling import scaling_values
from dfits.format.window import Buffer

__all__ = ["Memo", "build_hdu", "extend_run"]

# A3DTABLE: the binary table's name before its standardisation (astropy reads it too).
_XTENSION_KIND = {
    "IMAGE": "image",
    "TABLE": "table",
    "BINTABLE": "bintable",
    "A3DTABLE": "bintable",
}
_OPTIONAL = ("EXTNAME", "GROUPS", "ZIMAGE", "BSCALE", "BZERO", "BLANK")
_new = object.__new__
_T = TypeVar("_T")
_Facts = tuple[str, str | None, str, int, tuple[int, ...], int, DecodeSpec | None]
# Caches shared between HDUs, cleared when full: 10,000 alike extensions parse one header.
_Plan = tuple[Callable[[bytes], tuple[bytes, ...]] | None, int, tuple[slice, ...]]
_PLANS: dict[object, _Plan] = {}
_MAX_KEY_BYTES = 16 * 1024
_PLAIN_INT = re.compile(rb" *([+-]?[0-9]{1,18}) *(?:/[ -~]*)?")
_FACTS: dict[tuple, _Facts] = {}


class Memo:
    """The previous HDU's description, for the next header with the same keywords."""

    __slots__ = (
        "cards", "extver", "facts", "hit", "key", "keywords", "notes", "ranges", "stopped"
    )  # fmt: skip

    def __init__(self) -> None:
        #: warnings met so far, emitted by the scan's caller (pointing at the user's call)
        self.notes: list[str] = []
        self.keywords: object = None
        self.cards: Callable[[bytes], tuple[bytes, ...]] | None = None
        self.extver = -1
        self.ranges: tuple[slice, ...] = ()
        self.key: tuple = ()
        self.facts: _Facts | None = None
        #: True when the last HDU was described exactly like the one before it.
        self.hit = False
        #: why the scan stopped before the end of the file (see FileLayout.stopped), or None
        self.stopped: str | None = None


def build_hdu(
    index: int, pos: int, raw: bytes, ncards: int, data_offset: int, filename: str, memo: Memo
) -> HDULayout:
    keywords, bad = index_cards(raw, ncards)
    header = Header._scanned(raw, ncards, keywords, bad)
    if keywords is memo.keywords:
        cards, extver = memo.cards, memo.extver
    else:
        cards, extver, memo.ranges = _PLANS.get(keywords) or _plan(header)
        memo.keywords, memo.cards, memo.extver, memo.facts = keywords, cards, extver, None
    memo.hit = False
    # Everything but EXTVER follows from the keywords and the bytes of a few cards: alike
    # headers (10,000 extensions of one file) share one description.
    key = (keywords, index == 0, cards(raw)) if cards and not bad else None
    if key is not None and memo.facts is not None and key == memo.key:
        facts = memo.facts
        memo.hit = True
    else:
        facts = None if key is None else _FACTS.get(key)
        if facts is None:
            notes: list[str] = []
            facts = _describe(header, index, pos, filename, notes)
            memo.notes.extend(notes)
            decode = facts[-1]
            # Messages (warnings, a decode error) name this HDU: never share them with another.
            if key and not notes and (decode is None or decode.error is None):
                _remember(_FACTS, key, facts)
            else:
                key = None
        memo.key, memo.facts = (key, facts) if key is not None else ((), None)
    kind, xtension, name, bitpix, shape, data_size, decode = facts
    extra = None
    if kind == "compressed_image":
        # The Z keywords are not part of the shared description: never share, never run.
        memo.hit = False
        memo.key, memo.facts = (), None
        # astropy's name: the image header's EXTNAME (a second EXTNAME card after the
        # default COMPRESSED_IMAGE is outside the shared facts' key, so found here)
        name = compressed_name(header)
        extra = _compressed(header, where(filename, index, name), memo.notes)
        decode = extra.pop("decode")
        if "tiles" in extra:
            shape = extra["tiles"].shape
    ver = _extver(header, raw, keywords, extver) if extver >= 0 else 1
    # Frozen dataclasses set each field through object.__setattr__, which costs as much as
    # the rest of a small HDU's scan; fill the instance dict directly instead.
    hdu = _new(HDULayout)
    hdu.__dict__.update(
        index=index, kind=kind, xtension=xtension, name=name,
        ver=ver if _is_int(ver) else 1, header_offset=pos, data_offset=data_offset,
        data_size=data_size, bitpix=bitpix, shape=shape, header=header, decode=decode,
    )  # fmt: skip
    if extra:
        hdu.__dict__.update(extra)
    return hdu


def _compressed(header: Header, w: str, notes: list[str]) -> dict:
    try:
        tiles, image, _, decode = describe_compressed(header, w, notes)
    except HeaderError as err:
        # The file stays readable: this HDU's header is the table's, and asking for its
        # data raises this error (as a bad BSCALE does for an image).
        return {"decode": DecodeSpec(8, np.dtype("u1"), error=str(err))}
    return {"tiles": tiles, "image_header": image, "decode": decode}


def _extver(header: Header, raw: bytes, keywords: KeywordIndex, i: int) -> object:
    # EXTVER differs in every extension, so its value is never in the parse cache: read a
    # plain integer field directly (fixed or free format, optional comment); anything else
    # goes through the full card parser.
    start = (i if keywords.starts is None else keywords.starts[i]) * CARD_SIZE
    if raw[start + 8 : start + 10] == b"= ":
        m = _PLAIN_INT.fullmatch(raw, start + 10, start + CARD_SIZE)
        if m is not None:
            return int(m[1])
    return header.value_at(i)


def _plan(header: Header) -> _Plan:
    """Facts fixed by the keywords alone, shared by headers with the same keywords.

    A function giving the bytes of the cards :func:`_describe` reads (every card up to the
    last mandatory one, then EXTNAME, GROUPS, ...), None when this header's description is
    not worth sharing; where EXTVER is (-1: absent); and the byte ranges the function reads.
    """
    keywords = header.keyword_index
    extver = header.index("EXTVER") if "EXTVER" in header else -1
    if not keywords.shared:
        return None, extver, ()  # a one-off (HIERARCH, lower case, giant): describe it each time
    mandatory = [
        header.locate(k, n)
        for k in header
        if MANDATORY.fullmatch(k.upper())
        for n in range(header.count(k))
    ]
    ranges = [slice(0, (1 + max(mandatory, default=0)) * CARD_SIZE), slice(0, 0)]
    for key in _OPTIONAL:
        if key in header:
            start = header.locate(key) * CARD_SIZE
            ranges.append(slice(start, start + len(header.card_bytes(header.index(key)))))
    # Keys of more than 16 KiB (hundreds of axes) would crowd the cache: never share those.
    small = sum(r.stop - r.start for r in ranges) <= _MAX_KEY_BYTES
    if not small:
        return _remember(_PLANS, keywords, (None, extver, ()))
    return _remember(_PLANS, keywords, (itemgetter(*ranges), extver, tuple(ranges)))


def extend_run(
    hdus: list[HDULayout],
    memo: Memo,
    whole: Buffer,
    start: int,
    stride: int,
    count: int,
    raw: bytes,
    ncards: int,
) -> int:
    """Append the HDUs at ``start + k * stride`` (``k < count``) described like the last one.

    Returns how many matched (a prefix); see :mod:`dfits.format.runs` for what must match.
    """
    template = hdus[-1]
    keywords = memo.keywords
    starts = keywords.starts  # type: ignore[attr-defined]
    extver = memo.extver
    card = -1 if extver < 0 else (extver if starts is None else starts[extver])
    raws, vers = alike_run(
        whole, start, stride, count, raw, fixed_mask(ncards, memo.ranges, raw), card
    )
    fields = dict(template.__dict__)
    index = template.index
    scanned = Header._scanned
    for k, (head, ver) in enumerate(zip(raws, vers, strict=True)):
        pos = start + k * stride
        index += 1
        hdu = _new(HDULayout)
        d = hdu.__dict__
        d.update(fields)
        d["index"] = index
        d["ver"] = ver
        d["header_offset"] = pos
        d["data_offset"] = pos + BLOCK_SIZE
        d["header"] = scanned(head, ncards, keywords, ())  # type: ignore[arg-type]
        hdus.append(hdu)
    return len(raws)


def _describe(header: Header, index: int, pos: int, filename: str, notes: list[str]) -> _Facts:
    """Kind, XTENSION, name, BITPIX, shape, data size and decode spec of one HDU."""
    primary = index == 0
    get = header.get
    extname = get("EXTNAME")
    name = str(extname) if extname is not None else ("PRIMARY" if primary else "")
    w = where(filename, index, name)
    bitpix, naxes, pcount, gcount = check_mandatory(header, primary, pos, w, notes)
    xtension = None
    if primary:
        kind = "random_groups" if get("GROUPS") is True else "primary"
    else:
        value = get("XTENSION")
        xtension = value.strip() if isinstance(value, str) else str(value)
        kind = _XTENSION_KIND.get(xtension.upper(), "unknown")
        if kind == "bintable" and get("ZIMAGE") is True:
            kind = "compressed_image"
    axes = naxes[1:] if kind == "random_groups" else naxes
    data_size = abs(bitpix) // 8 * gcount * (pcount + math.prod(axes)) if naxes else 0
    decode = None
    if naxes and kind in ("primary", "image"):
        scaling = scaling_values(header, w, notes)
        decode, messages = parse_decode_spec(bitpix, *scaling, where=w)
        notes += messages
    return kind, xtension, name, bitpix, tuple(reversed(naxes)), data_size, decode


def _remember(cache: dict, key: object, value: _T) -> _T:
    if len(cache) >= 4096:
        cache.clear()
    cache[key] = value
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
