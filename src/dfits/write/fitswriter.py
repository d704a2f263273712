"""A FITS file written region by region: pre-sized, headers first, atomic, checksummed.

The contract: a :class:`WritePlan` (a small picklable value: paths and offsets, no data and
no handle) says where every HDU's header and data lie. :func:`create` makes the temporary
file beside the target, sizes it and writes the headers; any number of :func:`write_block`
calls, in any order, in any threads or processes that see the same filesystem, each encode
one block of values into a bounded buffer and ``pwrite`` it, returning the block's
ones'-complement sum; :func:`finalize` puts DATASUM/CHECKSUM into the headers, syncs and
renames the file into place. A retried block writes the same bytes at the same offsets.

Until :func:`finalize` the target is untouched: a failure leaves the old file (or none), and
:func:`abort` removes the temporary file. A process killed mid-write leaves its temporary
file; the next write to the same target on this host removes those of dead processes.

Durability: with ``fsync`` (the default) :func:`finalize` flushes the data (``fdatasync``)
before the rename and the directory after it, so after a power cut the target is the old file
or the complete new one. That flush is the price of a write (about 0.5 s per 256 MiB on a
virtual disk): scratch files can skip it, keeping atomicity against crashes of the process
but not of the machine.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import math
import os
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from dfits.errors import FileChangedError, MissingFileError, OutputExistsError, where
from dfits.format.cards import BLOCK_SIZE
from dfits.format.checksum import add, checksum_card, encode_checksum, place
from dfits.format.imagehdu import Storage
from dfits.io.rangelock import range_lock
from dfits.kernels.checksum import encode_rows, word_sum
from dfits.kernels.quantize import quantize_rows

__all__ = [
    "BUFFER", "HDUSlot", "WritePlan", "abort", "closed_header", "create", "finalize",
    "move_into_place", "pieces", "plan", "pwrite_all", "runs", "summed_header", "temp_name",
    "thread_buffer", "write_block",
]  # fmt: skip

#: Bytes of encoded values a block task holds at once (one buffer per task, reused).
BUFFER = 8 << 20
_SUFFIX = ".dfits-part"
_CARD = 80


@dataclass(frozen=True)
class HDUSlot:
    """Where one HDU goes: its header block (with placeholder sums) and its data."""

    header_offset: int
    header: bytes
    shape: tuple[int, ...]
    storage: Storage
    checksum: bool

    @property
    def data_offset(self) -> int:
        return self.header_offset + len(self.header)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * abs(self.storage.bitpix) // 8 if self.shape else 0

    @property
    def end(self) -> int:
        return self.data_offset + -(-self.nbytes // BLOCK_SIZE) * BLOCK_SIZE


@dataclass(frozen=True)
class WritePlan:
    """The target, its temporary file, and the HDUs in order (``start``: first offset)."""

    target: str
    temp: str
    hdus: tuple[HDUSlot, ...]
    overwrite: bool
    start: int = 0
    fsync: bool = True
    #: ``temp`` is a link to the target, which gets the HDUs in place (:mod:`.appender`)
    append: bool = False

    @property
    def size(self) -> int:
        return self.hdus[-1].end if self.hdus else self.start


def plan(
    target: str | os.PathLike[str],
    headers: Sequence[tuple[bytes, tuple[int, ...], Storage, bool]],
    *,
    overwrite: bool,
    start: int = 0,
    temp: str | None = None,
    fsync: bool = True,
    append: bool = False,
) -> WritePlan:
    """Lay out ``(header block, shape, storage, checksum)`` HDUs from byte ``start`` on.

    Raises :class:`MissingFileError` when the target's directory does not exist and
    :class:`OutputExistsError` when the target exists and ``overwrite`` is false.
    """
    path = os.path.abspath(os.fspath(target))
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise MissingFileError(f"{where(path)}: cannot write: no directory {folder!r}")
    if temp is None:
        if os.path.exists(path) and not overwrite:
            raise OutputExistsError(f"{where(path)}: exists; pass overwrite=True to replace it")
        temp = temp_name(path)
    slots, offset = [], start
    for header, shape, storage, checksum in headers:
        slot = HDUSlot(offset, header, tuple(shape), storage, checksum)
        slots.append(slot)
        offset = slot.end
    return WritePlan(path, temp, tuple(slots), overwrite, start, fsync, append)


def temp_name(path: str) -> str:
    """A fresh temporary name beside ``path`` (host, pid, random), after removing those of
    dead processes."""
    folder, base = os.path.split(path)
    _remove_stale(folder, base)
    host = socket.gethostname().replace(".", "_")
    return os.path.join(folder, f".{base}.{host}.{os.getpid()}.{uuid.uuid4().hex}{_SUFFIX}")


def _remove_stale(folder: str, base: str) -> None:
    """Remove temporary files of this target left by dead processes on this host."""
    host = socket.gethostname().replace(".", "_")
    for name in glob.glob(os.path.join(glob.escape(folder), f".{glob.escape(base)}.*{_SUFFIX}")):
        parts = os.path.basename(name)[len(base) + 2 :].split(".")
        if len(parts) != 4 or parts[0] != host or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        except OSError:
            continue  # alive, owned by another user


def pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    """``pwrite`` all of ``data`` (the kernel may write less than asked)."""
    while len(data):
        n = os.pwrite(fd, data, offset)
        data, offset = data[n:], offset + n


def create(p: WritePlan) -> bool:
    """Create the temporary file at its full size and write every header."""
    # no O_EXCL: the name is this plan's own (uuid), and a retried create (its worker died
    # after it ran) must succeed, rewriting the same headers and keeping the blocks written
    fd = os.open(p.temp, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            # reserve the blocks now: a full disk fails here, before any data is written
            os.posix_fallocate(fd, 0, p.size)
        except (AttributeError, OSError) as err:
            if isinstance(err, OSError) and err.errno == errno.ENOSPC:
                raise
            os.ftruncate(fd, p.size)
        for slot in p.hdus:
            pwrite_all(fd, memoryview(slot.header), slot.header_offset)
    finally:
        os.close(fd)
    return True


def runs(shape: tuple[int, ...], starts: tuple[int, ...], block: tuple[int, ...]):
    """Element offsets of the contiguous runs of a block, and the run length."""
    # axis j heads each run: the axes after it are whole, so a run spans them all
    j = len(shape) - 1
    while j > 0 and block[j] == shape[j]:
        j -= 1
    strides = [math.prod(shape[a + 1 :]) for a in range(len(shape))]
    length = math.prod(block[j:])
    base = sum(s * st for s, st in zip(starts, strides, strict=True))
    grids = np.indices(block[:j], dtype=np.int64).reshape(j, -1) if j else np.zeros((0, 1))
    offsets = base + (np.asarray(strides[:j], dtype=np.int64) @ grids if j else np.zeros(1))
    return np.asarray(offsets, dtype=np.int64).reshape(-1), length


def pieces(nrows: int, length: int, itemsize: int) -> Iterator[tuple[int, int, int, int]]:
    """``(row0, row1, col0, col1)`` pieces of at most :data:`BUFFER` bytes."""
    per = max(1, BUFFER // itemsize)
    if length <= per:
        rows = max(1, per // max(length, 1))
        for r0 in range(0, nrows, rows):
            yield r0, min(r0 + rows, nrows), 0, length
    else:
        for r in range(nrows):
            for c0 in range(0, length, per):
                yield r, r + 1, c0, min(c0 + per, length)


_local = threading.local()


def thread_buffer(itemsize: int, n: int) -> np.ndarray:
    """This thread's encode buffer, at least ``n`` items: allocated once per thread and
    reused, because faulting in a fresh 8 MiB buffer per block costs as much as encoding it."""
    buf = getattr(_local, "buf", None)
    if buf is None or buf.nbytes < n * itemsize:
        buf = _local.buf = np.empty(BUFFER, dtype=np.uint8)
    return buf[: n * itemsize].view(f"u{itemsize}")


def _encode(storage: Storage, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Stored bytes of ``rows`` into ``out`` (quantised or swapped), and each row's sum."""
    if storage.bscale is None:
        return encode_rows(rows, out, storage.flip)
    lo, hi = storage.limits
    bzero = float(storage.bzero or 0.0)
    return quantize_rows(rows, out, storage.bscale, bzero, int(storage.blank or 0), lo, hi)


