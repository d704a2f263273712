"""Dask and numpy arrays to a tile-compressed FITS file: chunk tasks compress whole tiles.

The contract: :func:`write_compressed` checks every image (:func:`~dfits.format.ztable.
parse_compression`, the cards of its table header) before anything is written, rechunks each
array so that chunk edges fall on tile edges (keeping chunks near their old size), and builds
a graph of plain delayed calls — create the temporary file, one
:func:`~dfits.write.tilewriter.write_chunk` per part of a chunk (:func:`spread_chunks`: views
of the chunk, so that every thread compresses; each compresses its tiles to a scratch file,
returning sizes and sums), one :func:`~dfits.write.tilewriter.assemble`. Memory stays at the
chunks in flight plus a buffer of compressed bytes per thread
(:data:`~dfits.write.fitswriter.BUFFER`), and about 40 bytes per tile in the assembly. Works
on any scheduler whose workers share the filesystem; ``compute=False`` returns the
``Delayed``.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from dfits.errors import where
from dfits.format.imagehdu import image_header, parse_storage
from dfits.format.ztable import TileSpec, parse_compression
from dfits.write import tilewriter
from dfits.write.blocks import as_blocks
from dfits.write.images import ImageItem
from dfits.write.tilewriter import ZHDU, ZPlan

__all__ = [
    "LEAST_CHUNK", "aligned_chunks", "append_compressed", "spread_chunks", "write_compressed",
]  # fmt: skip

#: Bytes of values below which a chunk is not cut further for more parallel tasks.
LEAST_CHUNK = 1 << 20


def aligned_chunks(chunks: tuple[tuple[int, ...], ...], spec: TileSpec) -> tuple[int, ...]:
    """Chunk sizes, multiples of the tile along every axis, near ``chunks``' element count."""
    old = [max(c) for c in chunks]
    sizes = []
    for c, t, n in zip(old, spec.tile, spec.shape, strict=True):
        # a whole axis stays whole; else the nearest multiple of the tile
        sizes.append(n if c >= n else min(-(-n // t) * t, max(t, round(c / t) * t)))
    # tiles wider than the chunks grow them: take it back from the slowest axes
    for axis in range(len(sizes)):
        excess = math.prod(sizes) / max(1, math.prod(old))
        if excess <= 2:
            break
        t = spec.tile[axis]
        sizes[axis] = max(t, int(sizes[axis] / excess) // t * t)
    return tuple(min(s, n) for s, n in zip(sizes, spec.shape, strict=True))


def _hdus(
    items: Sequence[ImageItem], path: str, checksum: bool, options: dict[str, Any],
    first: int | None = None,
):  # fmt: skip
    """The planned HDUs (an empty primary first; none when appending after HDU ``first - 1``)
    and each image's aligned dask array."""
    hdus: list[ZHDU] = []
    arrays: list[Any] = []
    if first is None:
        empty = parse_storage("uint8", where(path, 0))
        head = image_header((), empty, primary=True, extend=True, checksum=checksum)
        hdus, arrays, first = [ZHDU(None, head, checksum=checksum)], [None], 1
    for i, item in enumerate(items):
        what = where(path, first + i, item.extname) if first >= 0 else _appended(path, i, item)
        x = as_blocks(item.data, what)
        storage = parse_storage(x.dtype, what)
        spec = parse_compression(x.shape, storage, what, **options)
        hdus.append(ZHDU(spec, cards=tuple(item.cards), extname=item.extname,
                         checksum=checksum, what=what))  # fmt: skip
        aligned = aligned_chunks(x.chunks, spec)
        parts = spread_chunks(aligned, spec, x.dtype.itemsize, _threads())
        if x.rechunk(aligned).chunks == x.chunks:
            # chunk edges on tile edges already: the cuts for more tasks are views of the
            # chunks, taken in the tasks (a dask slice of a chunk would copy it)
            arrays.append((x, parts))
        else:
            # a rechunk copies anyway: straight to the parts, so each copy is one task's
            arrays.append((x.rechunk(parts), parts))
    return hdus, arrays


def _threads() -> int:
    """The local scheduler's threads (dask's ``num_workers``, else the CPU count)."""
    import dask
    from dask.system import CPU_COUNT

    return int(dask.config.get("num_workers", None) or CPU_COUNT)


def spread_chunks(
    sizes: tuple[int, ...], spec: TileSpec, itemsize: int, threads: int
) -> tuple[int, ...]:
    """Chunk sizes cut further, slowest axis first and in whole tiles, until there are about
    four chunks per thread (or chunks reach :data:`LEAST_CHUNK` bytes), so that every thread
    compresses: a 256 MiB image in dask's 128 MiB chunks would otherwise keep two threads busy
    and leave the rest idle. Cutting the slowest axis keeps the heap in tile order.

    >>> from dfits.format.imagehdu import parse_storage
    >>> from dfits.format.ztable import parse_compression
    >>> spec = parse_compression((8192, 8192), parse_storage("f4", "x"), "x", compression="RICE_1")
    >>> spread_chunks((4096, 8192), spec, 4, threads=16)
    (128, 8192)
    """
    out = list(sizes)
    want = 4 * max(1, threads)
    for axis, t in enumerate(spec.tile):
        while math.prod(-(-n // c) for n, c in zip(spec.shape, out, strict=True)) < want:
            half = max(t, out[axis] // 2 // t * t)
            if half == out[axis] or math.prod(out) // out[axis] * half * itemsize < LEAST_CHUNK:
                break
            out[axis] = half
    return tuple(out)


def _appended(path: str, i: int, item: ImageItem) -> str:
    # an append reads none of the old HDUs, so it cannot number the new ones
    name = f" ({item.extname!r})" if item.extname else ""
    return f"{where(path)}, appended image {i + 1}{name}"


def _chunks(p: ZPlan, arrays: list[Any], ready: Any) -> list[list[Any]]:
    """One delayed compression per part of a chunk (after ``ready``), grouped by HDU, in C
    order of the parts' starts (the heap's order)."""
    from dask import delayed

    out: list[list[Any]] = []
    for i, item in enumerate(arrays):
        if item is None:
            out.append([])
            continue
        x, parts = item
        cuts = sorted(
            (sub, block, local)
            for block, starts, shape in _blocks(x)
            for sub, local in _parts(starts, shape, parts)
        )  # fmt: skip
        out.append([
            delayed(_write, pure=True)(p, i, k, block, starts, local, ready)
            for k, (starts, block, local) in enumerate(cuts)
        ])  # fmt: skip
    return out


def _blocks(x: Any):
    """``(block, starts, shape)`` of every chunk of ``x``."""
    sizes = itertools.product(*x.chunks)
    for (block, starts), shape in zip(x.tasks(), sizes, strict=True):
        yield block, tuple(starts), tuple(shape)


def _parts(starts: tuple[int, ...], shape: tuple[int, ...], parts: tuple[int, ...]):
    """``(starts, slices within the chunk)`` of the pieces of at most ``parts`` per axis."""
    ranges = [
        [(a, min(a + c, n)) for a in range(0, n, c)] for n, c in zip(shape, parts, strict=True)
    ]
    for pick in itertools.product(*ranges):
        local = tuple(slice(a, b) for a, b in pick)
        yield tuple(s + a for s, (a, _) in zip(starts, pick, strict=True)), local


def _write(
    p: ZPlan, hdu: int, chunk: int, values: Any, starts: tuple[int, ...],
    local: tuple[slice, ...], _ready: bool,
):  # fmt: skip
    # a view of the chunk (decoded once if it is a stored chunk): its part's tiles only
    return tilewriter.write_chunk(p, hdu, chunk, np.asarray(values)[local], starts)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """The compression options with the dither seed fixed (from the clock when None, 1..10000,
    as astropy's and fpack's default), so that retried tasks write the same bytes."""
    seed = options.get("dither_seed")
    if seed is None:
        seed = int(time.time_ns() // 1000) % 10000 + 1
    return {**options, "dither_seed": seed}


def append_compressed(
    items: Sequence[ImageItem], path: str | os.PathLike[str], *, checksum: bool = True,
    fsync: bool = True, wait: float = 60.0, **options: Any,
) -> str:  # fmt: skip
    """Append images as tile-compressed extensions to the FITS file ``path``, in place.

    Under the append's lock and journal (:class:`~dfits.write.appender.Append`), the chunk
    tasks of the current scheduler compress into scratch files; then this process writes the
    tables and copies the heaps after the old end, the first byte of the first new header
    last, so a reader sees the old HDUs or all the new ones. On failure the file is cut back
    to its old size. ``options``: the compression options of :func:`write_compressed`.
    """
    from dask import delayed

    from dfits.array.scheduler import compute
    from dfits.write.appender import Append
    from dfits.write.fitswriter import temp_name

    target = os.fspath(path)
    with Append(target, fsync=fsync, wait=wait) as session:
        hdus, arrays = _hdus(items, target, checksum, _options(options), first=-1)
        link = temp_name(session.target)
        p = tilewriter.append_plan(session.target, link, hdus, fsync=fsync)
        session.begin(link)
        try:
            (results,) = compute(_chunks(p, arrays, delayed(True)))
            first, end = tilewriter.write_appended(p, results, session.fd, session.size)
        except BaseException:
            # the link first, then the scratch files: a chunk task still running removes
            # its own once it finds the link gone (tilewriter's failure contract)
            tilewriter.abort(p)
            raise
        session.publish(first, end)
    return target


def write_compressed(
    items: Sequence[ImageItem],
    path: str | os.PathLike[str],
    *,
    compression: str,
    tile_shape: Any = None,
    quantize_level: float = 16.0,
    quantize_method: str = "SUBTRACTIVE_DITHER_2",
    dither_seed: int | None = None,
    compression_level: int | None = None,
    rice_blocksize: int = 32,
    hcompress_scale: int = 0,
    overwrite: bool = False,
    checksum: bool = True,
    compute: bool = True,
    fsync: bool = True,
) -> Any:
    """Write images as tile-compressed IMAGE extensions after an empty primary HDU.

    ``dither_seed`` None: from the clock (1..10000), as astropy's and fpack's default; it is
    fixed in the plan, so retried tasks write the same bytes. Returns the path, or a
    ``Delayed`` whose computation writes the file.
    """
    from dask import delayed

    target = os.fspath(path)
    options = _options({"compression": compression, "tile_shape": tile_shape,
                        "quantize_level": quantize_level, "quantize_method": quantize_method,
                        "dither_seed": dither_seed, "compression_level": compression_level,
                        "rice_blocksize": rice_blocksize,
                        "hcompress_scale": hcompress_scale})  # fmt: skip
    hdus, arrays = _hdus(items, target, checksum, options)
    p = tilewriter.plan(target, hdus, overwrite=overwrite, fsync=fsync)
    if not compute:
        ready = delayed(tilewriter.create, pure=False)(p)
        return delayed(tilewriter.assemble, pure=True)(p, _chunks(p, arrays, ready))
    from dfits.array.scheduler import compute as compute_graph

    try:
        # made before any task runs: a failing task cannot leave a create running past
        # the cleanup (write.images does the same)
        tilewriter.create(p)
        graph = delayed(tilewriter.assemble, pure=True)(p, _chunks(p, arrays, True))
        return str(compute_graph(graph)[0])
    except BaseException:
        tilewriter.abort(p)
        raise
