"""Reading headers through a window: few requests for files of many small HDUs.

The contract: a :class:`Window` serves ``[pos, pos + need)`` from one buffer, calling
``read_at(offset, n)`` only on a miss, with a window that doubles (64 KiB up to 4 MiB) while
the requested positions stay close together — so 10,000 tiny HDUs cost a handful of ranged
reads on an object store — and resets after a long jump. Given the whole file (a memory map)
every request is a hit. :func:`read_header` finds a header's END card through it, searching
at most :data:`MAX_HEADER_BYTES`, and raises :class:`~dfits.errors.HeaderError` when there is
none.

It also stops where the cards stop: a header that runs on into a whole 2880-byte block of
which more than half the bytes lie outside printable ASCII (0x20-0x7E, the only bytes FITS
allows in a header) has run into data (its END card is damaged or missing, as a fuzzed
``END=`` or a swapped block makes it), and :class:`CardsStopError` names the HDU and that
block's offset. Reading on to a later END card would take binary blocks for cards and the
data from a guessed offset (issue 51: 108 cards and a wrong image). A few bad bytes in a card
stay a warning (:mod:`dfits.format.mandatory`): only a block that is mostly not text stops
the header, and the block holding the END card is not judged.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

from dfits.errors import HeaderError, where
from dfits.format.cards import BLOCK_SIZE, CARD_SIZE, find_end

__all__ = [
    "FIRST_READ",
    "MAX_HEADER_BYTES",
    "MIN_WINDOW",
    "Buffer",
    "CardsStopError",
    "Window",
    "cards_stop",
    "read_header",
]

#: The END card must come within this many bytes of a header's start (~800,000 cards).
MAX_HEADER_BYTES = 64 * 2**20
# Header reads start at 64 KiB and double while HDUs are dense, up to 4 MiB: reading through
# a few MiB of small HDUs' data costs less than one more request's latency on object stores.
#: The smallest read the window makes.
MIN_WINDOW = 64 * 1024
_MAX_WINDOW = 4 * 2**20
#: The first read of a file that can be mapped (see :class:`Window`): a primary header and
#: an extension's, as a stamp's file holds, in one ``pread`` (a copy of a fresh 64 KiB
#: buffer faults in as many pages as a map's first slices do).
FIRST_READ = 16 * 1024
#: What the scan accepts as the whole file: ``len``, slicing to bytes and ``find`` (an mmap).
Buffer = bytes | mmap.mmap
_PRINTABLE = bytes(range(0x20, 0x7F))


class CardsStopError(HeaderError):
    """A header runs into bytes that cannot be cards; ``offset`` is where they begin."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def cards_stop(buf: Buffer, start: int, stop: int) -> int:
    """Where the cards in ``buf[start:stop]`` stop: the start of the first whole 2880-byte
    block (counted from ``start``) of which more than half the bytes are not printable
    ASCII, or -1.

    Examples
    --------
    >>> cards = b"COMMENT x".ljust(2880)
    >>> cards_stop(cards + bytes(2880), 0, 5760), cards_stop(cards * 2, 0, 5760)
    (2880, -1)
    """
    for at in range(start, stop - BLOCK_SIZE + 1, BLOCK_SIZE):
        block = buf[at : at + BLOCK_SIZE]
        if 2 * len(block.translate(None, _PRINTABLE)) > BLOCK_SIZE:
            return at
    return -1


class Window:
    """Buffered reads: one ``read_at`` call serves many small headers.

    ``whole`` is the whole file (a memory map: every request is a hit), or a callable that
    maps it, called at the first request past a first small read: a file of one or two
    headers (a stamp's open) then costs one ``pread`` of :data:`FIRST_READ` bytes instead of
    a map, its page faults and its unmap, while a file of many HDUs is still sliced from a
    map (:attr:`whole`, None until there is one).
    """

    def __init__(
        self,
        read_at: Callable[[int, int], bytes],
        size: int | None,
        whole: Buffer | Callable[[], Buffer | None] | None,
    ) -> None:
        self.read_at = read_at
        self.size = size
        self.buf: Buffer = b""
        self.base = 0
        self.window = MIN_WINDOW
        self.whole: Buffer | None = None
        self._mapper = whole if callable(whole) else None
        if whole is not None and self._mapper is None:
            self._use(whole)

    def _use(self, whole: Buffer) -> None:
        # The whole file is addressable (a memory map): every request is a hit.
        self.buf = self.whole = whole
        self.base = 0
        self.size = len(whole)

    def get(self, pos: int, need: int) -> tuple[Buffer, int]:
        """A buffer and its file offset holding ``[pos, pos + need)``, or up to the end."""
        base = self.base
        stop = base + len(self.buf)
        size = self.size
        if base <= pos and (pos + need <= stop or (size is not None and stop >= size)):
            return self.buf, base
        mapper = self._mapper
        if mapper is not None and self.buf:
            self._mapper = None  # a second miss: map the file, once
            whole = mapper()
            if whole is not None:
                self._use(whole)
                return whole, 0
        # Grow the window while the next header follows closely (small, dense HDUs), so a
        # file of 10,000 tiny HDUs costs a handful of reads; reset it after a long jump.
        dense = base <= pos <= stop + self.window
        self.window = min(2 * self.window, _MAX_WINDOW) if dense else MIN_WINDOW
        n = max(need, FIRST_READ if mapper is not None else self.window)
        if size is not None:
            n = max(0, min(n, size - pos))
        # Re-reading the few bytes already held is cheaper than copying them forward.
        self.buf = self.read_at(pos, n) if n else b""
        self.base = pos
        if len(self.buf) < n:
            self.size = pos + len(self.buf)
        return self.buf, pos


def read_header(
    win: Window, buf: Buffer, base: int, pos: int, index: int, filename: str
) -> tuple[bytes, int, int]:
    """Header at ``pos`` (through its END card), its card count and data offset.

    Raises :class:`CardsStopError` where the header runs into bytes that cannot be cards
    (see the module docstring), and :class:`~dfits.errors.HeaderError` without an END card.
    """
    need = BLOCK_SIZE
    judged = 0  # header bytes whose blocks are known to be cards
    while True:
        rel = pos - base
        end = find_end(buf, rel, rel + need)
        # the whole blocks before the END card's block (all searched ones, without an END)
        upto = (end - rel) // BLOCK_SIZE * BLOCK_SIZE if end >= 0 else min(need, len(buf) - rel)
        bad = cards_stop(buf, rel + judged, rel + upto)
        if bad >= 0:
            _stopped(buf, bad, pos + bad - rel, pos, index, filename)
        judged = max(judged, upto // BLOCK_SIZE * BLOCK_SIZE)
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


def _stopped(buf: Buffer, rel: int, offset: int, pos: int, index: int, filename: str) -> None:
    block = buf[rel : rel + BLOCK_SIZE]
    odd = len(block.translate(None, _PRINTABLE))
    cards = (offset - pos) // CARD_SIZE
    raise CardsStopError(
        f"{where(filename, index)}: the header that starts at offset {pos} runs into bytes "
        f"that cannot be cards at offset {offset}, after {cards} cards and no END card: "
        f"{odd} of the 2880 bytes there are outside printable ASCII (the END card is "
        f"damaged or missing); they begin {block[:24]!r}",
        offset,
    )
