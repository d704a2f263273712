"""The six-step's transposes: a dask rechunk in memory, or block I/O through a scratch store
on disk when the array is bigger than the memory budget.

A rechunk from row blocks to column blocks needs, at some moment, pieces of every input block;
dask's threaded scheduler keeps them in memory, which is fine for arrays that fit and fatal
for ones that do not. The scratch path is the Parallel Disk Model's transpose instead: every
input block writes its tiles (the intersections of input and output blocks) into one file that
holds them one after another, each a contiguous byte range (``pwrite``), so no two tasks touch
one byte, and every output block then reads whole tiles back (``pread``). Each byte is
written once and read once; memory is one block per thread. The output blocks depend on one
barrier task that waits for all writes.

The scratch directory must be visible to every worker (a shared disk on a cluster). Stores are
named by the dask token of their input and target chunks, so recomputing a graph rewrites the
same store. A chain of transposes (the six-step's) passes ``release=``: the barrier of the next
store deletes the stores named there, which every task of that barrier's pass has read by then
(their reads are its ancestors), so a run holds at most two stores, not one per transpose. The
last store of a chain is left for the caller (the default directory is a per-process temporary
one, removed at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import math
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize

__all__ = ["scratch_dir", "store_path", "transpose"]


@cache
def _default_scratch() -> str:
    base = dask.config.get("temporary-directory", None) or None
    path = tempfile.mkdtemp(prefix="dfits-fft-", dir=base)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def scratch_dir(scratch: str | Path | None) -> str:
    """The directory scratch stores go to: ``scratch``, or a per-process temporary one."""
    return str(scratch) if scratch is not None else _default_scratch()


def _tile(*chunkings: tuple[int, ...]) -> int:
    """The largest length dividing every inner chunk boundary of every chunking."""
    g = 0
    for chunks in chunkings:
        for b in np.cumsum(chunks[:-1]):
            g = math.gcd(g, int(b))
    return g or sum(chunkings[0])


def transpose(
    x: da.Array,
    chunks: dict[int, Any],
    *,
    memory_limit: int,
    block_bytes: int,
    scratch: str | Path | None,
    method: str | None = None,
    release: tuple[str, ...] = (),
    chain: str = "",
) -> da.Array:
    """``x`` rechunked to ``chunks`` (dask's rechunk spec), in memory or through a scratch file.

    Parameters
    ----------
    x : dask.array.Array
    chunks : dict
        Per-axis chunks, as :meth:`dask.array.Array.rechunk` takes them.
    memory_limit : int
        Arrays of more bytes than this are transposed through disk.
    block_bytes : int
        Budget of one block (``"auto"`` chunks are sized to it).
    scratch : str or Path or None
        Where the scratch stores go (see :func:`scratch_dir`).
    method : {"tasks", "p2p"}, optional
        dask's rechunk method (its default when omitted: P2P on a distributed cluster).
    release : tuple of str
        Earlier scratch stores (see :func:`store_path`) that every block of ``x`` has finished
        reading: deleted once this transpose has written its store. Only for stores read
        solely on the way to ``x``, else a later reader would find them gone (loudly: opening
        a deleted store raises).
    chain : str
        Names the chain of transposes this one belongs to, in the store's name: two chains
        that release their stores at different points (an FFT and its transposed-order or
        inverse twin of the same input) must not share a store, since dask may run each
        chain's readers as tasks of its own when both are computed at once.
    """
    target = x.rechunk(chunks, block_size_limit=block_bytes, method=method)
    if not goes_to_disk(x, target.chunks, memory_limit):
        return target
    return _through_disk(x, target.chunks, scratch_dir(scratch), release, chain)


def goes_to_disk(x: da.Array, out_chunks: tuple, memory_limit: int) -> bool:
    """Whether :func:`transpose` sends ``x`` to ``out_chunks`` through a scratch store."""
    return x.nbytes > memory_limit and tuple(out_chunks) != x.chunks


def store_path(x: da.Array, out_chunks: tuple, scratch: str | Path | None, chain: str = "") -> str:
    """Where the scratch store of ``x``'s transpose to ``out_chunks`` goes (two transposes of
    one input to different chunks must not share a store)."""
    token = tokenize(x.name, out_chunks, chain)
    return str(Path(scratch_dir(scratch)) / f"transpose-{token}.tiles")


def _through_disk(
    x: da.Array, out_chunks: tuple, directory: str, release: tuple, chain: str
) -> da.Array:
    tiles = tuple(_tile(a, b) for a, b in zip(x.chunks, out_chunks, strict=True))
    path = store_path(x, out_chunks, directory, chain)
    layout = {"shape": x.shape, "tiles": tiles, "dtype": x.dtype.str}
    # everything on disk happens in tasks: building the graph writes nothing
    created = dask.delayed(_create, pure=True)(path, x.nbytes)
    written = x.map_blocks(
        _write,
        path=path,
        created=created,
        layout=layout,
        chunks=tuple((1,) * len(c) for c in x.chunks),
        meta=np.empty((0,) * x.ndim, dtype=bool),
    )
    return da.map_blocks(
        _read,
        dtype=x.dtype,
        chunks=out_chunks,
        meta=np.empty((0,) * x.ndim, dtype=x.dtype),
        path=path,
        layout=layout,
        written=dask.delayed(_all, pure=True)(written, release),
    )


def _create(path: str, nbytes: int) -> str:
    # one sparse file of the array's size, tiles one after another in C order of the tile
    # grid (see _tiles): each tile is one contiguous byte range, one request each way, and
    # the store costs one inode (a file per tile cost a zarr call and a file's kernel memory
    # per tile, and one unlink each to delete)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    # never truncated to zero on the way: a second run of this task (dask may run a chain's
    # tasks twice when collections sharing it are computed together) must not cut the store
    # under a reader; the tiles' bytes are the same whoever writes them
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size != nbytes:
            os.ftruncate(fd, nbytes)
    finally:
        os.close(fd)
    return path


def _tiles(region: tuple[slice, ...], layout: dict):
    """``(slices in the array, byte offset)`` of each tile inside ``region`` (whole tiles).

    Tile ``i`` (per axis: start ``s_k = i_k·t_k``, extent ``e_k``) starts after every tile
    before it in C order: ``sum_k s_k · prod_{j<k} e_j · prod_{j>k} shape_j`` values.
    """
    shape, tiles = layout["shape"], layout["tiles"]
    itemsize = np.dtype(layout["dtype"]).itemsize
    starts = [range(r.start, r.stop, t) for r, t in zip(region, tiles, strict=True)]
    for corner in itertools.product(*starts):
        ext = [min(t, n - s) for s, t, n in zip(corner, tiles, shape, strict=True)]
        offset = 0
        for k, s in enumerate(corner):
            offset += s * math.prod(ext[:k]) * math.prod(shape[k + 1 :])
        yield tuple(slice(s, s + e) for s, e in zip(corner, ext, strict=True)), offset * itemsize


def _local(tile: tuple[slice, ...], region: tuple[slice, ...]) -> tuple[slice, ...]:
    return tuple(
        slice(t.start - r.start, t.stop - r.start) for t, r in zip(tile, region, strict=True)
    )


#: tile rows shorter than this are gathered into one buffer and written or read with one
#: call; longer ones are written from, and read into, the blocks themselves (one iovec each)
MIN_RUN = 4096
_IOV_MAX = 1024  # iovecs per pwritev/preadv call (Linux's IOV_MAX)


def _runs(view: np.ndarray) -> list[np.ndarray] | None:
    """The contiguous runs of ``view`` in C order (flat views of its memory, no copy), or None
    when they are shorter than :data:`MIN_RUN` bytes (or ``view`` has no unit-stride rows)."""
    if view.flags.c_contiguous:
        return [view.reshape(-1)]
    k, run = view.ndim, view.itemsize
    while k > 0 and (view.shape[k - 1] == 1 or view.strides[k - 1] == run):
        run *= view.shape[k - 1]
        k -= 1
    if run < MIN_RUN:
        return None
    # each view[index] has C-contiguous trailing axes, so its reshape is a view, not a copy
    return [view[index].reshape(-1) for index in np.ndindex(*view.shape[:k])]


def _pwrite_all(fd: int, runs: list[np.ndarray], offset: int) -> None:
    """Write ``runs`` one after another from ``offset`` (short writes are completed)."""
    for i in range(0, len(runs), _IOV_MAX):
        batch = runs[i : i + _IOV_MAX]
        done = os.pwritev(fd, batch, offset)
        for run in batch:
            skip = min(done, run.nbytes)
            done -= skip
            if skip < run.nbytes:  # only after a short pwritev
                view = memoryview(run).cast("B")[skip:]
                while view:
                    view = view[os.pwrite(fd, view, offset + run.nbytes - len(view)) :]
            offset += run.nbytes


def _pread_all(fd: int, runs: list[np.ndarray], offset: int) -> int:
    """Read into ``runs`` one after another from ``offset``; the bytes read (short at EOF)."""
    total = 0
    for i in range(0, len(runs), _IOV_MAX):
        batch = runs[i : i + _IOV_MAX]
        want = sum(run.nbytes for run in batch)
        done = os.preadv(fd, batch, offset + total)
        total += done
        if done != want:
            break
    return total


@cache
def _sync_file_range() -> Any:
    """libc's ``sync_file_range`` (Linux), or None."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.sync_file_range
        call.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
        return call
    return None


