"""Reading headers through a window: few requests for files of many small HDUs.

The contract: a :class:`Window` serves ``[pos, pos + need)`` from one buffer, calling
``read_at(offset, n)`` only on a miss, with a window that doubles (64 KiB up to 4 MiB) while
the requested positions stay close together — so 10,000 tiny HDUs cost a handful of ranged
reads on an object store — and resets after a long jump. Given the whole file (a memory map)
every request is a hit. :func:`read_header` finds a header's END card through it, searching
at most :data:`MAX_HEADER_BYTES`, and raises :class:`~dfits.errors.HeaderError` when there is
none.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

from dfits.errors import HeaderError, where
from dfits.format.cards import BLOCK_SIZE, CARD_SIZE, find_end

__all__ = ["MAX_HEADER_BYTES", "MIN_WINDOW", "Buffer", "Window", "read_header"]

#: The END card must come within this many bytes of a header's start (~800,000 cards).
MAX_HEADER_BYTES = 64 * 2**20
# Header reads start at 64 KiB and double while HDUs are dense, up to 4 MiB: reading through
# a few MiB of small HDUs' data costs less than one more request's latency on object stores.
#: The smallest read the window makes.
MIN_WINDOW = 64 * 1024
_MAX_WINDOW = 4 * 2**20
#: What the scan accepts as the whole file: ``len``, slicing to bytes and ``find`` (an mmap).
Buffer = bytes | mmap.mmap


class Window:
    """Buffered reads: one ``read_at`` call serves many small headers."""

    def __init__(
        self, read_at: Callable[[int, int], bytes], size: int | None, whole: Buffer | None
    ) -> None:
        self.read_at = read_at
        self.size = size
        self.buf: Buffer = b""
        self.base = 0
        self.window = MIN_WINDOW
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
        self.window = min(2 * self.window, _MAX_WINDOW) if dense else MIN_WINDOW
        n = max(need, self.window)
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
