"""Chunk plans that follow the file: whole runs of the slowest axes near a target size.

FITS data are C-ordered (the last numpy axis varies fastest), so a chunk made of complete
trailing axes and a run of the slowest axis is one contiguous byte range: one mmap, one
remote request, no strided reads. Only when a single slab of the trailing axes is itself
larger than the target do we split further in.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "REDUCE_DEPTH",
    "TILE_TARGET_KEY",
    "align_chunks",
    "file_chunks",
    "normalize",
    "reduction_chunks",
    "tile_target",
]

#: Stored bytes per output pixel that a chunk should hold along a reduced axis. Each chunk of a
#: reduction along one axis leaves float64 partials (one to three per pixel) that dask keeps,
#: moves and adds; with 256 bytes of input behind each pixel they stay under ~10 % of the
#: chunk. ``benchmarks/plans.py`` (2 threads, medians): on a 256 x 2048 x 2048 float32 cube
#: moment-1 took 2.15 s with the file's 8-plane slabs and 0.65 s with 64-plane chunks
#: (0.58 s with 128, 0.70 s with 256), moment-0 1.19 -> 0.47 s; on a 256 x 1024 x 1024 cube
#: the file's 32-plane slabs ran moment-1 in 0.24 s, 64-plane chunks in 0.16 s (moment-0
#: 0.16 -> 0.13 s). Chunks are strided reads of a few long runs; the kernels read those rows
#: as fast as contiguous ones.
REDUCE_DEPTH = 256

#: ``dask.config`` key: the physical bytes a default chunk of a tile-compressed image holds
#: (16 MiB unless set), below dask's ``array.chunk-size``. A plain image's chunk is a view of
#: the file's map; a compressed one is decoded into fresh memory, and glibc maps anything
#: over its largest mmap threshold (32 MiB) afresh each time, so every task paid its
#: page faults again. Measured on 2 threads (8k x 8k DITHER_2 float32 sum, fresh process):
#: 0.42 s with the 128 MiB plan, 0.19 s with 16 MiB; the 1 GiB int16 RICE cube 1.54 s and
#: 566 MiB peak RSS against 1.11 s and 315 MiB.
TILE_TARGET_KEY = "dfits.tile-chunk-size"


def file_chunks(shape: tuple[int, ...], itemsize: int, target: int) -> tuple[tuple[int, ...], ...]:
    """Return dask chunks for ``shape``: contiguous slabs of about ``target`` bytes.

    Examples
    --------
    >>> file_chunks((256, 1024, 1024), 4, 128 * 2**20)
    ((32, 32, 32, 32, 32, 32, 32, 32), (1024,), (1024,))
    >>> file_chunks((10,), 8, 32)
    ((4, 4, 2),)
    >>> file_chunks((10**12, 10**6, 0), 1, 2**27)
    ((1000000000000,), (1000000,), (0,))
    """
    if not shape:
        return ()
    if 0 in shape:
        # nothing to read: one chunk, however long the other axes claim to be (a header's
        # 10**12 rows of nothing must not plan 10**12 chunks)
        return tuple((n,) for n in shape)
    target = max(int(target), itemsize)
    per = [1] * len(shape)
    # Walk from the fastest axis outwards while whole axes still fit in the target.
    inner = itemsize
    split_axis = 0
    for ax in range(len(shape) - 1, -1, -1):
        n = max(shape[ax], 1)
        if inner * n <= target:
            per[ax] = shape[ax]
            inner *= n
            continue
        per[ax] = max(1, target // inner)
        split_axis = ax
        break
    else:
        return tuple((n,) for n in shape)
    chunks = []
    for ax, n in enumerate(shape):
        if ax < split_axis:
            chunks.append((1,) * n if n else (0,))
        elif ax == split_axis:
            step = per[ax]
            full, rest = divmod(n, step)
            chunks.append((step,) * full + ((rest,) if rest else ()))
        else:
            chunks.append((n,))
    return tuple(chunks)


def tile_target() -> int:
    """Physical bytes of a tile-compressed image's default chunk: ``dfits.tile-chunk-size``
    (16 MiB), at most dask's ``array.chunk-size``.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"array.chunk-size": "128MiB"}):
    ...     tile_target() >> 20
    16
    """
    import dask
    from dask.utils import parse_bytes

    chunk = parse_bytes(dask.config.get("array.chunk-size"))
    return min(chunk, parse_bytes(dask.config.get(TILE_TARGET_KEY, "16MiB")))


def normalize(
    chunks: Any,
    shape: tuple[int, ...],
    dtype: np.dtype,
    itemsize: int,
    tile: tuple[int, ...] | None = None,
) -> tuple[tuple[int, ...], ...]:
    """Turn a user's ``chunks=`` (anything dask accepts) into explicit chunks.

    ``None`` or ``"auto"`` gives :func:`file_chunks` at dask's ``array.chunk-size``; for a
    tile-compressed image (``tile``, its ZTILEn in numpy order) at :func:`tile_target`, in
    whole tiles (:func:`align_chunks`), so that no tile is decoded by two tasks.
    """
    import dask
    from dask.utils import parse_bytes

    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        if tile is not None:
            target = max(itemsize, tile_target() // _scale(dtype, itemsize))
            return align_chunks(file_chunks(shape, itemsize, target), tile, shape)
        target = parse_bytes(dask.config.get("array.chunk-size"))
        # size the plan by physical bytes, as dask does, so scaled int16 → float32 chunks
        # hold the same number of values as dask's own planning would give
        return file_chunks(shape, itemsize, max(itemsize, target // _scale(dtype, itemsize)))
    from dask.array.core import normalize_chunks  # only here: the file's plan needs no dask.array

    return normalize_chunks(chunks, shape, dtype=dtype)


def _scale(dtype: np.dtype, itemsize: int) -> int:
    return max(1, np.dtype(dtype).itemsize // itemsize)


def align_chunks(
    chunks: tuple[tuple[int, ...], ...], tile: tuple[int, ...], shape: tuple[int, ...]
) -> tuple[tuple[int, ...], ...]:
    """Regular chunks of whole tiles: each axis's first chunk rounded up to tile multiples.

    Examples
    --------
    >>> align_chunks(((40, 40, 20), (300,)), (16, 300), (100, 300))
    ((48, 48, 4), (300,))
    """
    out = []
    for c, t, n in zip(chunks, tile, shape, strict=True):
        size = min(n, -(-max(c[0] if c else 1, 1) // t) * t) or 1
        full, rest = divmod(n, size)
        out.append((size,) * full + ((rest,) if rest else ()) or (0,))
    return tuple(out)


def reduction_chunks(
    shape: tuple[int, ...],
    dtype: np.dtype,
    itemsize: int,
    axis: int,
    tile: tuple[int, ...] | None = None,
) -> tuple[tuple[int, ...], ...]:
    """Chunks for reducing along ``axis`` (moment maps): the file's plan, made deeper if thin.

    The default plan (:func:`normalize` of ``None``) is kept when each chunk already holds
    :data:`REDUCE_DEPTH` bytes of stored values (or the whole axis) along ``axis``.
    Otherwise chunks take ``REDUCE_DEPTH`` bytes' worth of positions of ``axis`` and split the
    faster axes into contiguous runs so that a chunk stays near dask's ``array.chunk-size``: a
    strided read of a few long runs.

    Examples
    --------
    >>> import numpy as np
    >>> import dask
    >>> with dask.config.set({"array.chunk-size": "128MiB"}):
    ...     reduction_chunks((256, 2048, 2048), np.dtype("f4"), 4, 0)[:2]
    ((64, 64, 64, 64), (256, 256, 256, 256, 256, 256, 256, 256))
    """
    chunks = normalize(None, shape, dtype, itemsize, tile)
    n = shape[axis]
    want = min(n, -(-REDUCE_DEPTH // itemsize))
    if not n or max(chunks[axis]) >= want:
        return chunks
    # Slower axes are one position per chunk already: the plan split at ``axis`` or beyond.
    per_slab = math.prod(max(c) for c in chunks)
    inner = file_chunks(shape[axis + 1 :], itemsize, max(itemsize, per_slab * itemsize // want))
    full, rest = divmod(n, want)
    deep = (*chunks[:axis], (want,) * full + ((rest,) if rest else ()), *inner)
    return deep if tile is None else align_chunks(deep, tile, shape)