def _flush(fd: int, offset: int, nbytes: int) -> None:
    """Start writing back ``nbytes`` at ``offset`` without waiting (``SYNC_FILE_RANGE_WRITE``)."""
    call = _sync_file_range()
    if call is not None:
        call(fd, offset, nbytes, 2)


def _advise(fd: int, offset: int, nbytes: int, advice: str) -> None:
    """``posix_fadvise(POSIX_FADV_<advice>)`` where the platform has it (advice only: the
    bytes read are the same without it)."""
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, offset, nbytes, getattr(os, f"POSIX_FADV_{advice}"))


def _nbytes(tile: tuple[slice, ...], itemsize: int) -> int:
    return math.prod(t.stop - t.start for t in tile) * itemsize


def _write(
    block: Any, path: str, created: str, layout: dict, block_info: dict | None = None
) -> np.ndarray:
    """Store one input block as whole tiles. No lock: input blocks cover whole tiles, so no
    two tasks write one byte."""
    assert block_info is not None
    region = tuple(slice(s, e) for s, e in block_info[0]["array-location"])
    block = np.asarray(block, dtype=layout["dtype"])  # a dfits stored chunk decodes here, once
    fd = os.open(created, os.O_WRONLY)
    try:
        for tile, offset in _tiles(region, layout):
            # the tile's rows go straight from the block to the file (one pwritev); a tile
            # without long contiguous rows (a transposed view) is gathered into one first
            view = block[_local(tile, region)]
            runs = _runs(view) or _runs(np.ascontiguousarray(view))
            _pwrite_all(fd, runs, offset)
            # start its writeback now: under a memory cap, dirty scratch pages met by reclaim
            # stall the task that needs memory until they are written
            _flush(fd, offset, view.nbytes)
    finally:
        os.close(fd)
    return np.ones((1,) * len(region), dtype=bool)


