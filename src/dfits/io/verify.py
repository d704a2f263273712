"""Verify the DATASUM and CHECKSUM cards of every HDU of a local FITS file.

The contract: :func:`verify_checksum` scans the headers, then sums each HDU's header and data
blocks with the Numba word-sum kernel, in pieces summed on a thread pool (the kernel releases
the GIL) through read-only maps, and reports per HDU and per card one of ``"ok"``,
``"mismatch"`` (with the expected and computed values), ``"absent"`` or ``"unparseable"``.
CHECKSUM is right when the whole HDU sums to ones'-complement zero (as cfitsio's
``ffvcks`` checks), so a legacy or differently laid-out card still verifies when its sum
is right.
"""

from __future__ import annotations

import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from dfits.format.checksum import HDU_OK, add, decode_datasum
from dfits.format.layout import scan
from dfits.io.local import LocalSource

__all__ = ["CardCheck", "HDUCheck", "verify_checksum"]

#: Bytes summed per thread-pool task (a multiple of 4 keeps every piece word-aligned).
PIECE = 64 << 20


@dataclass(frozen=True)
class CardCheck:
    """The verdict on one card: ``status`` and, on a mismatch, what was expected/computed."""

    status: str
    expected: str | int | None = None
    computed: str | int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class HDUCheck:
    """The verdicts on one HDU's DATASUM and CHECKSUM."""

    index: int
    name: str
    datasum: CardCheck
    checksum: CardCheck

    @property
    def ok(self) -> bool:
        """True when neither card is wrong or unparseable (absent cards are not errors)."""
        return all(c.status in ("ok", "absent") for c in (self.datasum, self.checksum))


def _sum(view: memoryview | bytes, pool: ThreadPoolExecutor) -> int:
    # the kernel (and numba) load at the first sum, not with ``dfits.verify_checksum``
    from dfits.kernels.checksum import word_sum

    buf = np.frombuffer(view, dtype=np.uint8)
    pieces = [buf[i : i + PIECE] for i in range(0, buf.size, PIECE)]
    total = 0
    for part in pool.map(word_sum, pieces):
        total = add(total, part)
    return total


def _datasum_check(header, computed: int) -> CardCheck:
    if "DATASUM" not in header:
        return CardCheck("absent")
    value = header["DATASUM"]
    if isinstance(value, str) and not value.strip():
        return CardCheck("absent")  # blank: "not computed", by the convention
    expected = decode_datasum(value)
    if expected is None:
        return CardCheck("unparseable", value, computed)
    return CardCheck("ok" if expected == computed else "mismatch", expected, computed)


def _checksum_check(header, total: int) -> CardCheck:
    if "CHECKSUM" not in header:
        return CardCheck("absent")
    value = header["CHECKSUM"]
    if not isinstance(value, str) or len(value) != 16 or not value.isascii():
        return CardCheck("unparseable", str(value), None)
    ok = total in (HDU_OK, 0)
    return CardCheck("ok" if ok else "mismatch", hex(HDU_OK), hex(total))


def verify_checksum(path: str | os.PathLike[str], threads: int | None = None) -> list[HDUCheck]:
    """Check DATASUM and CHECKSUM of every HDU of a local file.

    Parameters
    ----------
    path : str or os.PathLike
        A local FITS file (or an object with a ``filename``, such as a ``dfits.FitsFile``).
    threads : int, optional
        Threads summing pieces of the data (default: the CPU count).

    Returns
    -------
    list of HDUCheck
        One per HDU, in order.
    """
    text = os.fspath(getattr(path, "filename", path))
    source = LocalSource.open(text)
    whole = source.mapping()
    try:
        layout = scan(source.read, source.size, filename=text, whole=whole)
        view = memoryview(whole) if whole is not None else memoryview(b"")
        out = []
        with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:
            for h in layout.hdus:
                end = min(h.end, source.size)
                data = _sum(view[h.data_offset : end], pool)
                head = _sum(view[h.header_offset : h.data_offset], pool)
                out.append(HDUCheck(
                    h.index, h.name, _datasum_check(h.header, data),
                    _checksum_check(h.header, add(head, data)),
                ))  # fmt: skip
        view.release()
        return out
    finally:
        if isinstance(whole, mmap.mmap):
            whole.close()
        source.close()  # a check holds nothing open after it, whatever it found
