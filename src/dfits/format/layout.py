"""Where everything is in a FITS file: one pass over the headers, none over the data.

The contract: :func:`scan` turns a ``read_at(offset, n)`` function into a :class:`FileLayout`
— for every HDU its kind, header, byte offsets, data size, shape and decode spec — reading
headers through a window that grows while HDUs are small and dense (few ranged requests for
remote files) and jumping over data without reading it. All offsets are Python ints.

Bad input (see ``DESIGN.md``; every message names the file, HDU, keyword or offset, value):

* empty, not FITS, no SIMPLE card first (a bare XTENSION included) → ``NotFITSError``;
* ``SIMPLE = F`` → read as described by its header, one ``DfitsWarning`` (astropy makes the
  whole rest of the file the data of one non-standard HDU);
* no END card within the file, or within :data:`MAX_HEADER_BYTES` of the header's start
  (bounding the search when the size is unknown or the file is huge) → ``HeaderError``;
* a mandatory keyword missing or duplicated, BITPIX illegal, NAXIS not in 0..999, NAXISn,
  PCOUNT or GCOUNT not a non-negative integer, or a mandatory card with bytes outside
  printable ASCII → ``HeaderError``;
* mandatory keywords present once each but out of order (``astropy/verify.fits``: NAXIS before
  BITPIX, which astropy reads silently) → read, one ``DfitsWarning``;
* an extension without PCOUNT/GCOUNT (astrogo's IMAGE extensions, which astropy reads
  silently) → PCOUNT = 0, GCOUNT = 1, one ``DfitsWarning``;
* data (or header) past the end of the file → ``TruncatedFileError`` naming the byte range and
  the size; the last block short of its padding only → read, one ``DfitsWarning``;
* bytes after the last HDU that do not start with XTENSION: earlier HDUs kept, one
  ``DfitsWarning`` with the offset, whether they are junk or zero/blank padding (astropy warns
  on both too, e.g. the 240 blanks closing ``astropy/header_with_time_wcslib71.fits``);
* non-mandatory cards with bytes outside printable ASCII: kept raw, one warning per HDU;
* BLANK on float data, BLANK not an integer: one warning each (from ``parse_decode_spec``);
  BSCALE/BZERO unusable: header readable, ``decode.error`` set.
"""

from __future__ import annotations

import gc
import math
import mmap
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TypeVar

from dfits.errors import DfitsWarning, HeaderError, NotFITSError, TruncatedFileError, where
from dfits.format.cards import BLOCK_SIZE, CARD_SIZE, END_CARD, find_end
from dfits.format.dtypes import DecodeSpec, parse_decode_spec
from dfits.format.header import MANDATORY, Header, check_mandatory, index_cards
from dfits.format.keywords import KeywordIndex
from dfits.format.runs import alike_run, fixed_mask

__all__ = ["MAX_HEADER_BYTES", "FileLayout", "HDULayout", "scan"]

#: The END card must come within this many bytes of a header's start (~800,000 cards).
MAX_HEADER_BYTES = 64 * 2**20
#: Largest offset dfits accepts when the file size is unknown (no file is larger).
MAX_OFFSET = 2**63 - 1

# Header reads start at 64 KiB and double while HDUs are dense, up to 4 MiB: reading through
# a few MiB of small HDUs' data costs less than one more request's latency on object stores.
_MIN_WINDOW = 64 * 1024
_MAX_WINDOW = 4 * 2**20
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\x1f\x9d": "compress (.Z)", b"PK": "zip"}
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
#: What ``scan`` accepts as the whole file: ``len``, slicing to bytes and ``find`` (an mmap).
Buffer = bytes | mmap.mmap
# Caches shared between HDUs, cleared when full: 10,000 alike extensions parse one header.
_Plan = tuple[Callable[[bytes], tuple[bytes, ...]] | None, int, tuple[slice, ...]]
_PLANS: dict[object, _Plan] = {}
# Alike HDUs checked per numpy pass (a few MiB of headers), and how many HDUs the scan reads
# one by one after a run breaks before it tries another (so files of unlike HDUs pay nothing).
_RUN_BATCH = 4096
_RUN_BACKOFF = 16
_MAX_KEY_BYTES = 16 * 1024
_PLAIN_INT = re.compile(rb" *([+-]?[0-9]{1,18}) *(?:/[ -~]*)?")
_FACTS: dict[tuple, _Facts] = {}


