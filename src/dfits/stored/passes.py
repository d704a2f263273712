"""Memoised kernel passes over a stored chunk.

Each function runs one fused kernel over a chunk's stored bytes and keeps the result on the
chunk, keyed by what was asked (axes, NaN rule, band), so that related requests answer from
one pass: a count then a sum, a mean then a variance, an extreme then its index. Nothing here
knows who asks; a request that a memoised pass cannot answer runs the pass it needs. Two
threads asking for the same pass of one chunk at once (dask runs the chunk steps of
reductions computed together in parallel: quicklook's sum and count) run it once: the second
waits for the first's result, and other passes of the chunk go on meanwhile.

Nothing here knows which reader fed the chunk either. A reader whose chunk is still unread
(:attr:`~dfits.stored.stored.StoredChunk.unread`) may answer a sum, an extreme, the moments,
a moment map's weighted sums or the passes of a value band (:mod:`dfits.stored.cuts`) from
what it holds instead (quantised tiles reduce their
integers: :mod:`dfits.tiles.quantised`) by giving that pending object the methods of
:class:`FusedSource`; the passes look them up by name.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from dfits._lazy import kernels
from dfits.stored.stored import StoredChunk

__all__ = [
    "FusedSource",
    "band_extrema",
    "band_moments",
    "band_sum_count",
    "extrema",
    "indexed",
    "moments",
    "sum_count",
    "total",
    "weighted_sums",
]


class FusedSource(Protocol):
    """What an unread chunk's pending object may offer to answer a pass without its values.

    Each method answers for a chunk decoded with ``spec`` (a chunk rescaled since it was
    read has another spec), or returns None, and the pass then reads the values and runs
    its kernel. A pending object without these methods (a remote byte range) always reads.
    """

    def sum_count(self, spec: Any, axes: tuple[int, ...], skipna: bool) -> tuple | None:
        """``(n, total)`` over ``axes``, as :func:`sum_count` gives them, or None."""
        ...

    def extrema(self, spec: Any, axes: tuple[int, ...], want_max: bool) -> tuple | None:
        """``(value, valid count, NaN count)`` over ``axes``, as :func:`extrema`, or None."""
        ...

    def indexed(self, spec: Any, axes: tuple[int, ...], want_max: bool) -> tuple | None:
        """``(value, index, first NaN index)`` over ``axes``, as :func:`indexed`, or None."""
        ...

    def moments(self, spec: Any, axes: tuple[int, ...], skipna: bool) -> tuple | None:
        """``(n, mean, M2)`` over ``axes``, as :func:`moments`, or None."""
        ...

    def weighted_sums(
        self, spec: Any, axis: int, weights: np.ndarray, threshold: float | None
    ) -> np.ndarray | None:
        """``Σ I``, ``Σ I·w``, ``Σ I·w²`` over ``axis``, as :func:`weighted_sums`, or None."""
        ...

    def band_sum_count(
        self, spec: Any, axes: tuple[int, ...], band: tuple, dtype: Any, counts: bool, sums: bool
    ) -> tuple | None:
        """``(sums, counts)`` inside ``band`` over ``axes``, as :func:`band_sum_count`, or
        None."""
        ...

    def band_moments(self, spec: Any, axes: tuple[int, ...], band: tuple) -> tuple | None:
        """``(n, mean, M2)`` inside ``band`` over ``axes``, as :func:`band_moments`, or None."""
        ...

    def band_extrema(
        self, spec: Any, axes: tuple[int, ...], want_max: bool, band: tuple
    ) -> tuple | None:
        """The extremes inside ``band`` over ``axes``, as :func:`band_extrema`, or None."""
        ...


def _fused(x: StoredChunk, name: str, axes: tuple[int, ...], flag: bool) -> tuple | None:
    """The pass ``name`` of :class:`FusedSource` answered by the chunk's unread source, or
    None when it has none or declines."""
    run = getattr(x.unread, name, None)
    return None if run is None else run(x.spec, axes, flag)


def sum_count(x: StoredChunk, axes: tuple[int, ...], skipna: bool):
    """``(n, total)`` of the chunk over ``axes``: float64 sums and int64 counts.

    Always the sum pass, never ``n·mean`` of memoised moments: that differs in the last
    bits, and which pass ran first on a chunk shared by a mean and a variance in one graph
    depends on the scheduler, so the mean's bits would too.
    """
    return _memoised(x, ("sum", axes, skipna), lambda: _sum_pass(x, axes, skipna))


def _sum_pass(x: StoredChunk, axes: tuple[int, ...], skipna: bool):
    memo = _fused(x, "sum_count", axes, skipna)
    if memo is None:
        total_, n = kernels.sum_count(x.u, x.spec, axes, skipna=skipna)
        memo = (n, total_)
    return memo


def moments(x: StoredChunk, axes: tuple[int, ...], skipna: bool):
    """``(n, mean, M2)`` of the chunk over ``axes`` (one pass of the moments kernel)."""
    return _memoised(x, ("moments", axes, skipna), lambda: _moments_pass(x, axes, skipna))


def _moments_pass(x: StoredChunk, axes: tuple[int, ...], skipna: bool):
    memo = _fused(x, "moments", axes, skipna)
    return kernels.moments(x.u, x.spec, axes, skipna=skipna) if memo is None else memo


def weighted_sums(x: StoredChunk, axis: int, weights: np.ndarray, threshold: float | None):
    """``Σ I``, ``Σ I·w`` and ``Σ I·w²`` of the chunk over ``axis``, stacked first (a moment
    map's one pass: not memoised, its weights are the caller's)."""
    x.spec.check()
    run = getattr(x.unread, "weighted_sums", None)
    out = None if run is None else run(x.spec, axis, weights, threshold)
    if out is None:
        out = kernels.weighted_sums(x.u, x.spec, axis, weights, threshold=threshold)
    return out


def _memoised(x: StoredChunk, key: tuple, run):
    """The pass ``run`` memoised on the chunk under ``key`` (run once, after the spec check,
    whichever threads ask at once)."""
    memo = x._memo.get(key)
    if memo is None:
        # one lock per pass of the chunk (dict.setdefault is atomic): a thread asking for a
        # pass already running waits for it instead of running it again
        with x._memo.setdefault(("lock", key), threading.Lock()):
            memo = x._memo.get(key)
            if memo is None:
                x.spec.check()
                memo = x._memo[key] = run()
    return memo


def total(x: StoredChunk, axes: tuple[int, ...], skipna: bool, dtype=None):
    """The chunk's sums over ``axes``: float64, or float32 straight from the kernel.

    A float32 sum asked first is stored in float32 by the kernel (dask's combine casts every
    partial to the dtype it asked for before adding, so nothing is lost), which halves the
    fresh memory a moment map's chunk step fills; sums already worked out are reused.
    """
    narrow = dtype is not None and np.dtype(dtype) == np.float32
    done = ("sum", axes, skipna) in x._memo or ("moments", axes, skipna) in x._memo
    if narrow and not done:
        x.spec.check()
        # a fused source (quantised tiles) sums in one pass too: float64 partials, cast by finish
        fused = _fused(x, "sum_count", axes, skipna)
        if fused is not None:
            return x._memo.setdefault(("sum", axes, skipna), fused)[1]
        return kernels.sum_count(x.u, x.spec, axes, skipna=skipna, dtype=np.float32, counts=False)[
            0
        ]
    return sum_count(x, axes, skipna)[1]


def extrema(x: StoredChunk, axes: tuple[int, ...], want_max: bool):
    """``(value, valid count, NaN count)`` of the chunk's extremes over ``axes``.

    The value-only kernel; answered from the indexed pass when that is memoised.
    """
    memo = x._memo.get(("indexed", axes, want_max))
    if memo is None and ("extrema", axes, want_max) not in x._memo:
        fused = _fused(x, "extrema", axes, want_max)
        if fused is not None:
            return x._memo.setdefault(("extrema", axes, want_max), fused)
    if memo is None and _columns(x, axes):
        # along outer axes the indexed kernel runs faster than the value-only one (18 ms
        # against 39 ms for 128 MiB of float32 here; int16 and float64 alike), so run it:
        # dask's argmax asks the maximum first and its index next, and both answer from it
        memo = indexed(x, axes, want_max)
    if memo is not None:
        val, idx, nanidx = memo
        # indexed kernel: idx is -1 where a slice has no valid value, nanidx the first NaN
        return val, (idx >= 0).astype(np.int64), (nanidx >= 0).astype(np.int64)
    return _memoised(
        x,
        ("extrema", axes, want_max),
        lambda: kernels.extrema(x.u, x.spec, axes, want_max=want_max, with_index=False),
    )


def _columns(x: StoredChunk, axes: tuple[int, ...]) -> bool:
    """True when the kernels reduce ``axes`` column-wise: the chunk's last axis is kept."""
    return bool(axes) and x.ndim - 1 not in axes and x.shape[-1] > 1


