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
* a header that runs into bytes that cannot be cards (a 2880-byte block, before any END card,
  of which more than half the bytes are not printable ASCII: its END card is damaged and the
  header has run into data; see :mod:`dfits.format.window`) → for the first HDU a
  ``HeaderError`` naming the offset; for a later one, as astropy does with an extension it
  cannot read, the scan stops there: the earlier HDUs are kept and readable,
  ``FileLayout.stopped`` holds the ``HeaderError``'s message (the HDU and the offset where
  the cards stop), and one ``DfitsWarning`` says it. Nothing is read from a guessed offset;
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

Warnings are gathered during the scan and emitted by :func:`scan` when it returns (or raises),
``stacklevel`` frames up, so that they point at the user's ``dfits.open`` call rather than at
a line of the scan.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable

from dfits.errors import DfitsWarning, HeaderError, NotFITSError, TruncatedFileError, where
from dfits.format.cards import BLOCK_SIZE, CARD_SIZE, END_CARD
from dfits.format.describe import Memo, build_hdu, extend_run
from dfits.format.geometry import FileLayout, HDULayout
from dfits.format.window import (
    MAX_HEADER_BYTES,
    MIN_WINDOW,
    Buffer,
    CardsStopError,
    Window,
    read_header,
)

__all__ = ["MAX_HEADER_BYTES", "MAX_OFFSET", "FileLayout", "HDULayout", "scan"]

#: Largest offset dfits accepts when the file size is unknown (no file is larger).
MAX_OFFSET = 2**63 - 1

_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\x1f\x9d": "compress (.Z)", b"PK": "zip"}
# Alike HDUs checked per numpy pass (a few MiB of headers), and how many HDUs the scan reads
# one by one after a run breaks before it tries another (so files of unlike HDUs pay nothing).
_RUN_BATCH = 4096
_RUN_BACKOFF = 16


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
                f"{w}: not a FITS file: starts with {head[:8]!r}, a {kind} signature. "
                "dfits reads FITS data in place (mapped or by byte ranges), which a "
                "whole-file compressed stream does not allow; decompress it first, or "
                "tile-compress its images with fpack (dfits reads those lazily)"
            )
    raise NotFITSError(f"{w}: not a FITS file: offset 0 holds {head[:30]!r}, not a SIMPLE card")