@dataclass(frozen=True)
class HDULayout:
    """Geometry and header of one HDU.

    Attributes
    ----------
    index : int
        Position in the file (0 = primary).
    kind : str
        ``primary``, ``image``, ``bintable``, ``table``, ``random_groups``,
        ``compressed_image`` (a BINTABLE with ``ZIMAGE = T``) or ``unknown``.
    xtension : str or None
        The XTENSION value (None for the primary HDU).
    name : str
        EXTNAME (``''`` if none; ``'PRIMARY'`` for a primary HDU without one, as astropy).
    ver : int
        EXTVER (1 if none).
    header_offset, data_offset : int
        Byte offsets of the header and of the data.
    data_size : int
        Bytes of data, unpadded: ``|BITPIX|/8 * GCOUNT * (PCOUNT + prod(NAXISn))``.
    bitpix : int
    shape : tuple of int
        NAXISn in numpy order (reversed); ``()`` when NAXIS = 0.
    header : Header
    decode : DecodeSpec or None
        For primary and image HDUs with NAXIS > 0.
    """

    index: int
    kind: str
    xtension: str | None
    name: str
    ver: int
    header_offset: int
    data_offset: int
    data_size: int
    bitpix: int
    shape: tuple[int, ...]
    # Left out of ==, hash() and repr(): the other fields identify the HDU, and a header
    # (a mapping, thousands of characters long) is neither hashable nor readable in a repr.
    header: Header = field(compare=False, repr=False)
    decode: DecodeSpec | None = None

    @property
    def padded_size(self) -> int:
        """Data size rounded up to whole 2880-byte blocks."""
        return -(-self.data_size // BLOCK_SIZE) * BLOCK_SIZE

    @property
    def end(self) -> int:
        """Offset just after the padded data: where the next HDU starts."""
        return self.data_offset + self.padded_size

    @property
    def has_data(self) -> bool:
        """True when the HDU has at least one byte of data."""
        return self.data_size > 0


@dataclass(frozen=True)
class FileLayout:
    """Every HDU of a file, in order (``size`` None when the source did not know it)."""

    filename: str
    size: int | None
    hdus: tuple[HDULayout, ...]


class _Window:
    """Buffered reads: one ``read_at`` call serves many small headers."""

    def __init__(
        self, read_at: Callable[[int, int], bytes], size: int | None, whole: Buffer | None
    ) -> None:
        self.read_at = read_at
        self.size = size
        self.buf: Buffer = b""
        self.base = 0
        self.window = _MIN_WINDOW
        if whole is not None:
            # The whole file is addressable (a memory map): every request is a hit.
            self.buf = whole
            self.size = len(whole)

    def get(self, pos: int, need: int) -> tuple[Buffer, int]:
        """A buffer and its file offset holding ``[pos, pos + need)``, or up to the end."""
        base = self.base
        stop = base + len(self.buf)
        size = self.size
        if base <= pos and (pos + need <= stop or (size is not None and stop >= size)):
            return self.buf, base
        # Grow the window while the next header follows closely (small, dense HDUs), so a
        # file of 10,000 tiny HDUs costs a handful of reads; reset it after a long jump.
        dense = base <= pos <= stop + self.window
        self.window = min(2 * self.window, _MAX_WINDOW) if dense else _MIN_WINDOW
        n = max(need, self.window)
        if size is not None:
            n = max(0, min(n, size - pos))
        # Re-reading the few bytes already held is cheaper than copying them forward.
        self.buf = self.read_at(pos, n) if n else b""
        self.base = pos
        if len(self.buf) < n:
            self.size = pos + len(self.buf)
        return self.buf, pos


def _not_fits(head: bytes, filename: str) -> None:
    w = where(filename)
    if not head:
        raise NotFITSError(f"{w}: not a FITS file: the file is empty")
    if head.startswith(b"XTENSION"):
        raise NotFITSError(
            f"{w}: not a FITS file: it starts with an XTENSION card {head[:30]!r}, "
            "not SIMPLE (a bare extension; the primary HDU is missing)"
        )
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            raise NotFITSError(
                f"{w}: not a FITS file: starts with {head[:8]!r}, a {kind} signature; "
                "decompress it first"
            )
    raise NotFITSError(f"{w}: not a FITS file: offset 0 holds {head[:30]!r}, not a SIMPLE card")


def _read_header(
    win: _Window, buf: Buffer, base: int, pos: int, index: int, filename: str
) -> tuple[bytes, int, int]:
    """Header at ``pos`` (through its END card), its card count and data offset."""
    need = BLOCK_SIZE
    while True:
        rel = pos - base
        end = find_end(buf, rel, rel + need)
        if end >= 0:
            data_offset = pos - (-(end - rel + CARD_SIZE) // BLOCK_SIZE) * BLOCK_SIZE
            return buf[rel : end + CARD_SIZE], (end - rel) // CARD_SIZE, data_offset
        have = len(buf) - rel
        if have < need or need >= MAX_HEADER_BYTES:
            searched = min(have, need)
            limit = "the end of the file" if have < need else "the header size limit"
            raise HeaderError(
                f"{where(filename, index)}: no END card in the header that starts at offset "
                f"{pos}: searched {searched} bytes to {limit} (offset {pos + searched}); "
                f"the header begins {buf[rel : rel + 40]!r}"
            )
        need = min(need * 4, MAX_HEADER_BYTES)
        buf, base = win.get(pos, need)


def scan(
    read_at: Callable[[int, int], bytes],
    size: int | None,
    *,
    filename: str,
    progress: Callable[[int, int | None, int], None] | None = None,
    whole: Buffer | None = None,
) -> FileLayout:
    """Read every header of a FITS file and work out where each HDU's data lies.

    Parameters
    ----------
    read_at : callable
        ``read_at(offset, n)`` returns up to ``n`` bytes at ``offset`` (fewer only at the end).
    size : int or None
        File size in bytes when known; None for sources of unknown size.
    filename : str
        Used in messages.
    progress : callable, optional
        Called as ``progress(offset, size, hdus_so_far)`` every 64 HDUs and at the end, so
        that callers can show a scan of a slow (remote) many-HDU file; does no I/O here.
    whole : bytes or mmap.mmap, optional
        The whole file, when the caller can map it: headers are then sliced out of it
        instead of being read (and copied) through a window, which for a file of many small
        HDUs also copies their data. ``read_at`` and ``size`` are then not used for reading.

    Returns
    -------
    FileLayout

    Raises
    ------
    NotFITSError, HeaderError, TruncatedFileError
        See the module docstring for which input gives which.

    Examples
    --------
    >>> blob = b"".join(c.ljust(80) for c in [
    ...     b"SIMPLE  = T", b"BITPIX  = 16", b"NAXIS   = 1", b"NAXIS1  = 3", b"END"])
    >>> blob = blob.ljust(2880) + bytes(2880)
    >>> layout = scan(lambda offset, n: blob[offset : offset + n], len(blob), filename="x")
    >>> [(h.kind, h.shape, h.data_offset, h.data_size) for h in layout.hdus]
    [('primary', (3,), 2880, 6)]
    """
    # The scan creates a few objects per HDU and no reference cycles; the cyclic collector
    # would still walk every live object each time they pile up (measured: 7 % of opening
    # 10,000 HDUs). Paused for the scan only, and only if it was running.
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _scan(read_at, size, filename, progress, whole)
    finally:
        if paused:
            gc.enable()


def _scan(
    read_at: Callable[[int, int], bytes],
    size: int | None,
    filename: str,
    progress: Callable[[int, int | None, int], None] | None,
    whole: Buffer | None,
) -> FileLayout:
    win = _Window(read_at, size, whole)
    hdus: list[HDULayout] = []
    memo = _Memo()
    pos = 0
    index = 0
    buf: Buffer = b""
    base = stop = 0
    retry = 0
    # The loop body is the cost of opening a file of 10,000 small HDUs: the common case (a
    # header of one block, inside the current window) is inlined, the rest goes to helpers.
    while True:
        if pos < base or pos + BLOCK_SIZE > stop:
            buf, base = win.get(pos, BLOCK_SIZE)
            stop = base + len(buf)
        rel = pos - base
        head = buf[rel : rel + 8]
        if head != (b"XTENSION" if index else b"SIMPLE  "):
            if not index:
                _not_fits(buf[:BLOCK_SIZE], filename)
            if head:
                _trailing(buf[rel : rel + _MIN_WINDOW], pos, win.size, filename)
            break
        end = buf.find(END_CARD, rel, rel + BLOCK_SIZE)
        if end >= 0 and not (end - rel) % CARD_SIZE:
            ncards = (end - rel) // CARD_SIZE
            # Through the END card: the padding is blanks, and 10,000 small headers would
            # otherwise hold 2880 bytes each (measured: 13 % of the scan in a fresh process).
            raw = buf[rel : end + CARD_SIZE]
            data_offset = pos + BLOCK_SIZE
        else:
            raw, ncards, data_offset = _read_header(win, buf, base, pos, index, filename)
            buf, base = win.buf, win.base
            stop = base + len(buf)
        hdu = _build_hdu(index, pos, raw, ncards, data_offset, filename, memo)
        hdus.append(hdu)
        index += 1
        data_size = hdu.data_size
        nxt = data_offset - (-data_size // BLOCK_SIZE) * BLOCK_SIZE
        if win.size is None or nxt >= win.size:
            nxt = _check_extent(hdu, pos + (ncards + 1) * CARD_SIZE, win, filename)
            if nxt < 0:
                break
        if memo.hit and whole is not None and index >= retry and data_offset == pos + BLOCK_SIZE:
            # Two alike HDUs in a row: check the following ones in bulk.
            stride = nxt - pos
            count = min((len(whole) - 1 - nxt) // stride, _RUN_BATCH)
            added = _extend_run(hdus, memo, whole, nxt, stride, count, raw, ncards) if count else 0
            index += added
            nxt += added * stride
            if added < _RUN_BATCH:
                retry = index + _RUN_BACKOFF
            if progress is not None and added:
                progress(nxt, size, index)
        pos = nxt
        if progress is not None and not index % 64:
            progress(pos, size, index)
    if progress is not None:
        progress(size if size is not None else pos, size, index)
    return FileLayout(filename, size, tuple(hdus))


def _trailing(rest: bytes, pos: int, size: int | None, filename: str) -> None:
    # Judged on the bytes already read (up to a window): never read a long tail just to warn.
    count = f"{size - pos} bytes" if size is not None else "bytes"
    if not rest.strip(b"\0 "):
        what = "zero or blank padding"
    else:
        what = f"not an HDU (no XTENSION card): {rest[:30]!r}"
    warnings.warn(
        f"{where(filename)}: {count} after the last HDU, at offset {pos}, ignored: {what}",
        DfitsWarning,
        stacklevel=3,
    )


def _check_extent(hdu: HDULayout, header_end: int, win: _Window, filename: str) -> int:
    """Raise if the data runs past the end; where the next HDU starts, -1 if none."""
    size = win.size
    data_offset = hdu.data_offset
    data_size = hdu.data_size
    data_end = data_offset + data_size
    end = data_offset - (-data_size // BLOCK_SIZE) * BLOCK_SIZE
    if size is None:
        if data_end > MAX_OFFSET:
            raise HeaderError(
                f"{where(filename, hdu.index, hdu.name)}: data would end at offset "
                f"{data_end}, beyond any file (shape {hdu.shape!r}, BITPIX {hdu.bitpix})"
            )
        return end
    if end < size:
        return end
    needed = (data_offset, data_end) if data_size else (hdu.header_offset, header_end)
    if needed[1] > size:
        raise TruncatedFileError(
            f"{where(filename, hdu.index, hdu.name)}: truncated file: the "
            f"{'data' if data_size else 'header'} needs bytes {needed[0]} to "
            f"{needed[1]} (shape {hdu.shape!r}, BITPIX {hdu.bitpix}, {data_size} bytes "
            f"of data) but the file holds {size} bytes"
        )
    if end > size:
        warnings.warn(
            f"{where(filename, hdu.index, hdu.name)}: the last block is not padded to 2880 "
            f"bytes: the file ends at offset {size}, padding would end at {end}; all data "
            "is present",
            DfitsWarning,
            stacklevel=3,
        )
    return -1


class _Memo:
    """The previous HDU's description, for the next header with the same keywords."""

    __slots__ = ("cards", "extver", "facts", "hit", "key", "keywords", "ranges")

    def __init__(self) -> None:
        self.keywords: object = None
        self.cards: Callable[[bytes], tuple[bytes, ...]] | None = None
        self.extver = -1
        self.ranges: tuple[slice, ...] = ()
        self.key: tuple = ()
        self.facts: _Facts | None = None
        #: True when the last HDU was described exactly like the one before it.
        self.hit = False


def _build_hdu(
    index: int, pos: int, raw: bytes, ncards: int, data_offset: int, filename: str, memo: _Memo
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
            for note in notes:
                warnings.warn(note, DfitsWarning, stacklevel=3)
            decode = facts[-1]
            # Messages (warnings, a decode error) name this HDU: never share them with another.
            if key and not notes and (decode is None or decode.error is None):
                _remember(_FACTS, key, facts)
            else:
                key = None
        memo.key, memo.facts = (key, facts) if key is not None else ((), None)
    kind, xtension, name, bitpix, shape, data_size, decode = facts
    ver = _extver(header, raw, keywords, extver) if extver >= 0 else 1
    # Frozen dataclasses set each field through object.__setattr__, which costs as much as
    # the rest of a small HDU's scan; fill the instance dict directly instead.
    hdu = _new(HDULayout)
    hdu.__dict__.update(
        index=index, kind=kind, xtension=xtension, name=name,
        ver=ver if _is_int(ver) else 1, header_offset=pos, data_offset=data_offset,
        data_size=data_size, bitpix=bitpix, shape=shape, header=header, decode=decode,
    )  # fmt: skip
    return hdu


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


def _extend_run(
    hdus: list[HDULayout],
    memo: _Memo,
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
        scaling = (get("BSCALE"), get("BZERO"), get("BLANK"))
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
