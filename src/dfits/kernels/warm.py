"""Compile kernels ahead of time, into Numba's on-disk cache (``dfits warm``).

A fresh process then loads each kernel it needs (milliseconds) instead of compiling it
(0.2-8 s each). Two sets:

* **common** (the default, about a minute on two cores): the encodings most images use
  (BITPIX 16 and 32 integers, float32 and float64, unscaled, big-endian as FITS stores them)
  with exactly the kernels their everyday reductions run: decode (``.compute()``), sums and
  counts (``sum``/``nansum``, float64 and, for float32 data, float32 results), mean/variance
  moments (``mean``/``std`` and their ``nan`` forms, ``dfits stats``), min/max, integer sums,
  and the weighted sums of the accessor's moment maps; each over trailing axes (the ``rows``
  kernels: whole-array statistics, spectra) and over a leading one (``cols``: moment maps).
* **all** (``dfits warm --all``, ``warm(full=True)``, ~5 minutes on two cores): every BITPIX ×
  scaling (raw, scaled with and without BLANK, unsigned/int8 offset) × every kernel above,
  plus min/max with their index along either form.

Both sets also take the kernels every encoding shares: a table's fields decoded and summed out
of its rows (``to_pandas``, ``hdu.read``, ``aggregate``), the key counts of exact medians,
and the reductions of quantised float tiles from their integers (sums, extremes, moments,
moment maps, value bands; float32, and float64 in the full set), and the tile encoders of
compressed writes (quantised float32/float64 and int16/int32 images).
Each encoding also takes its smoothing kernels (``spectral_smooth``'s convolution,
``downsample_axis``'s block means) and the decode and weighted sums of their native float
results (the smoothed cube's ``.compute()`` and moment maps). Anything else (value bands,
other kernels over tile-decoded native-order data) compiles on first use, into the cache.
Work is spread over worker processes by (encoding, form); they share the cache safely
(:mod:`dfits.kernels._cache`). Before compiling, entries that an older dfits (or Numba)
left are removed (:func:`dfits.kernels._cache.prune`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["COMMON", "ENCODINGS", "WarmReport", "warm", "warm_encoding"]

Encoding = tuple[int, float | None, float | None, int | None]

#: ``(BITPIX, BSCALE, BZERO, BLANK)`` of every stored encoding the full set covers
ENCODINGS: tuple[Encoding, ...] = (
    (8, None, None, None),
    (8, 2.0, 1.0, 0),
    (8, 1, -128, None),
    (16, None, None, None),
    (16, 0.5, 3.0, None),
    (16, 0.5, 3.0, -5),
    (16, 1, 32768, None),
    (32, None, None, None),
    (32, 2.5, -1.0, None),
    (32, 2.5, -1.0, 7),
    (32, 1, 2**31, None),
    (64, None, None, None),
    (64, 2.5, -1.0, 7),
    (64, 1, 2**63, None),
    (-32, None, None, None),
    (-32, 2.0, 1.0, None),
    (-64, None, None, None),
    (-64, 2.0, 1.0, None),
)

#: The encodings of the default (common) set
COMMON: tuple[Encoding, ...] = (
    (-32, None, None, None),
    (-64, None, None, None),
    (16, None, None, None),
    (32, None, None, None),
)

#: Where each form's kernels run: over a leading axis (cols), over all axes (rows)
_FORMS = {"cols": 0, "rows": None}


@dataclass(frozen=True)
class WarmReport:
    """What :func:`warm` did: encodings warmed, whether it was the full set, seconds taken,
    the cache directory used (None when no location is writable: kernels then compile in
    memory, per process) and the stale cache files removed first."""

    encodings: int
    full: bool
    seconds: float
    cache_dir: str | None
    pruned: int = 0


def warm(jobs: int | None = None, *, full: bool = False) -> WarmReport:
    """Compile (or load, when already cached) the common kernel set, or every kernel.

    Parameters
    ----------
    jobs : int, optional
        Worker processes; default: the CPUs this process may use. ``1`` warms in this
        process.
    full : bool
        Every encoding and kernel (``dfits warm --all``) instead of the common set.

    Returns
    -------
    WarmReport
    """
    from dfits.kernels._cache import cache_dir, prune

    start = time.perf_counter()
    pruned = prune()
    encodings = ENCODINGS if full else COMMON
    tasks: list = [(enc, form, full) for enc in encodings for form in _FORMS]
    tasks.append(_SHARED)
    tasks.append((*_TILES[:2], full))
    tasks.append(_WRITES)
    if jobs is None:
        has_affinity = hasattr(os, "sched_getaffinity")
        jobs = len(os.sched_getaffinity(0)) if has_affinity else os.cpu_count() or 1
    jobs = max(1, min(jobs, len(tasks)))
    if jobs == 1:
        for task in tasks:
            _warm_task(task)
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            # the slow column kernels first, so that no worker is left with one at the end
            list(pool.map(_warm_task, sorted(tasks, key=lambda t: str(t[1]))))
    seconds = time.perf_counter() - start
    return WarmReport(len(encodings), full, seconds, cache_dir(), pruned)


def warm_encoding(encoding: Encoding, *, full: bool = False) -> None:
    """Run the common (or, with ``full``, every) kernel of one ``(BITPIX, BSCALE, BZERO,
    BLANK)`` on a tiny array, over both forms."""
    for form in _FORMS:
        _warm_task((encoding, form, full))


#: The task of the kernels every encoding shares (:func:`_warm_shared`)
_SHARED = ("shared", "shared", False)


def _warm_shared() -> None:
    """The kernels no image encoding selects: a table's fields decoded out of its rows
    (``to_pandas``, ``hdu.read``) and summed in one pass (``aggregate``), and the key counts
    of the exact medians (``median``, ``mad_std``), for float32 and float64."""
    from dfits.kernels.fielddecode import decode_fields
    from dfits.kernels.fieldsums import field_sums
    from dfits.kernels.histogram import key_counts

    # read-only inputs, as the calls get them (mapped rows, decoded chunks): Numba types a
    # read-only array apart from a writable one, and compiles each
    rows = _read_only(np.zeros((2, 8), np.uint8))
    out = np.empty(2, np.float32)
    decode_fields(rows, np.array([0]), np.array([4]), np.zeros(1, np.uint64), [out])
    for skipna in (False, True):
        field_sums(rows, np.array([0]), np.array([4]), skipna)
    for dtype, key in ((np.float32, np.uint32), (np.float64, np.uint64)):
        for values in (np.zeros(4, dtype), _read_only(np.zeros(4, dtype))):
            for centre in (None, 0.0):
                key_counts(values, centre, 0, np.zeros(1, key))


#: The task of the quantised tiles' fused reductions (:func:`_warm_tiles`)
_TILES = ("tiles", "tiles", False)
#: a value band (``x > 0``) as :func:`dfits.stored.thresholds.comparison_band` gives it
_BAND = (5e-324, np.inf)


def _warm_tiles(full: bool) -> None:
    """The reductions of quantised float tiles straight from their decoded integers (float32;
    the full set float64 too), as :mod:`dfits.tiles.quantised` calls them: sums and extremes
    of chunks of whole tiles (:mod:`~dfits.kernels.tilereduce`), of windows of tiles, and
    arg-extremes (:mod:`~dfits.kernels.tilesums`), moments over either form and moment maps
    (:mod:`~dfits.kernels.tilemoments`), value bands' sums, counts, moments and extremes
    (:mod:`~dfits.kernels.tilebands`, as :mod:`dfits.stored.cuts` asks them), and the floats
    of a chunk (``place_group``)."""
    from dfits.format.dtypes import DecodeSpec
    from dfits.kernels import tilegroup
    from dfits.kernels.tilebands import tile_band_sum_count
    from dfits.kernels.tilefill import tile_map
    from dfits.kernels.tilemoments import tile_moments, tile_weighted_sums
    from dfits.kernels.tilereduce import reduce_tiles
    from dfits.kernels.tilesums import tile_indexed, window_extrema, window_sum_count

    # two row tiles of four, with the arrays' types the tile reader gives them
    packed, shape = np.zeros(8, np.int32), (2, 4)
    shapes, firsts = np.array([[1, 4], [1, 4]]), np.array([[0, 0], [1, 0]])
    quant = (np.ones(2), np.zeros(2), None, 2, np.zeros(2, np.int64))
    for dtype in (np.float32, np.float64) if full else (np.float32,):
        spec = DecodeSpec(bitpix=-8 * np.dtype(dtype).itemsize, physical=np.dtype(dtype),
                          byteorder="=")  # fmt: skip
        tilegroup.place_group(packed, np.empty(shape, dtype), shapes, firsts, quant)
        whole = tile_map(packed, shapes, firsts, quant, shape, (0, 0))
        window = tile_map(packed, shapes, firsts, quant, (2, 3), (0, 1))
        for axes in ((0, 1), (0,)):
            for skipna in (False, True):
                reduce_tiles(packed, shapes, firsts, quant, shape, axes, "sum", skipna, dtype)
                tile_moments(whole, spec, shape, axes, skipna)
                window_sum_count(window, spec, (2, 3), axes, skipna)
            for want_max in (False, True):
                op = "max" if want_max else "min"
                reduce_tiles(packed, shapes, firsts, quant, shape, axes, op, False, dtype)
                window_extrema(window, spec, (2, 3), axes, want_max)
                tile_indexed(whole, spec, shape, axes, want_max)
                window_extrema(whole, spec, shape, axes, want_max, _BAND)
            # a band's sums and counts, counts alone, float32 sums alone (float32 data)
            tile_band_sum_count(whole, spec, shape, axes, _BAND)
            tile_band_sum_count(whole, spec, shape, axes, _BAND, sums=False)
            if dtype == np.float32:
                tile_band_sum_count(whole, spec, shape, axes, _BAND, dtype, counts=False)
            tile_moments(whole, spec, shape, axes, True, _BAND)
        tile_weighted_sums(whole, spec, shape, 0, np.ones(2), None)


#: The task of the compressed writes' tile encoders (:func:`_warm_writes`)
_WRITES = ("writes", "writes", False)


def _warm_writes() -> None:
    """The kernels of a compressed write, with the arrays' types the writer gives them: the
    quantised float tiles (float32, float64; every algorithm shares the kernel), the integer
    tiles (int16, int32; RICE_1 and the raw forms share it) and the sum of the heap's words
    (DATASUM)."""
    from dfits.format.imagehdu import parse_storage
    from dfits.format.ztable import parse_compression
    from dfits.kernels.checksum import word_sum
    from dfits.kernels.inttiles import int_batches
    from dfits.kernels.tileencode import encode_block

    out = np.empty(1 << 16, np.uint8)
    for dtype in ("float32", "float64", "int16", "int32"):
        storage = parse_storage(dtype, "warm")
        spec = parse_compression((4, 8), storage, "warm", compression="RICE_1")
        block = np.arange(32, dtype=dtype).reshape(4, 8)
        encode = int_batches if storage.bitpix > 0 else encode_block
        for batch in encode(spec, block, (0, 0), out):
            # a view of the heap buffer (RICE_1), and bytes (read-only: joined GZIP tiles)
            word_sum(np.frombuffer(batch.pieces[0], np.uint8))
            word_sum(np.frombuffer(bytes(batch.pieces[0]), np.uint8))


def _warm_smoothing(u: np.ndarray, spec) -> None:
    """The smoothing kernels of one encoding, as ``dfits.cube`` calls them: the convolution
    (``spectral_smooth``) and block means (``downsample_axis``) over the stored bytes, then,
    over their native float result (a task's ``as_chunk``), the decode (``.compute()``) and
    the weighted sums of its moment maps."""
    from dfits import kernels
    from dfits.format.dtypes import DecodeSpec
    from dfits.kernels.smooth import block_mean, convolve_axis

    block_mean(u, spec, 0, 2)
    smoothed = convolve_axis(u, spec, 0, np.ones(3))
    bitpix = -8 * smoothed.dtype.itemsize
    native = DecodeSpec(bitpix=bitpix, physical=smoothed.dtype, byteorder="=")
    v = smoothed.view(np.uint32 if bitpix == -32 else np.uint64)
    kernels.decode(v, native)
    kernels.weighted_sums(v, native, 0, np.ones(2))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _warm_task(task: tuple[Encoding, str, bool]) -> None:
    """The kernels of one encoding and form, as the array layer calls them."""
    from dfits import kernels
    from dfits.format.dtypes import parse_decode_spec

    if task == _SHARED:
        _warm_shared()
        return
    if task[:2] == _TILES[:2]:
        _warm_tiles(task[2])
        return
    if task == _WRITES:
        _warm_writes()
        return
    encoding, form, full = task
    spec = parse_decode_spec(*encoding)[0]
    u = np.zeros((2, 3, 4), f"u{abs(encoding[0]) // 8}")
    axis = _FORMS[form]
    if form == "rows":
        kernels.decode(u, spec)
        _warm_smoothing(u, spec)
    for skipna in (False, True):
        kernels.sum_count(u, spec, axis, skipna=skipna)
        kernels.moments(u, spec, axis, skipna=skipna)
        if full or spec.physical == np.float32:  # float32 data summed in float32
            kernels.sum_count(u, spec, axis, skipna=skipna, dtype=np.float32, counts=False)
    for want_max in (False, True):
        # min/max: the value-only kernel over rows, the indexed one over columns (faster
        # there, see dfits.stored.passes); the full set has both for both forms
        if full or form == "rows":
            kernels.extrema(u, spec, axis, want_max=want_max, with_index=False)
        if full or form == "cols":
            kernels.extrema(u, spec, axis, want_max=want_max)
    if kernels.is_integer_kind(spec):
        kernels.integer_sum(u, spec, axis)
    if form == "cols":
        kernels.weighted_sums(u, spec, 0, np.ones(2))
