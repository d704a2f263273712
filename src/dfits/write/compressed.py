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
import threading
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
_local = threading.local()


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
        parts = spread_chunks(aligned_chunks(x.chunks, spec), spec, x.dtype.itemsize, _threads())
        arrays.append((x, parts, spec.tile))
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
    """One delayed compression per part (after ``ready``), grouped by HDU, in C order of the
    parts' starts (the heap's order)."""
    from dask import delayed

    out: list[list[Any]] = []
    for i, item in enumerate(arrays):
        if item is None:
            out.append([])
            continue
        out.append([
            delayed(_write, pure=True)(p, i, k, starts, shape, blocks, cuts, ready)
            for k, (starts, shape, blocks, cuts) in enumerate(_cuts(*item))
        ])  # fmt: skip
    return out


def _cuts(x: Any, parts: tuple[int, ...], tile: tuple[int, ...]) -> list:
    """``(starts, shape, blocks, [(slices in the block, slices in the part)])`` per part.

    Chunks whose edges fall on tile edges are cut into parts of at most ``parts`` per axis,
    each a view of its chunk, taken in the task (a dask slice of a chunk would copy it).
    Others are covered by a grid of ``parts`` from the image's origin, each part gathered in
    its task from the chunks it meets into that thread's buffer: a dask rechunk would copy
    every piece twice (its slices, then their concatenation) and hold the copies.
    """
    offsets = [np.cumsum((0, *c)).tolist() for c in x.chunks]
    blocks = dict(zip(itertools.product(*(range(len(c)) for c in x.chunks)),
                      (b for b, _ in x.tasks()), strict=True))  # fmt: skip
    aligned = all(o % t == 0 for off, t in zip(offsets, tile, strict=True) for o in off[:-1])
    out = []
    spans = [_spans(off, c, aligned) for off, c in zip(offsets, parts, strict=True)]
    for pick in itertools.product(*spans):
        axes = [_meets(a, b, off) for (a, b), off in zip(pick, offsets, strict=True)]
        meets = list(itertools.product(*axes))
        out.append((
            tuple(a for a, _ in pick), tuple(b - a for a, b in pick),
            [blocks[tuple(j for j, _, _ in m)] for m in meets],
            [(tuple(src for _, src, _ in m), tuple(dst for _, _, dst in m)) for m in meets],
        ))  # fmt: skip
    return out


def _spans(off: list[int], c: int, aligned: bool) -> list[tuple[int, int]]:
    """Along one axis of chunk edges ``off``: the parts' ``(start, end)``, of at most ``c``
    within each chunk (``aligned``) or from the origin."""
    chunks = itertools.pairwise(off) if aligned else [(0, off[-1])]
    return [(a, min(a + c, b)) for o0, b in chunks for a in range(o0, b, c)]


def _meets(a: int, b: int, off: list[int]) -> list[tuple[int, slice, slice]]:
    """Along one axis: ``(chunk, slice in the chunk, slice in the part)`` of the chunks that
    the part ``[a, b)`` meets."""
    return [
        (j, slice(max(a, o0) - o0, min(b, o1) - o0), slice(max(a, o0) - a, min(b, o1) - a))
        for j, (o0, o1) in enumerate(itertools.pairwise(off))
        if o0 < b and a < o1
    ]


def _write(
    p: ZPlan, hdu: int, chunk: int, starts: tuple[int, ...], shape: tuple[int, ...],
    blocks: list[Any], cuts: list, _ready: bool,
):  # fmt: skip
    if len(blocks) == 1:
        # a view of the chunk (decoded once if it is a stored chunk): its part's tiles only
        values = np.asarray(blocks[0])[cuts[0][0]]
    else:
        first = np.asarray(blocks[0])
        values = _part_buffer(first.dtype, shape)
        for block, (src, dst) in zip(blocks, cuts, strict=True):
            values[dst] = np.asarray(block)[src]
    return tilewriter.write_chunk(p, hdu, chunk, values, starts)


def _part_buffer(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """This thread's buffer for a part gathered from several chunks, reused: a fresh one per
    part would be faulted in again each time."""
    n = math.prod(shape) * dtype.itemsize
    buf = getattr(_local, "part", None)
    if buf is None or buf.nbytes < n:
        buf = _local.part = np.empty(n, np.uint8)
    return buf[:n].view(dtype).reshape(shape)


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
