"""Pure planning for FFTs along chunked axes: how to split a length, when to use Bluestein,
how to scale for ``norm``, how big a block may be. No dask here: every choice is a function of
numbers, so the tests can check them without building a graph.

A length ``N`` is transformed in one of three ways:

``direct``
    the axis fits one block: make it one chunk and let numpy transform each block;
``sixstep``
    ``N = N1 * N2`` with both factors small enough for one line to fit a block: column FFTs of
    length ``N1``, twiddles, row FFTs of length ``N2`` (Bailey's four/six-step);
``bluestein``
    no such factorisation (a large prime factor): a chirp convolution of a smooth length
    ``M >= 2N - 1``, itself transformed by the six-step.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Literal

Norm = Literal["backward", "ortho", "forward"]
NORMS: tuple[str, ...] = ("backward", "ortho", "forward")

__all__ = [
    "NORMS",
    "DiskPlan",
    "Norm",
    "Split",
    "default_memory_limit",
    "divisors",
    "next_smooth",
    "parse_norm",
    "plan_disk",
    "plan_length",
    "scale",
]


@dataclass(frozen=True)
class Split:
    """How one axis of length ``n`` is transformed.

    Attributes
    ----------
    method : {"direct", "sixstep", "bluestein"}
    n1, n2 : int
        The six-step factors (``n == n1 * n2``); for ``direct`` ``n1 == n`` and ``n2 == 1``;
        for ``bluestein`` the factors of the smooth length ``m``.
    m : int
        The convolution length for ``bluestein``, else ``n``.
    """

    method: Literal["direct", "sixstep", "bluestein"]
    n: int
    n1: int
    n2: int
    m: int


def parse_norm(norm: str | None) -> Norm:
    """``None`` means ``"backward"``, as in numpy; anything else not in :data:`NORMS` raises."""
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS} or None, not {norm!r}")
    return norm  # type: ignore[return-value]


def scale(n: int, norm: Norm, inverse: bool) -> float:
    """The factor numpy applies to an unnormalised transform of length ``n``.

    >>> scale(4, "backward", inverse=True), scale(4, "ortho", inverse=False)
    (0.25, 0.5)
    """
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") != inverse:
        return 1.0 / n
    return 1.0


def divisors(n: int) -> list[int]:
    """All divisors of ``n`` in increasing order (trial division up to ``sqrt(n)``).

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small, large = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    return small + large[::-1]


def next_smooth(n: int) -> int:
    """The smallest ``2**a * 3**b * 5**c >= n`` (lengths pocketfft transforms fastest).

    >>> next_smooth(7), next_smooth(97), next_smooth(1)
    (8, 100, 1)
    """
    best = 1 << max(n - 1, 0).bit_length()
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            p = p35
            while p < n:
                p *= 2
            best = min(best, p)
            p35 *= 3
        p5 *= 5
    return best


def _balanced(n: int, max_line: int, prefer: int) -> tuple[int, int] | None:
    """``(n1, n2)`` with ``n1 * n2 == n``, both ``<= max_line``, ``n2`` as close to ``sqrt(n)``
    as possible, preferring an ``n2`` that divides ``prefer`` (the chunk sizes, so no
    realignment is needed)."""
    fits = _fitting_divisors(n, max_line)
    if not fits:
        return None
    root = math.sqrt(n)
    aligned = [d for d in fits if prefer % d == 0 and d > 1]
    pool = aligned if aligned and _close(aligned, root) else fits
    n2 = min(pool, key=lambda d: (abs(math.log(d / root)), d))
    return n // n2, n2


