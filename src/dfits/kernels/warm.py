"""Compile the common kernel set ahead of time, into Numba's on-disk cache (``dfits warm``).

A fresh process then loads each kernel it needs (milliseconds) instead of compiling it
(0.2-4 s each). The common set is every BITPIX × scaling (raw, scaled with and without BLANK,
unsigned/int8 offset) as FITS stores it (big-endian), times the reductions that
``dfits.open(...).data``, the ``.fits`` accessor and the command line run: decode, sums and
counts (``nan``-skipping or not, float64 and the float32 of moment maps), integer sums,
mean/variance moments, min/max (with and without their index) and the weighted sums of
moment maps, each over trailing axes (the ``rows`` kernels) and over a leading one
(``cols``). Tile-decoded (native-order) data and value bands compile on first use.

Encodings are warmed in parallel worker processes; they share the cache safely
(:mod:`dfits.kernels._cache`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["ENCODINGS", "WarmReport", "warm", "warm_encoding"]

#: ``(BITPIX, BSCALE, BZERO, BLANK)`` of every stored encoding the common set covers
ENCODINGS: tuple[tuple[int, float | None, float | None, int | None], ...] = (
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


@dataclass(frozen=True)
class WarmReport:
    """What :func:`warm` did: encodings warmed, seconds taken, the cache directory used
    (None when no location is writable: kernels then compile in memory, per process)."""

    encodings: int
    seconds: float
    cache_dir: str | None


def warm(jobs: int | None = None) -> WarmReport:
    """Compile (or load, when already cached) the common kernel set.

    Parameters
    ----------
    jobs : int, optional
        Worker processes; default: the CPUs this process may use. ``1`` warms in this
        process.

    Returns
    -------
    WarmReport
    """
    from dfits.kernels._cache import cache_dir

    start = time.perf_counter()
    if jobs is None:
        has_affinity = hasattr(os, "sched_getaffinity")
        jobs = len(os.sched_getaffinity(0)) if has_affinity else os.cpu_count() or 1
    jobs = max(1, min(jobs, len(ENCODINGS)))
    if jobs == 1:
        for enc in ENCODINGS:
            warm_encoding(enc)
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(warm_encoding, ENCODINGS))
    return WarmReport(len(ENCODINGS), time.perf_counter() - start, cache_dir())


def warm_encoding(encoding: tuple[int, float | None, float | None, int | None]) -> None:
    """Run every common kernel of one ``(BITPIX, BSCALE, BZERO, BLANK)`` on a tiny array."""
    from dfits import kernels
    from dfits.format.dtypes import parse_decode_spec

    spec = parse_decode_spec(*encoding)[0]
    u = np.zeros((2, 3, 4), f"u{abs(encoding[0]) // 8}")
    kernels.decode(u, spec)
    for axis in (None, 0, (1, 2)):  # rows (whole), cols (leading axis), rows (trailing)
        for skipna in (False, True):
            kernels.sum_count(u, spec, axis, skipna=skipna)
            kernels.moments(u, spec, axis, skipna=skipna)
        kernels.sum_count(u, spec, axis, skipna=True, dtype=np.float32, counts=False)
        for want_max in (False, True):
            kernels.extrema(u, spec, axis, want_max=want_max)
            kernels.extrema(u, spec, axis, want_max=want_max, with_index=False)
        if kernels.is_integer_kind(spec):
            kernels.integer_sum(u, spec, axis)
    kernels.weighted_sums(u, spec, 0, np.ones(2))