def indexed(x: StoredChunk, axes: tuple[int, ...], want_max: bool):
    """``(value, index, first NaN index)`` of the chunk's extremes over ``axes``.

    Indices are flat over the reduced axes; -1 where a slice has no valid value (``index``)
    or no NaN (``first NaN index``).
    """
    return _memoised(x, ("indexed", axes, want_max), lambda: _indexed_pass(x, axes, want_max))


def _indexed_pass(x: StoredChunk, axes: tuple[int, ...], want_max: bool):
    memo = _fused(x, "indexed", axes, want_max)
    return kernels.extrema(x.u, x.spec, axes, want_max=want_max) if memo is None else memo


# -- the passes of a value band (dfits.stored.cuts memoises them) -------------------------------
def _banded(x: StoredChunk, name: str, *args: Any):
    """The band pass ``name`` answered by the chunk's unread source, or None."""
    run = getattr(x.unread, name, None)
    return None if run is None else run(x.spec, *args)


def band_sum_count(
    x: StoredChunk,
    axes: tuple[int, ...],
    band: tuple[float, float],
    *,
    dtype: Any = None,
    counts: bool = True,
    sums: bool = True,
):
    """``(sums, counts)`` of the chunk's values inside ``band`` over ``axes``: one pass of
    :func:`dfits.kernels.band_sum_count` (its ``dtype``, ``counts`` and ``sums``), or of
    the unread source's own."""
    out = _banded(x, "band_sum_count", axes, band, dtype, counts, sums)
    if out is None:
        lo, hi = band
        out = kernels.band_sum_count(
            x.u, x.spec, axes, lo=lo, hi=hi, dtype=dtype, counts=counts, sums=sums
        )
    return out


def band_moments(x: StoredChunk, axes: tuple[int, ...], band: tuple[float, float]):
    """``(n, mean, M2)`` of the chunk's values inside ``band`` over ``axes``
    (:func:`dfits.kernels.band_moments`, or the unread source's own)."""
    out = _banded(x, "band_moments", axes, band)
    return kernels.band_moments(x.u, x.spec, axes, lo=band[0], hi=band[1]) if out is None else out


def band_extrema(x: StoredChunk, axes: tuple[int, ...], want_max: bool, band: tuple):
    """``(value, count inside, count outside)`` of the extremes of the chunk's values inside
    ``band`` over ``axes`` (:func:`dfits.kernels.extrema` with ``band``, or the unread
    source's own)."""
    out = _banded(x, "band_extrema", axes, want_max, band)
    if out is None:
        out = kernels.extrema(x.u, x.spec, axes, want_max=want_max, with_index=False, band=band)
    return out