def _fitting_divisors(n: int, max_line: int) -> list[int]:
    """Divisors ``d`` of ``n`` with ``d <= max_line`` and ``n // d <= max_line``.

    Only ``[ceil(n / max_line), max_line]`` can hold them, so the search costs at most
    ``max_line`` vectorised steps, whatever ``n`` (a huge ``n=`` must not hang the planner).
    """
    lo, hi = -(-n // max_line), min(max_line, n)
    if lo > hi:
        return []
    import numpy as np

    found: list[int] = []
    # in pieces: one arange of up to max_line candidates was 2 x 64 MiB at a 64 MiB block,
    # allocated while the graph is built, under the caller's memory cap
    for start in range(lo, hi + 1, 1 << 16):
        stop = min(hi + 1, start + (1 << 16))
        d = np.arange(start, stop, dtype=object if n >= 1 << 62 else np.int64)
        found += [int(v) for v in d[(n % d) == 0]]
    return found


def _close(candidates: list[int], root: float) -> bool:
    # an aligned factor is worth it while the longer pass stays within 16x of sqrt(n); past
    # that the long lines cost more than one realigning rechunk of the input
    return any(max(d, root * root / d) <= 16 * root for d in candidates)


def plan_length(n: int, max_line: int, *, chunked: bool, prefer: int = 0) -> Split:
    """Choose how to transform one axis of length ``n``.

    Parameters
    ----------
    n : int
        Transform length (after ``n=`` padding or truncation).
    max_line : int
        Most elements one FFT line may have (a block's budget over its item size).
    chunked : bool
        Whether the axis has more than one chunk.
    prefer : int
        The gcd of the axis' chunk boundaries; a factor dividing it needs no realignment.

    >>> plan_length(1 << 20, 1 << 16, chunked=True)
    Split(method='sixstep', n=1048576, n1=1024, n2=1024, m=1048576)
    >>> plan_length(1009, 100, chunked=True).method
    'bluestein'
    """
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    if not chunked or n <= max_line:
        return Split("direct", n, n, 1, n)
    split = _balanced(n, max_line, prefer)
    if split is not None:
        return Split("sixstep", n, split[0], split[1], n)
    # the smallest 5-smooth convolution length, else a power of two (which splits evenly)
    for m in (next_smooth(2 * n - 1), 1 << (2 * n - 2).bit_length()):
        split = _balanced(m, max_line, 0)
        if split is not None:
            return Split("bluestein", n, split[0], split[1], m)
    raise ValueError(
        f"an FFT of length {n} needs lines longer than {max_line} elements: raise block_size"
    )


def default_memory_limit() -> int:
    """Half the machine's physical memory: transposes of bigger arrays go through disk."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a modest 8 GiB
        total = 8 << 30
    return int(total) // 2


#: blocks of the cap per thread. A pass now holds about two per task (the block read back,
#: transformed in place, and the FFT library's work buffer: ``tests/fft/test_transpose.py``
#: bounds a task at 2.5); the rest is left to the page cache, where a store's tiles stay
#: until the next pass reads them instead of being read back from disk, and to dask's
#: blocks in flight. ``tests/fft/test_ooc.py`` runs 2**22 complex64 under a 16 MiB cap.
HELD_BLOCKS = 6


@dataclass(frozen=True)
class DiskPlan:
    """An out-of-core six-step sized to a memory cap and a disk (see :func:`plan_disk`).

    Attributes
    ----------
    block_bytes : int
        ``block_size`` to pass to :func:`dfits.fft.fft` (and the input chunks' size).
    n1, n2 : int
        The six-step's factors.
    passes : int
        Sequential reads + writes of the data: the input, one per scratch store, the output.
    tile_bytes : int
        One zarr chunk of a scratch store: one disk request each way.
    seconds : float
        Predicted time at the disk's bandwidth and latency (CPU not counted).
    """

    block_bytes: int
    n1: int
    n2: int
    passes: int
    tile_bytes: int
    seconds: float


def plan_disk(
    n: int,
    itemsize: int,
    memory: int,
    *,
    threads: int,
    bandwidth: float,
    latency: float,
    natural: bool = True,
) -> DiskPlan:
    """Passes and block shape of an FFT of ``n`` values that do not fit ``memory``.

    The Parallel Disk Model's count: with ``M`` values of memory and transfers of ``B``
    values, an FFT needs ``ceil(log N / log(M / B))`` passes over the data. A six-step is the
    two-pass case (plus the first read and, in natural order, one transpose): it needs each
    factor's line in one block, ``N <= (block / itemsize)**2``. Blocks are as big as the cap
    allows, ``memory / (threads * HELD_BLOCKS)`` rounded down to a power of two, because a
    transpose's tile, its disk request, grows as the square of the block: ``block² / (8 N)``
    bytes for complex64. Each pass costs ``2 * 8N / bandwidth`` plus one latency per tile read
    and per tile written.

    >>> p = plan_disk(1 << 22, 8, 16 << 20, threads=2, bandwidth=1e9, latency=1e-4)
    >>> p.block_bytes, p.n1, p.n2, p.passes, p.tile_bytes
    (1048576, 2048, 2048, 4, 32768)
    """
    block = 1 << max(4, (memory // (threads * HELD_BLOCKS)).bit_length() - 1)
    # at least two blocks per thread, or the passes would leave threads idle
    block = max(16, min(block, 1 << max(4, (n * itemsize // (2 * threads)).bit_length() - 1)))
    max_line = block // itemsize
    split = plan_length(n, max_line, chunked=True)
    if split.method != "sixstep":
        need = math.ceil(math.log(n) / math.log(max(2, max_line)))
        raise ValueError(
            f"an FFT of {n} values under {memory} bytes of memory needs {need} passes of "
            f"lines <= {max_line} values; the six-step makes two: raise the memory cap"
        )
    rows, cols = max(1, max_line // split.n2), max(1, max_line // split.n1)
    tile = min(rows, split.n1) * min(cols, split.n2) * itemsize
    stores = 3 if natural else 2
    tiles = n * itemsize // tile
    seconds = (stores + 1) * 2 * n * itemsize / bandwidth + stores * 2 * tiles * latency
    return DiskPlan(block, split.n1, split.n2, stores + 1, tile, seconds)
