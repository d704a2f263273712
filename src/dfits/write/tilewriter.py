"""A tile-compressed FITS file written by chunk tasks: scratch heaps, then one assembly.

The contract: a :class:`ZPlan` (picklable: paths, tile specs and cards, no data) lists the
HDUs — an empty primary, then one ``ZIMAGE`` binary table per image. :func:`create` makes the
(empty) temporary file beside the target. Each :func:`write_chunk`, in any thread or process
that sees the same filesystem, compresses the whole tiles of one chunk
(:func:`~dfits.kernels.inttiles.int_batches`, :func:`~dfits.kernels.tileencode.encode_block`)
into a scratch file of its own beside the target, holding about
:data:`~dfits.write.fitswriter.BUFFER` bytes at once (a buffer per thread, reused), and returns
only numbers: per tile its table row, byte counts and ZSCALE/ZZERO, and the chunk's
ones'-complement sum. :func:`assemble` then writes, per HDU, the table header and rows (now
that the heap's size and the descriptors are known), copies the scratch heaps after them in
chunk order (``copy_file_range``: no pass through memory), sets DATASUM/CHECKSUM from the
chunks' sums placed at their offsets (no second pass), syncs and renames into place, and
removes the scratch files.

Failures: :func:`abort` removes the temporary file, waits for the chunk tasks in flight, then
removes every scratch file. Each chunk task holds a shared lock (:mod:`dfits.io.rangelock`) on
one byte far past the end of the temporary file while it writes, and starts only if the file
still exists once it holds it; :func:`abort` takes that byte exclusively after the unlink. So
when a failed write returns (dask returns at the first failure while other tasks still run),
no scratch file is left nor made later. Those of a killed process carry its pid and are removed
by the next write to the target (:func:`~dfits.write.fitswriter.temp_name`). A retried chunk
task rewrites its scratch file whole: the same bytes.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dfits.errors import DataError
from dfits.format.checksum import add, place
from dfits.format.header import Header
from dfits.format.imagehdu import UserCard, image_header
from dfits.format.ztable import TileSpec, table_header, table_rows
from dfits.io.rangelock import range_lock
from dfits.kernels.checksum import encode_rows, value_sum, word_sum
from dfits.kernels.inttiles import KINDS, int_batches
from dfits.kernels.tileencode import encode_block
from dfits.write import fitswriter
from dfits.write.fitswriter import BUFFER, pwrite_all, summed_header

__all__ = [
    "ZHDU", "ChunkTiles", "ZPlan", "abort", "append_plan", "assemble", "create", "plan",
    "remove_scratch", "write_appended", "write_chunk",
]  # fmt: skip

_SUFFIX = ".dfits-part"
# the byte chunk tasks hold shared while they write: past any file, so no data lock meets it
_IN_FLIGHT = 1 << 62
_NO_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}
_local = threading.local()


@dataclass(frozen=True)
class ZHDU:
    """One HDU: a compressed image (``spec``), or the empty primary (``spec`` None, whose
    complete ``header`` is given)."""

    spec: TileSpec | None
    header: bytes = b""
    cards: tuple[UserCard, ...] = ()
    extname: str | None = None
    checksum: bool = True
    what: str = ""

    def table_header(
        self, heap: int, longest: tuple[int, int], zsums: tuple[str, str] | None = None
    ) -> bytes:
        assert self.spec is not None
        return table_header(
            self.spec, heap, longest, cards=list(self.cards), extname=self.extname,
            checksum=self.checksum, what=self.what, zsums=zsums,
        )  # fmt: skip

    def zsums(self, datasum: int) -> tuple[str, str]:
        """ZHECKSUM and ZDATASUM: the CHECKSUM and DATASUM of the uncompressed image HDU
        (the header dfits writes for these values and cards, the image's stored values),
        whose data sum is ``datasum``."""
        assert self.spec is not None
        spec = self.spec
        head = image_header(spec.shape, spec.storage, primary=False, cards=list(self.cards),
                            extname=self.extname, what=self.what)  # fmt: skip
        return Header(summed_header(head, datasum))["CHECKSUM"], str(datasum)


@dataclass(frozen=True)
class ZPlan:
    """The target, its temporary file, and the HDUs in order."""

    target: str
    temp: str
    hdus: tuple[ZHDU, ...]
    overwrite: bool
    fsync: bool = True


@dataclass(frozen=True)
class ChunkTiles:
    """What a chunk task returns: per tile its row, (compressed, fallback) byte counts and
    ZSCALE/ZZERO; the chunk's scratch size and ones'-complement sum; the sum of its values
    as an uncompressed image stores them, placed at their offsets (0 unchecksummed)."""

    rows: np.ndarray
    sizes: np.ndarray
    scale: np.ndarray
    zero: np.ndarray
    nbytes: int
    checksum: int
    image_sum: int = 0


def plan(target: str, hdus: Sequence[ZHDU], *, overwrite: bool, fsync: bool = True) -> ZPlan:
    """Plan the write; the checks of :func:`~dfits.write.fitswriter.plan` (missing directory,
    existing target) and of every table header (the caller's cards) happen here."""
    base = fitswriter.plan(target, [], overwrite=overwrite, fsync=fsync)
    for hdu in hdus:
        if hdu.spec is not None:
            hdu.table_header(0, (0, 0))
    return ZPlan(base.target, base.temp, tuple(hdus), overwrite, fsync)


def scratch_name(p: ZPlan, hdu: int, chunk: int) -> str:
    """The scratch file of one chunk: the temporary name's owner (host, pid) and id kept, so
    that stale ones are recognised like temporary files."""
    return f"{p.temp[: -len(_SUFFIX)]}-{hdu}-{chunk}{_SUFFIX}"


def create(p: ZPlan) -> bool:
    """Create the empty temporary file (chunk tasks write only while it exists)."""
    os.close(os.open(p.temp, os.O_WRONLY | os.O_CREAT, 0o644))
    return True


def write_chunk(
    p: ZPlan, hdu: int, chunk: int, values: np.ndarray, starts: tuple[int, ...]
) -> ChunkTiles:
    """Compress the tiles of one chunk (at ``starts``, whole tiles) into its scratch file."""
    v = np.asarray(values)
    guard = _in_flight(p)
    try:
        return _write_chunk(p, hdu, chunk, v, tuple(starts))
    finally:
        os.close(guard)  # releases the shared lock


def _in_flight(p: ZPlan) -> int:
    """Open the temporary file and hold its in-flight byte shared; raise if the write was
    abandoned (the file is gone once the lock is held: :func:`abort` unlinks, then waits)."""
    try:
        guard = os.open(p.temp, os.O_RDONLY)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{p.temp}: the write was abandoned") from err
    try:
        range_lock(guard, _IN_FLIGHT, 1, exclusive=False)
        if not os.path.exists(p.temp):
            raise FileNotFoundError(f"{p.temp}: the write was abandoned")
    except BaseException:
        os.close(guard)
        raise
    return guard


def _write_chunk(
    p: ZPlan, hdu: int, chunk: int, v: np.ndarray, starts: tuple[int, ...]
) -> ChunkTiles:
    spec = p.hdus[hdu].spec
    assert spec is not None
    rows, sizes, scale, zero, sums = [], [], [], [], []
    name = scratch_name(p, hdu, chunk)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    written = total = 0
    try:
        # each batch is written before the next is encoded into the same buffer
        for batch in _batches(p, hdu, spec, v, starts):
            rows.append(batch.rows)
            sizes.append(batch.sizes)
            scale.append(batch.scale)
            zero.append(batch.zero)
            sums.append(batch.stored_sum)
            total, written = _flush(fd, batch.pieces, total, written)
    finally:
        os.close(fd)
    if not os.path.exists(p.temp):
        # the write failed elsewhere and was cleaned up while this task ran
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise FileNotFoundError(f"{p.temp}: the write was abandoned")
    image = 0
    if p.hdus[hdu].checksum and None not in sums:
        for part in sums:  # summed as the kernel read the values (quantised floats)
            image = add(image, part)
    elif p.hdus[hdu].checksum:
        image = _image_sum(spec, v, starts)
    return ChunkTiles(np.concatenate(rows), np.concatenate(sizes), np.concatenate(scale),
                      np.concatenate(zero), written, total, image)  # fmt: skip


def _batches(p: ZPlan, hdu: int, spec: TileSpec, v: np.ndarray, starts: tuple[int, ...]):
    """The chunk's tiles in batches, into this thread's heap buffer (integers: inttiles)."""
    out = _heap_buffer()
    if spec.storage.bitpix > 0 and spec.algorithm in KINDS:  # one kernel call per batch
        yield from int_batches(spec, v, starts, out)
        return
    try:
        yield from encode_block(spec, v, starts, out)
    except ValueError as err:  # values the algorithm cannot hold (PLIO's range)
        raise DataError(f"{p.hdus[hdu].what}, {err}") from err


def _heap_buffer() -> np.ndarray:
    """This thread's buffer of compressed bytes (:data:`BUFFER`), allocated once, reused."""
    buf = getattr(_local, "heap", None)
    if buf is None:
        buf = _local.heap = np.empty(BUFFER, np.uint8)
    return buf


def _image_sum(spec: TileSpec, values: np.ndarray, starts: tuple[int, ...]) -> int:
    """The ones'-complement sum of a chunk's values stored as an uncompressed image (for
    ZDATASUM), placed at their byte offsets: the encode kernel of plain writes, into this
    thread's bounded buffer, so the chunk is read once more and never copied whole."""
    storage = spec.storage
    v = np.ascontiguousarray(values, dtype=storage.native)
    if storage.bitpix < 0 and storage.bscale is None:
        # floats stored as they are, 4 or 8 bytes: every run starts on a word boundary, so
        # the placed sum is the plain sum of their words (a read pass, no encode buffer)
        return value_sum(v)
    offsets, length = fitswriter.runs(spec.shape, starts, v.shape)
    rows = v.reshape(len(offsets), length)
    size = abs(storage.bitpix) // 8
    # the pieces' bound is the plain writer's, whose buffer this is
    buf = fitswriter.thread_buffer(size, min(v.size, max(1, fitswriter.BUFFER // size)))
    total = 0
    for r0, r1, c0, c1 in fitswriter.pieces(len(offsets), length, size):
        out = buf[: (r1 - r0) * (c1 - c0)].reshape(r1 - r0, c1 - c0)
        sums = encode_rows(rows[r0:r1, c0:c1], out, storage.flip)
        for i in range(r1 - r0):
            total = add(total, place(int(sums[i]), (int(offsets[r0 + i]) + c0) * size))
    return total


def _flush(fd: int, pieces: list, total: int, written: int) -> tuple[int, int]:
    # one piece (RICE_1: a view of the heap buffer) is written as it is; tiles compressed one
    # by one are joined first (their compressed bytes only), for one write and one sum
    raw = memoryview(pieces[0] if len(pieces) == 1 else b"".join(pieces)).cast("B")
    if len(raw):
        pwrite_all(fd, raw, written)
        total = add(total, place(word_sum(np.frombuffer(raw, np.uint8)), written))
    return total, written + len(raw)


def _descriptors(spec: TileSpec, chunks: Sequence[ChunkTiles]):
    """Per tile (bytes, heap offset) of both columns, ZSCALE/ZZERO; each chunk's heap
    offset; the heap's size."""
    n = spec.ntiles
    spans, fallback = np.zeros((n, 2), np.int64), np.zeros((n, 2), np.int64)
    scale, zero, seen = np.zeros(n), np.zeros(n), np.zeros(n, np.int64)
    bases, base = [], 0
    for ch in chunks:
        bases.append(base)
        ends = base + np.cumsum(ch.sizes.sum(axis=1))
        at = ends - ch.sizes.sum(axis=1)
        spans[ch.rows, 0], spans[ch.rows, 1] = ch.sizes[:, 0], at
        fallback[ch.rows, 0], fallback[ch.rows, 1] = ch.sizes[:, 1], at + ch.sizes[:, 0]
        scale[ch.rows], zero[ch.rows] = ch.scale, ch.zero
        seen[ch.rows] += 1
        base += ch.nbytes
    if not (seen == 1).all():
        raise RuntimeError(f"tiles written {seen.min()}..{seen.max()} times, not once each")
    for d in (spans, fallback):
        d[d[:, 0] == 0, 1] = 0  # empty arrays point at the heap's start
    return spans, fallback, scale, zero, bases, base


def _copy(src: str, dst: int, at: int) -> None:
    """Append the scratch file ``src`` at byte ``at`` of ``dst``, kernel to kernel."""
    fd = os.open(src, os.O_RDONLY)
    try:
        size, done = os.fstat(fd).st_size, 0
        while done < size:
            try:
                n = os.copy_file_range(fd, dst, size - done, done, at + done)
            except (AttributeError, OSError) as err:
                # no kernel copy between these files (other filesystems, old kernels): through
                # a bounded buffer; a real failure (a full disk) is raised
                if isinstance(err, OSError) and err.errno not in _NO_COPY:
                    raise
                n = os.pwrite(dst, os.pread(fd, min(BUFFER, size - done), done), at + done)
            if n <= 0:
                raise OSError(f"{src}: could not copy byte {done} of {size}")
            done += n
    finally:
        os.close(fd)


def _write_hdu(
    p: ZPlan, i: int, chunks: Sequence[ChunkTiles], fd: int, at: int, hold: bool = False
) -> int:
    """Write HDU ``i`` at byte ``at``, but for its first byte when ``hold`` (an append
    writes that last); return where the next one starts."""
    hdu = p.hdus[i]
    if hdu.spec is None:
        head = summed_header(hdu.header, 0) if hdu.checksum else hdu.header
        pwrite_all(fd, memoryview(head), at)
        return at + len(head)
    spans, fallback, scale, zero, bases, heap = _descriptors(hdu.spec, chunks)
    longest = (int(spans[:, 0].max()), int(fallback[:, 0].max()))
    table = table_rows(hdu.spec, heap, spans, fallback, scale, zero)
    zsums = None
    if hdu.checksum:
        image_sum = 0
        for ch in chunks:
            image_sum = add(image_sum, ch.image_sum)
        zsums = hdu.zsums(image_sum)
    head = hdu.table_header(heap, longest, zsums)
    if hdu.checksum:
        datasum = word_sum(np.frombuffer(table, np.uint8))
        for ch, base in zip(chunks, bases, strict=True):
            datasum = add(datasum, place(ch.checksum, len(table) + base))
        head = summed_header(head, datasum)
    pwrite_all(fd, memoryview(head + table)[int(hold) :], at + int(hold))
    start = at + len(head) + len(table)
    for k, base in enumerate(bases):
        _copy(scratch_name(p, i, k), fd, start + base)
    end = start + heap
    pad = -(end - at - len(head)) % 2880
    pwrite_all(fd, memoryview(b"\0" * pad), end)
    return end + pad


def assemble(p: ZPlan, results: Sequence[Sequence[ChunkTiles]]) -> str:
    """Write every HDU into the temporary file, sync, move it into place; remove scratch."""
    fd = os.open(p.temp, os.O_WRONLY)
    try:
        at = 0
        for i, chunks in enumerate(results):
            at = _write_hdu(p, i, chunks, fd, at)
        os.ftruncate(fd, at)
        if p.fsync:
            getattr(os, "fdatasync", os.fsync)(fd)
    finally:
        os.close(fd)
    fitswriter.move_into_place(p)  # type: ignore[arg-type]
    remove_scratch(p)
    return p.target


def append_plan(target: str, link: str, hdus: Sequence[ZHDU], *, fsync: bool) -> ZPlan:
    """The plan of compressed HDUs appended to ``target``; ``link`` (the append's own link to
    the file) stands for the temporary file: chunk tasks write only while it exists."""
    for hdu in hdus:
        hdu.table_header(0, (0, 0))  # the caller's cards are checked before anything is written
    return ZPlan(target, link, tuple(hdus), overwrite=True, fsync=fsync)


def write_appended(p: ZPlan, results: Sequence[Sequence[ChunkTiles]], fd: int, at: int):
    """Write the HDUs of an append at byte ``at`` of ``fd``, all but the first byte of the
    first header; return ``(that byte, the new end)``. Removes the scratch files."""
    try:
        end = at
        for i, chunks in enumerate(results):
            end = _write_hdu(p, i, chunks, fd, end, hold=i == 0)
        os.ftruncate(fd, end)
    finally:
        remove_scratch(p)
    return b"X", end  # every table header begins with its XTENSION card


def remove_scratch(p: ZPlan) -> None:
    pattern = glob.escape(p.temp[: -len(_SUFFIX)]) + "-*" + _SUFFIX
    for name in glob.glob(pattern):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def abort(p: ZPlan) -> None:
    """Remove the temporary file, wait for the chunk tasks in flight, then remove every
    scratch file (in that order: see the module)."""
    try:
        guard = os.open(p.temp, os.O_RDWR)  # an exclusive lock needs write access
    except FileNotFoundError:
        guard = -1
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p.temp)
        if guard >= 0:
            range_lock(guard, _IN_FLIGHT, 1, exclusive=True)
    finally:
        if guard >= 0:
            os.close(guard)
    remove_scratch(p)
