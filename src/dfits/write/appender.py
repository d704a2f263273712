"""HDUs appended to an existing FITS file in place, without reading or rewriting its HDUs.

The contract: :class:`Append` is one append to one file. Entered, it locks the file
(``flock``: one appender at a time; a second waits up to ``wait`` seconds, then raises
:class:`~dfits.errors.FileBusyError`), rolls back what a crashed appender left, checks the
file (SIMPLE first, whole 2880-byte blocks) and writes a journal beside it holding the old
size. :meth:`Append.extend` lays out the new HDUs after the old end
(:func:`~dfits.write.fitswriter.plan`, target and temporary file alike) and reserves their blocks
as zeros; then any number of :func:`~dfits.write.fitswriter.write_block` calls, in any threads or
processes that see the file, write the data; :meth:`Append.commit` flushes the data, writes
the headers (with DATASUM/CHECKSUM) last, flushes again and removes the journal. An exception
inside the ``with`` block truncates the file back to its old size.

Why the headers go last: until they are written the new blocks are zeros after the last HDU,
which readers (dfits, astropy) take for padding, so the old HDUs stay readable throughout.
The first byte of the first new header is written after all the rest (and flushed between):
before it, the old HDUs end at bytes that are no HDU (a zero byte, then ``TENSION= ...``);
with it, every new HDU is complete. So a reader opening the file meanwhile sees the old HDUs
or all the new ones, never one header of several or a header half written (a write of two
blocks is not atomic for a concurrent read; one byte is). A process killed mid-append
cannot clean up; its journal says where the file ended, and the next append rolls the file
back to that size before it starts, so the file ends up with or without each appended HDU,
never with half of one.

What it reads is the first block and the file size, whatever the number of HDUs: appending
stays linear (10,000 small HDUs cost 10,000 times one). The trade-off: an append does not
check the old HDUs beyond that (``dfits.open`` does).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Sequence
from types import TracebackType

from dfits.errors import FileBusyError, HeaderError, MissingFileError, NotFITSError, where
from dfits.format.cards import BLOCK_SIZE
from dfits.format.imagehdu import Storage
from dfits.io.rangelock import range_lock, range_unlock
from dfits.write import fitswriter
from dfits.write.fitswriter import WritePlan

__all__ = ["Append", "journal_path"]

_JOURNAL = ".dfits-append"


def journal_path(target: str) -> str:
    """The journal beside ``target``: its old size while an append is under way."""
    folder, base = os.path.split(os.path.abspath(target))
    return os.path.join(folder, f".{base}{_JOURNAL}")


class Append:
    """One append to ``target``: lock, roll back leftovers, extend, commit or roll back.

    Parameters
    ----------
    target : str or os.PathLike
        An existing FITS file.
    fsync : bool
        Flush data before the headers, the headers before the journal goes, and the journal
        when it is made, so that a power cut, too, leaves the file with or without the HDUs.
    wait : float
        Seconds to wait for another appender's lock before :class:`FileBusyError`.
    """

    def __init__(self, target: str | os.PathLike[str], *, fsync: bool, wait: float) -> None:
        self.target = os.path.abspath(os.fspath(target))
        self.journal = journal_path(self.target)
        self.fsync = fsync
        self.wait = wait
        self.size = 0
        self._fd = -1
        self._extended = False
        self._link = ""

    def __enter__(self) -> Append:
        try:
            self._fd = os.open(self.target, os.O_RDWR)
        except FileNotFoundError as err:
            raise MissingFileError(f"{where(self.target)}: cannot append: no such file") from err
        try:
            self._lock()
            self._roll_back_leftovers()
            self.size = os.fstat(self._fd).st_size
            self._check()
        except BaseException:
            os.close(self._fd)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is not None and self._extended:
                self._roll_back(self.size, self._link)
        finally:
            os.close(self._fd)  # releases the lock

    def _lock(self) -> None:
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as err:
                if err.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise FileBusyError(
                        f"{where(self.target)}: another process is appending to it "
                        f"(waited {self.wait:g} s for its lock)"
                    ) from err
                time.sleep(0.02)

    def _roll_back_leftovers(self) -> None:
        """A journal found under the lock is a dead appender's: cut its partial HDUs off."""
        try:
            with open(self.journal) as fh:
                text = fh.read()
        except FileNotFoundError:
            return
        try:
            old, link = int(text.split()[0]), text.split()[1]
        except (IndexError, ValueError) as err:
            raise HeaderError(
                f"{where(self.target)}: unreadable append journal {self.journal!r} "
                f"({text[:40]!r}); remove it once the file is checked"
            ) from err
        self._roll_back(old, link)

    def _roll_back(self, size: int, link: str) -> None:
        """Cut the file back to ``size`` once no block writer can write any more."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(link)
        # writers in flight hold the new bytes shared: wait for them (they are bounded)
        range_lock(self._fd, size, 0, exclusive=True)
        try:
            if os.fstat(self._fd).st_size > size:
                self._truncate(size)
        finally:
            range_unlock(self._fd, size, 0)
        os.unlink(self.journal)
        self._extended = False

    def _check(self) -> None:
        head = os.pread(self._fd, 8, 0)
        if head != b"SIMPLE  ":
            raise NotFITSError(
                f"{where(self.target)}: cannot append: not a FITS file (offset 0 holds "
                f"{head!r}, not a SIMPLE card)"
            )
        if self.size % BLOCK_SIZE:
            raise HeaderError(
                f"{where(self.target)}: cannot append: its size {self.size} is not a multiple "
                f"of {BLOCK_SIZE} (a truncated or unpadded last HDU); rewrite it with to_fits"
            )

    def _sync(self) -> None:
        if self.fsync:
            getattr(os, "fdatasync", os.fsync)(self._fd)

    def _truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        if self.fsync:
            os.fsync(self._fd)

    def extend(self, headers: Sequence[tuple[bytes, tuple[int, ...], Storage, bool]]) -> WritePlan:
        """Lay the HDUs out after the old end and reserve their blocks (zeros for now)."""
        # the block writers open the file through a link of this append's own, which a
        # rollback removes first: a writer that opens it after that finds it gone
        link = fitswriter.temp_name(self.target)
        p = fitswriter.plan(
            self.target, headers, overwrite=False, start=self.size, temp=link,
            fsync=self.fsync, append=True,
        )  # fmt: skip
        self.begin(link)
        try:
            # reserve the blocks now: a full disk fails here, before any data is written
            os.posix_fallocate(self._fd, self.size, p.size - self.size)
        except (AttributeError, OSError) as err:
            if isinstance(err, OSError) and err.errno == errno.ENOSPC:
                raise
            os.ftruncate(self._fd, p.size)
        return p

    def begin(self, link: str) -> None:
        """Write the journal (the old size, and ``link``), then make ``link`` to the file: from
        here a failure, or the next append after a crash, cuts the file back."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        fd = os.open(self.journal, flags, 0o644)
        try:
            os.write(fd, f"{self.size} {link}\n".encode())
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._extended = True
        self._link = link
        os.link(self.target, link)

    def publish(self, first: bytes, end: int) -> None:
        """Finish an append whose new bytes, up to ``end``, are written but for the first
        byte of the first new header (``first``): unlink the link, sync, write that byte
        (every new HDU appears at once), sync, remove the journal."""
        os.unlink(self._link)
        self._sync()
        # Until this byte, the old HDUs are followed by bytes that are no HDU ("\0TENSION"),
        # which every reader stops at: see commit
        fitswriter.pwrite_all(self._fd, memoryview(first), self.size)
        self._sync()
        os.unlink(self.journal)
        self._extended = False
        self.size = end

    @property
    def fd(self) -> int:
        """The file, open for reading and writing, under this append's lock."""
        return self._fd

    def commit(self, p: WritePlan, sums: Sequence[Sequence[int]]) -> None:
        """Write the headers after the data (``sums[i]``: HDU ``i``'s block sums), the first
        byte of the first header last."""
        os.unlink(self._link)
        self._sync()
        headers = [
            memoryview(fitswriter.closed_header(slot, parts))
            for slot, parts in zip(p.hdus, sums, strict=True)
        ]
        first = p.hdus[0].header_offset
        fitswriter.pwrite_all(self._fd, headers[0][1:], first + 1)
        for slot, header in zip(p.hdus[1:], headers[1:], strict=True):
            fitswriter.pwrite_all(self._fd, header, slot.header_offset)
        self._sync()
        # Until this byte, the old HDUs are followed by bytes that are no HDU ("\0TENSION"),
        # which every reader stops at; with it, every new HDU is whole: a reader sees all
        # of them or none, never one header of several or a header half written.
        fitswriter.pwrite_all(self._fd, headers[0][:1], first)
        self._sync()
        os.unlink(self.journal)
        self._extended = False
        self.size = p.size