def _all(written: np.ndarray, release: tuple[str, ...] = ()) -> bool:
    """The barrier: every tile is written; the stores in ``release`` are no longer needed."""
    for store in release:
        # a reader that still came (a recomputed task) fails to open it: never stale bytes
        with contextlib.suppress(FileNotFoundError):
            os.unlink(store)
    return bool(np.all(written))


def _read(path: str, layout: dict, written: bool, block_info: dict | None = None) -> np.ndarray:
    """One output block, read back as whole tiles (``written`` orders it after the writes)."""
    assert written
    assert block_info is not None
    region = tuple(slice(s, e) for s, e in block_info[None]["array-location"])
    out = np.empty(tuple(r.stop - r.start for r in region), dtype=layout["dtype"])
    fd = os.open(path, os.O_RDONLY)
    try:
        # the block's tiles are scattered: no readahead past a tile (up to read_ahead_kb, 8
        # MiB on this disk, of other blocks' tiles, which a cap evicts before their reader
        # comes), and all of the block's tiles queued at once
        _advise(fd, 0, 0, "RANDOM")
        tiles = list(_tiles(region, layout))
        for tile, offset in tiles:
            _advise(fd, offset, _nbytes(tile, out.itemsize), "WILLNEED")
        for tile, offset in tiles:
            view = out[_local(tile, region)]
            runs = _runs(view)
            into = runs if runs is not None else _runs(np.empty(view.shape, out.dtype))
            if _pread_all(fd, into, offset) != view.nbytes:
                raise OSError(f"scratch store {path} is short at byte {offset}")
            if runs is None:  # rows too short to read in place: one gathered copy
                view[...] = np.frombuffer(into[0], out.dtype).reshape(view.shape)
            # each tile is read once: its pages are dead, room for the ones still to be read
            _advise(fd, offset, view.nbytes, "DONTNEED")
    finally:
        os.close(fd)
    return out