def write_block(p: WritePlan, hdu: int, values: np.ndarray, starts: tuple[int, ...]) -> int:
    """Encode and write one block of HDU ``hdu`` at ``starts``; return its placed data sum."""
    slot = p.hdus[hdu]
    native = slot.storage.native
    # cast only when the block is not already native values of the stored type
    v = np.ascontiguousarray(values, dtype=native)
    if v.size == 0:
        return 0
    offsets, length = runs(slot.shape, tuple(starts), v.shape)
    rows = v.reshape(len(offsets), length)
    size = abs(slot.storage.bitpix) // 8  # stored bytes per value (quantised: not native's)
    buf = thread_buffer(size, min(v.size, max(1, BUFFER // size)))
    total = 0
    # a shared (read) range lock needs a readable descriptor
    fd = os.open(p.temp, os.O_RDWR if p.append else os.O_WRONLY)
    try:
        if p.append:
            _still_appending(p, fd)
        for r0, r1, c0, c1 in pieces(len(offsets), length, size):
            out = buf[: (r1 - r0) * (c1 - c0)].reshape(r1 - r0, c1 - c0)
            sums = _encode(slot.storage, rows[r0:r1, c0:c1], out)
            for i in range(r1 - r0):
                at = (int(offsets[r0 + i]) + c0) * size
                pwrite_all(fd, memoryview(out[i]).cast("B"), slot.data_offset + at)
                total = add(total, place(int(sums[i]), at))
    finally:
        os.close(fd)
    return total


def _still_appending(p: WritePlan, fd: int) -> None:
    """Hold the new bytes shared while writing, and refuse if the append was rolled back:
    a block still in flight when another failed must not write after the cut."""
    range_lock(fd, p.start, p.size - p.start, exclusive=False)
    try:
        live = os.stat(p.temp).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        live = False
    if not live:
        raise FileChangedError(f"{where(p.target)}: the append was rolled back; block not written")


def closed_header(slot: HDUSlot, parts: Sequence[int]) -> bytes:
    """The header to write once the data are: with DATASUM (the sum of the blocks' ``parts``)
    and a CHECKSUM bringing the HDU's sum to -0, when the HDU is checksummed."""
    if not slot.checksum:
        return slot.header
    datasum = 0
    for part in parts:
        datasum = add(datasum, part)
    return summed_header(slot.header, datasum)


def summed_header(block: bytes, datasum: int) -> bytes:
    """The header ``block`` (with DATASUM/CHECKSUM placeholders) with the data's sum
    ``datasum`` and the CHECKSUM that brings the HDU's sum to -0."""
    header = bytearray(block)
    found = {}
    for i in range(0, len(header), _CARD):
        key = bytes(header[i : i + 8]).rstrip()
        if key in (b"DATASUM", b"CHECKSUM"):
            found[key] = i
    i = found[b"DATASUM"]
    header[i : i + _CARD] = checksum_card("DATASUM", str(datasum), "data unit checksum")
    total = add(word_sum(np.frombuffer(bytes(header), np.uint8)), datasum)
    i = found[b"CHECKSUM"]
    header[i : i + _CARD] = checksum_card("CHECKSUM", encode_checksum(total), "HDU checksum")
    return bytes(header)


def finalize(p: WritePlan, sums: Sequence[Sequence[int]]) -> str:
    """Write the sums of each HDU (``sums[i]``: its blocks'), sync, and move into place."""
    fd = os.open(p.temp, os.O_WRONLY)
    try:
        for slot, parts in zip(p.hdus, sums, strict=True):
            if slot.checksum:
                pwrite_all(fd, memoryview(closed_header(slot, parts)), slot.header_offset)
        if p.fsync:
            # data only: the size was fixed at create, names are the directory's business
            getattr(os, "fdatasync", os.fsync)(fd)
    finally:
        os.close(fd)
    move_into_place(p)
    return p.target


def move_into_place(p: WritePlan) -> None:
    """Rename (``overwrite``) or link the complete temporary file to the target; then sync
    the directory (``fsync``). Takes any plan with ``temp``, ``target``, ``overwrite`` and
    ``fsync``."""
    if p.overwrite:
        os.replace(p.temp, p.target)
    else:
        try:
            # link, unlike rename, refuses to replace a file that appeared meanwhile
            os.link(p.temp, p.target)
        except FileExistsError as err:
            abort(p)
            raise OutputExistsError(
                f"{where(p.target)}: appeared while writing; pass overwrite=True to replace it"
            ) from err
        os.unlink(p.temp)
    if not p.fsync:
        return
    folder = os.open(os.path.dirname(p.target), os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def abort(p: WritePlan) -> None:
    """Remove the temporary file, if any."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(p.temp)
