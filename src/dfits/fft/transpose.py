"""The six-step's transposes: a dask rechunk in memory, or block I/O through a scratch zarr
store when the array is bigger than the memory budget.

A rechunk from row blocks to column blocks needs, at some moment, pieces of every input block;
dask's threaded scheduler keeps them in memory, which is fine for arrays that fit and fatal
for ones that do not. The scratch path is the Parallel Disk Model's transpose instead: every
input block writes its tiles (the intersections of input and output blocks) into a zarr array
whose chunks *are* those tiles, so no two tasks touch one zarr chunk, and every output block
then reads whole tiles back. Each byte is written once and read once; memory is one block per
thread. The output blocks depend on one barrier task that waits for all writes.

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
import math
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
) -> da.Array:
    """``x`` rechunked to ``chunks`` (dask's rechunk spec), in memory or through scratch zarr.

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
        solely on the way to ``x``, else a later reader would find them gone (loudly: the
        metadata goes first, so a read raises instead of returning fill values).
    """
    target = x.rechunk(chunks, block_size_limit=block_bytes, method=method)
    if not goes_to_disk(x, target.chunks, memory_limit):
        return target
    return _through_zarr(x, target.chunks, scratch_dir(scratch), release)


def goes_to_disk(x: da.Array, out_chunks: tuple, memory_limit: int) -> bool:
    """Whether :func:`transpose` sends ``x`` to ``out_chunks`` through a scratch store."""
    return x.nbytes > memory_limit and tuple(out_chunks) != x.chunks


def store_path(x: da.Array, out_chunks: tuple, scratch: str | Path | None) -> str:
    """Where the scratch store of ``x``'s transpose to ``out_chunks`` goes (two transposes of
    one input to different chunks must not share a store)."""
    token = tokenize(x.name, out_chunks)
    return str(Path(scratch_dir(scratch)) / f"transpose-{token}.zarr")


def _through_zarr(x: da.Array, out_chunks: tuple, directory: str, release: tuple) -> da.Array:
    tiles = tuple(_tile(a, b) for a, b in zip(x.chunks, out_chunks, strict=True))
    path = store_path(x, out_chunks, directory)
    # everything on disk happens in tasks: building the graph writes nothing
    created = dask.delayed(_create, pure=True)(path, x.shape, tiles, x.dtype.str)
    written = x.map_blocks(
        _write,
        path=path,
        created=created,
        chunks=tuple((1,) * len(c) for c in x.chunks),
        meta=np.empty((0,) * x.ndim, dtype=bool),
    )
    return da.map_blocks(
        _read,
        dtype=x.dtype,
        chunks=out_chunks,
        meta=np.empty((0,) * x.ndim, dtype=x.dtype),
        path=path,
        written=dask.delayed(_all, pure=True)(written, release),
    )


def _create(path: str, shape: tuple, tiles: tuple, dtype: str) -> str:
    import zarr

    # uncompressed: every tile is written once and read once, at disk speed
    zarr.create_array(
        store=path,
        shape=shape,
        chunks=tiles,
        dtype=dtype,
        compressors=None,
        fill_value=0,
        overwrite=True,
    )
    return path


def _write(block: Any, path: str, created: str, block_info: dict | None = None) -> np.ndarray:
    """Store one input block as whole tiles. No lock: input blocks cover whole tiles, so no
    two tasks write one zarr chunk."""
    import zarr

    assert block_info is not None
    region = tuple(slice(s, e) for s, e in block_info[0]["array-location"])
    zarr.open_array(created, mode="r+")[region] = np.asarray(block)
    return np.ones((1,) * len(region), dtype=bool)


def _all(written: np.ndarray, release: tuple[str, ...] = ()) -> bool:
    """The barrier: every tile is written; the stores in ``release`` are no longer needed."""
    for store in release:
        # metadata first: a reader that still came (a recomputed task) fails instead of
        # reading zarr's fill value for chunks that are gone
        Path(store, "zarr.json").unlink(missing_ok=True)
        shutil.rmtree(store, ignore_errors=True)
    return bool(np.all(written))


def _read(path: str, written: bool, block_info: dict | None = None) -> np.ndarray:
    """One output block, read back as whole tiles (``written`` orders it after the writes)."""
    import zarr

    assert written
    assert block_info is not None
    region = tuple(slice(s, e) for s, e in block_info[None]["array-location"])
    return zarr.open_array(path, mode="r")[region]
