"""Local files: a picklable source that reads byte ranges and maps chunk ranges.

A :class:`LocalSource` holds only the path and the identity (size, mtime) seen at open. Each
process opens its own descriptor on first use (cached per process id, so forked workers never
share one), which is what lets chunk tasks travel to dask worker processes. The cache of
descriptors is bounded (:data:`MAX_DESCRIPTORS`, least recently used closed first) and
:meth:`LocalSource.close` empties it of one file, so a session that opens thousands of files,
or files since deleted, holds a bounded number of descriptors (see :mod:`dfits.io.descriptors`).

Chunk reads use ``mmap`` of just the chunk's byte range, not ``pread`` into a buffer: measured
on this project's 2-core machine, summing a 2 GiB float64 file in 128 MiB chunks with 2 threads
took 0.09 s through per-chunk mmaps against 0.77 s through ``preadv`` into fresh buffers (the
buffer allocation faults and the copy cost more than the swap). Mapping per chunk (instead of
the whole file) keeps resident memory proportional to the chunks in flight: the mapping goes
away when the last view of it is garbage-collected.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import FileChangedError, MissingFileError, TruncatedFileError
from dfits.io.descriptors import MAX_DESCRIPTORS, Descriptors
from dfits.io.ranges import Runs

__all__ = ["MAX_DESCRIPTORS", "FileIdentity", "LocalSource", "descriptors"]

_PAGE = mmap.ALLOCATIONGRANULARITY
#: Chunk maps start and end on multiples of this (a PMD: 2 MiB on x86-64 and arm64 with 4 KiB
#: pages). Linux caches a file read sequentially in folios of up to this size and maps a
#: folio with one page-table entry only where the map covers the whole folio; a map that
#: starts or ends inside one maps it 4 KiB at a time (see :meth:`LocalSource.map`).
_FOLIO = 2 << 20
#: A strided map has the gaps between its runs split off (see :func:`_split_gaps`) only when
#: its runs are at least this long and at most :data:`_SPLIT_MAX_RUNS` many: then one
#: ``madvise`` per run (about a microsecond) is small beside reading the run, and the map stays
#: a few hundred kernel areas at most (Linux allows 65530 per process by default).
_SPLIT_MIN_RUN = 256 << 10
_SPLIT_MAX_RUNS = 256
_SPLIT_ADVICE = getattr(mmap, "MADV_DONTDUMP", None)
#: A sparse map (``map(sparse=True)``) gets this advice: no read-ahead around a fault.
#: Without it, a fault reads ``read_ahead_kb`` around the page (8 MiB on this project's VM),
#: and fault-around maps what that cached. Measured on a sparse 100 x 16384 x 16384 float32
#: cube (``section[k, ::16, ::16]``, 1024 rows of 64 KiB, 1 MiB apart): 1,000 MB of the map
#: resident without the advice (the whole plane), 64 MB with it (the rows read).
_SPARSE_ADVICE = getattr(mmap, "MADV_RANDOM", None)
#: this process's open descriptors, keyed by path and identity: a file replaced under the same
#: path (atomic rewrite) gets a new descriptor instead of reading the old, deleted inode
descriptors = Descriptors()


@dataclass(frozen=True)
class FileIdentity:
    """What must not change between open and read: size, modification time and inode (a
    file renamed into place, as ``to_fits`` writes, is another inode even when its size and
    time match the old one's)."""

    size: int
    mtime_ns: int
    ino: int = 0

    @classmethod
    def of(cls, st: os.stat_result) -> FileIdentity:
        return cls(st.st_size, st.st_mtime_ns, st.st_ino)


@dataclass(frozen=True)
class LocalSource:
    """A local file addressed by byte ranges; safe to pickle into task graphs."""

    path: str
    identity: FileIdentity
    #: chunks are mapped from the page cache, not fetched (see :meth:`map`)
    mappable = True

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> LocalSource:
        """Stat ``path`` and return a source for it (``FileNotFoundError`` if missing)."""
        path = os.fspath(path)
        try:
            st = os.stat(path)
        except FileNotFoundError as err:
            raise MissingFileError(f"file {path!r}: no such file or directory") from err
        if not stat.S_ISREG(st.st_mode):  # the stat above, not a second one (isfile)
            raise MissingFileError(f"file {path!r}: a directory (or device), not a regular file")
        source = cls(os.path.abspath(path), FileIdentity.of(st))
        descriptors.reopen(source._key)
        return source

    @property
    def size(self) -> int:
        """File size in bytes, as seen at open."""
        return self.identity.size

    @property
    def token(self) -> tuple[str, int, int]:
        """Deterministic identity used in dask names."""
        return (self.path, self.identity.size, self.identity.mtime_ns)

    @property
    def _key(self) -> tuple[str, int, int]:
        # a file replaced under the same path is another key: it never reads the old inode
        return (self.path, self.identity.size, self.identity.mtime_ns)

    @contextlib.contextmanager
    def _fd(self) -> Iterator[int]:
        """The descriptor, held for the ``with`` block (see :meth:`_acquire`)."""
        entry = self._acquire()
        try:
            yield entry.fd
        finally:
            descriptors.release(entry)

    def _acquire(self) -> Any:
        """The held descriptor entry; the caller releases it (``descriptors.release``).

        A descriptor is checked when it is opened (by path: the file may have been replaced
        or removed since ``dfits.open``), so no byte read through it comes from another file;
        the same file changed in place is caught by :meth:`check` (each map checks).
        """
        try:
            return descriptors.acquire(self._key, self._verify)
        except FileChangedError:
            raise
        except FileNotFoundError as err:
            raise FileChangedError(f"file {self.path!r} was removed since it was opened") from err
        except OSError as err:
            raise FileChangedError(f"file {self.path!r} can no longer be read: {err}") from err

    def _verify(self, fd: int) -> None:
        """Raise :class:`FileChangedError` if ``fd``'s file is not the one opened."""
        now = FileIdentity.of(os.fstat(fd))
        if now != self.identity:
            was = self.identity
            raise FileChangedError(
                f"file {self.path!r} changed since it was opened (size {was.size} -> "
                f"{now.size}, mtime_ns {was.mtime_ns} -> {now.mtime_ns}, inode {was.ino} -> "
                f"{now.ino})"
            )

    def close(self) -> None:
        """Close this process's descriptor of the file (reopened if the source is used again).

        Maps already made keep their own reference to the file until they are released.
        Reads after this (a task still running, an array computed later) open a descriptor
        for their own read only (:mod:`dfits.io.descriptors`), until the file is opened again.
        """
        descriptors.close(self._key)

    def check(self) -> None:
        """Raise :class:`FileChangedError` if the file is not the one opened."""
        with self._fd() as fd:
            self._verify(fd)

    def read(self, offset: int, nbytes: int) -> bytes:
        """Return up to ``nbytes`` bytes at ``offset`` (fewer only at end of file)."""
        if nbytes <= 0:
            return b""
        entry = self._acquire()  # not _fd(): a context manager costs as much as the pread
        try:
            return os.pread(entry.fd, nbytes, offset)
        finally:
            descriptors.release(entry)

    def read_exact(self, offset: int, nbytes: int) -> bytes:
        """Return exactly ``nbytes`` bytes at ``offset`` or raise :class:`TruncatedFileError`."""
        data = self.read(offset, nbytes)
        if len(data) != nbytes:
            raise TruncatedFileError(
                f"file {self.path!r}: needed bytes {offset}..{offset + nbytes} "
                f"but the file has {self.size} bytes"
            )
        return data

    def map(
        self,
        offset: int,
        nbytes: int,
        *,
        populate: bool = True,
        runs: Runs | None = None,
        sparse: bool = False,
    ) -> np.ndarray:
        """Return a read-only ``uint8`` view of ``nbytes`` at ``offset``, backed by an mmap.

        ``populate`` pre-faults the pages in one system call (``MAP_POPULATE``); callers pass
        False when they will touch only part of the range (strided chunk views). ``runs``,
        the byte runs inside the range that will be read (a strided chunk), lets the map
        keep the pages between them out of the process's resident memory (see
        :func:`_split_gaps`). ``sparse`` says the map will be read at scattered pages
        (stamps, spectra, decimated planes): it is advised ``MADV_RANDOM`` (see
        :data:`_SPARSE_ADVICE`); dense chunk reads leave it off, as they want read-ahead.
        """
        if nbytes == 0:
            return np.empty(0, np.uint8)
        if offset + nbytes > self.size:
            raise TruncatedFileError(
                f"file {self.path!r}: needed bytes {offset}..{offset + nbytes} "
                f"but the file has {self.size} bytes"
            )
        if populate:
            # pre-faulting reads every mapped page: map only the asked-for bytes
            start, stop = offset - offset % _PAGE, offset + nbytes
        else:
            start, stop = _folio_span(offset, offset + nbytes, self.size)
        flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
        # the map holds a duplicate of the descriptor: it outlives this block and the cache
        with self._fd() as fd:
            self._verify(fd)  # the descriptor mapped is the one checked
            m = mmap.mmap(fd, stop - start, flags=flags, prot=mmap.PROT_READ, offset=start)
        if runs is not None and not populate:
            _split_gaps(m, start, runs)
        if sparse and _SPARSE_ADVICE is not None:
            with contextlib.suppress(OSError):  # refused: more read-ahead, values the same
                m.madvise(_SPARSE_ADVICE)
        return np.frombuffer(m, np.uint8, count=nbytes, offset=offset - start)

    def mapping(self) -> mmap.mmap | None:
        """A read-only map of the whole file for a header scan, or None if it cannot be mapped.

        Pages are faulted in only where headers are sliced out, so a scan of many small HDUs
        never copies their data; the caller closes the map when the scan is done.
        """
        if not self.size:
            return None  # mmap refuses empty files; the scan reports them from a read
        try:
            with self._fd() as fd:
                m = mmap.mmap(fd, self.size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            return None  # e.g. a file shrunk since open: the read path reports it
        return m


def _split_gaps(m: mmap.mmap, start: int, runs: Runs) -> None:
    """Split the pages between ``runs`` off the map ``m`` (file offset ``start``) as areas of
    their own, so that a folio shared by a run and a gap maps only its run's pages.

    Linux maps a whole cached folio at the first touch of any of its pages, as long as the
    folio lies inside one mapped area. A strided chunk of a moment-map plan is one run of
    rows per plane: 2 MiB runs that start 2880 bytes into a 2 MiB folio (after a FITS header
    block), so every run reaches 2880 bytes into the next folio, which the neighbouring
    chunk reads. Mapped whole, that folio doubles the chunk's resident memory. Measured on
    this project's VM (64 such runs, cached in 2 MiB folios): 258 MB resident against 130 MB
    with the gaps split off, for 0.07 ms more per chunk (64 ``madvise`` calls).

    The gaps get ``MADV_DONTDUMP``, an advice that changes nothing about reading the map
    (the gaps are never read) but, being a different flag, makes them separate areas.
    Splitting is best effort: with too many or too short runs, or where the advice is
    refused, the map stays one area and only resident memory is higher.
    """
    n = len(runs.starts)
    if _SPLIT_ADVICE is None or n < 2 or n > _SPLIT_MAX_RUNS or runs.length < _SPLIT_MIN_RUN:
        return
    ends = runs.starts[:-1] - start + runs.length
    gap_starts = -(-ends // _PAGE) * _PAGE  # inward to whole pages: the runs stay mapped
    gap_stops = (runs.starts[1:] - start) // _PAGE * _PAGE
    try:
        for a, b in zip(gap_starts.tolist(), gap_stops.tolist(), strict=True):
            if b > a:
                m.madvise(_SPLIT_ADVICE, a, b - a)
    except OSError:  # e.g. out of map areas: resident memory is higher, values the same
        return


def _folio_span(first: int, stop: int, size: int) -> tuple[int, int]:
    """The byte range to map for ``[first, stop)``: widened to folio bounds within the file.

    Mapping the margins costs nothing (untouched pages are never faulted in), while the two
    folios a chunk shares with its neighbours map as 2 MiB pages instead of 4 KiB ones. The
    kernel places a file map so that its address is congruent to its offset modulo 2 MiB,
    so a start on a folio boundary is what lets whole folios map at once. Measured on this
    project's VM (a 2 GiB file cached in 2 MiB folios, 128 MiB chunk maps at the offsets of a
    FITS data block, every page touched): 0.61 ms per chunk with 4 KiB-aligned maps, 0.45 ms
    with folio-aligned ones, 0.46 ms for the same range of one whole-file map.

    Examples
    --------
    >>> _folio_span(5760, 5760 + 2**27, 2**31)
    (0, 136314880)
    >>> _folio_span(5760, 9000, 10000)
    (0, 10000)
    """
    start = first - first % _FOLIO
    end = min(size, -(-stop // _FOLIO) * _FOLIO)
    return start, max(end, stop)