def scan(
    read_at: Callable[[int, int], bytes],
    size: int | None,
    *,
    filename: str,
    progress: Callable[[int, int | None, int], None] | None = None,
    whole: Buffer | Callable[[], Buffer | None] | None = None,
    stacklevel: int = 1,
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
    whole : bytes, mmap.mmap or callable, optional
        The whole file, when the caller can map it (or a callable mapping it, called only
        if the headers reach past a first small read: see
        :class:`~dfits.format.window.Window`): headers are then sliced out of it
        instead of being read (and copied) through a window, which for a file of many small
        HDUs also copies their data. ``read_at`` and ``size`` are then not used for reading.
    stacklevel : int
        Where the warnings of the scan point, as ``warnings.warn`` counts: 1 is the line
        calling :func:`scan`, 2 its caller, and so on.

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
    memo = Memo()
    try:
        return _scan(read_at, size, filename, progress, whole, memo)
    finally:
        if paused:
            gc.enable()
        for note in memo.notes:
            warnings.warn(note, DfitsWarning, stacklevel=stacklevel + 1)


def _scan(
    read_at: Callable[[int, int], bytes],
    size: int | None,
    filename: str,
    progress: Callable[[int, int | None, int], None] | None,
    whole: Buffer | Callable[[], Buffer | None] | None,
    memo: Memo,
) -> FileLayout:
    win = Window(read_at, size, whole)
    hdus: list[HDULayout] = []
    pos = index = retry = 0
    buf: Buffer = b""
    base = stop = 0
    # The loop body is the cost of opening a file of 10,000 small HDUs: the common case (a
    # header of one block, inside the current window) is inlined, the rest goes to helpers.
    while True:
        if pos < base or pos + BLOCK_SIZE > stop:
            buf, base = win.get(pos, BLOCK_SIZE)
            stop = base + len(buf)
        rel = pos - base
        head = buf[rel : rel + 8]
        if head != (b"XTENSION" if index else b"SIMPLE  "):
            _no_more_hdus(buf, rel, pos, index, win.size, filename, memo.notes)
            break
        end = buf.find(END_CARD, rel, rel + BLOCK_SIZE)
        if end >= 0 and not (end - rel) % CARD_SIZE:
            ncards = (end - rel) // CARD_SIZE
            # Through the END card: the padding is blanks, and 10,000 small headers would
            # otherwise hold 2880 bytes each (measured: 13 % of the scan in a fresh process).
            raw = buf[rel : end + CARD_SIZE]
            data_offset = pos + BLOCK_SIZE
        else:
            if (got := _read_long(win, buf, base, pos, index, filename, memo)) is None:
                break  # the cards stop before an END card: the HDUs before it stay
            raw, ncards, data_offset = got
            buf, base = win.buf, win.base
            stop = base + len(buf)
        hdus.append(hdu := build_hdu(index, pos, raw, ncards, data_offset, filename, memo))
        index += 1
        data_size = hdu.data_size
        nxt = data_offset - (-data_size // BLOCK_SIZE) * BLOCK_SIZE
        if win.size is None or nxt >= win.size:
            nxt = _check_extent(hdu, pos + (ncards + 1) * CARD_SIZE, win, filename, memo.notes)
            if nxt < 0:
                break
        if memo.hit and index >= retry and data_offset == pos + BLOCK_SIZE:
            # Two alike HDUs in a row: check the following ones in bulk.
            at = (pos, nxt, raw, ncards, index)
            index, nxt, retry = _bulk(hdus, memo, win, at, retry, progress)
        pos = nxt
        if progress is not None and not index % 64:
            progress(pos, size, index)
    if progress is not None:
        progress(size if size is not None else pos, size, index)
    return FileLayout(filename, size, tuple(hdus), memo.stopped)


def _bulk(hdus, memo, win, at, retry, progress) -> tuple[int, int, int]:
    """:func:`_run` after the HDU ``at`` = (its position, the next one's, its raw cards, their
    count, the next HDU's index) when the file is one buffer: the new index, next position
    and index at which to try again."""
    pos, nxt, raw, ncards, index = at
    if win.whole is None:
        return index, nxt, retry
    added = _run(hdus, memo, win.whole, pos, nxt, raw, ncards)
    index, nxt = index + added, nxt + added * (nxt - pos)
    if added < _RUN_BATCH:
        retry = index + _RUN_BACKOFF
    if progress is not None and added:
        progress(nxt, win.size, index)
    return index, nxt, retry


def _read_long(
    win: Window, buf: Buffer, base: int, pos: int, index: int, filename: str, memo: Memo
) -> tuple[bytes, int, int] | None:
    """:func:`read_header`; None where a later HDU's cards stop before an END card (the
    reason in ``memo.stopped`` and its notes), as astropy stops at an extension it cannot
    read. The first HDU's raises: there is no file without it."""
    try:
        return read_header(win, buf, base, pos, index, filename)
    except CardsStopError as err:
        if not index:
            raise
        memo.stopped = str(err)
        memo.notes.append(f"{err}; the HDUs before it are read, none after")
        return None


def _no_more_hdus(
    buf: Buffer, rel: int, pos: int, index: int, size: int | None, filename: str, notes: list[str]
) -> None:
    """No HDU at ``pos``: not FITS at all (offset 0), or a warning about what follows."""
    if not index:
        _not_fits(buf[:BLOCK_SIZE], filename)
    if buf[rel : rel + 8]:
        notes.append(_trailing(buf[rel : rel + MIN_WINDOW], pos, size, filename))


def _run(
    hdus: list[HDULayout], memo: Memo, whole: Buffer, pos: int, nxt: int, raw: bytes, ncards: int
) -> int:
    """How many HDUs from ``nxt`` on repeat the one at ``pos`` (appended to ``hdus``)."""
    stride = nxt - pos
    count = min((len(whole) - 1 - nxt) // stride, _RUN_BATCH)
    return extend_run(hdus, memo, whole, nxt, stride, count, raw, ncards) if count else 0


def _trailing(rest: bytes, pos: int, size: int | None, filename: str) -> str:
    # Judged on the bytes already read (up to a window): never read a long tail just to warn.
    count = f"{size - pos} bytes" if size is not None else "bytes"
    if not rest.strip(b"\0 "):
        what = "zero or blank padding"
    else:
        what = f"not an HDU (no XTENSION card): {rest[:30]!r}"
    return f"{where(filename)}: {count} after the last HDU, at offset {pos}, ignored: {what}"


def _check_extent(
    hdu: HDULayout, header_end: int, win: Window, filename: str, notes: list[str]
) -> int:
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
        notes.append(
            f"{where(filename, hdu.index, hdu.name)}: the last block is not padded to 2880 "
            f"bytes: the file ends at offset {size}, padding would end at {end}; all data "
            "is present"
        )
    return -1
