"""What one dask task does to one block: split or merge axes, transform lines, twiddle.

Every function takes a numpy block (or anything ``numpy.asarray`` accepts: a dfits stored
chunk decodes once here) plus plain numbers, and returns a new numpy array, so the graph
carries only offsets and lengths, never data. Per-line FFTs are pocketfft (scipy's build when
scipy is installed, else numpy's; see :func:`_library`), unnormalised
(``norm="backward"`` forward, ``norm="forward"`` inverse); the one scale factor ``norm`` asks
for is applied by the last pass.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = [
    "chirp",
    "columns",
    "kernel",
    "lines",
    "merge_axes",
    "split_axis",
]


@functools.cache
def _library() -> Any:
    """scipy's pocketfft when installed, else numpy's.

    Both are pocketfft and agree to rounding, but scipy's C++ build transforms the strided
    columns of a block (the six-step's first pass) about twice as fast: it works on several
    columns at once, where numpy's copies them out one by one. Measured on (8192, 256)
    complex128 blocks: 182 ms against 328 ms along axis 0, 122 against 125 ms along axis 1.
    """
    try:
        import scipy.fft as library
    except ImportError:
        library = np.fft
    return library


def _fft(
    block: Any,
    axis: int,
    inverse: bool,
    ctype: np.dtype,
    workers: int = 1,
    overwrite: bool = False,
) -> np.ndarray:
    # both libraries compute in the input's precision (complex64 stays complex64); casting
    # ints first makes them follow numpy.fft's result dtype exactly
    block = np.asarray(block)
    if block.dtype != ctype and not np.issubdtype(block.dtype, np.floating):
        block = block.astype(ctype)
    library = _library()
    # scipy splits the lines of one block over ``workers`` threads (a pass of fewer blocks
    # than cores would leave cores idle); numpy's pocketfft has one thread
    kw: dict[str, Any] = {"workers": workers} if library is not np.fft and workers > 1 else {}
    if overwrite and library is not np.fft:
        # the block is the task's own (read from a scratch store): transformed where it lies,
        # no block-sized result allocated (scipy writes in place for a complex input)
        kw["overwrite_x"] = True
    if inverse:
        out = library.ifft(block, axis=axis, norm="forward", **kw)
    else:
        out = library.fft(block, axis=axis, norm="backward", **kw)
    return out.astype(ctype, copy=False)


def lines(
    block: Any,
    axis: int,
    inverse: bool,
    ctype: np.dtype,
    factor: float,
    workers: int = 1,
    overwrite: bool = False,
) -> np.ndarray:
    """Transform every line of ``block`` along ``axis`` (one whole line per block), scaled,
    on ``workers`` threads; ``overwrite``: ``block`` is this task's own and may be reused."""
    out = _fft(block, axis, inverse, ctype, workers, overwrite)
    if factor != 1.0:
        out *= out.dtype.type(factor)
    return out


def _roots(n: int, sign: float, k: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``exp(sign·2πi·(k·j mod n)/n)`` over the outer product of ``k`` and ``j``, each root
    from its exact integer phase (``k·j < n`` here, so int64 holds it)."""
    angle = (np.multiply.outer(k, j) % n) * (sign * 2.0 * np.pi / n)
    out = np.empty(angle.shape, dtype=np.complex128)
    np.cos(angle, out=out.real)
    np.sin(angle, out=out.imag)
    return out


class _Twiddles:
    """``W**(k1·n2)``, ``W = exp(∓2πi/n)``, for rows ``k1 < rows``, ``n2`` in ``[start, start +
    width)``, one slab of ``K ≈ sqrt(rows)`` rows at a time.

    With ``k1 = K·a + b`` the factor is ``W**(K·a·n2) · W**(b·n2)``: two tables of exact
    roots, ``ceil(rows / K)`` and ``K`` rows of ``width`` (``2·sqrt(rows)·width`` sines and
    cosines for ``rows·width`` twiddles), and one complex product per twiddle; within a few
    ulp of the direct value. A slab is cache-sized, so no table the size of the block is ever
    held (a complex64 block's twiddles took a block of memory and a pass over it).
    """

    def __init__(
        self, rows: int, start: int, width: int, n: int, inverse: bool, ctype: np.dtype
    ) -> None:
        sign = 1.0 if inverse else -1.0
        self.k = math.isqrt(max(rows - 1, 0)) + 1
        cols = np.arange(start, start + width, dtype=np.int64)
        # float64 roots, then one rounding each to the result's precision
        self.hi = _roots(n, sign, np.arange(0, rows, self.k, dtype=np.int64), cols)
        self.hi = self.hi.astype(ctype, copy=False)
        self.lo = _roots(n, sign, np.arange(self.k, dtype=np.int64), cols).astype(ctype)
        self.rows = rows

    def slabs(self):
        """``(first, last, twiddles of rows [first, last))`` slab after slab (the twiddles are
        one buffer, overwritten by the next slab)."""
        buf = np.empty_like(self.lo)
        for a, first in enumerate(range(0, self.rows, self.k)):
            last = min(self.rows, first + self.k)
            yield first, last, np.multiply(self.hi[a], self.lo[: last - first], buf[: last - first])


def _twiddles(
    k1: int, start: int, width: int, n: int, inverse: bool, ctype: np.dtype
) -> np.ndarray:
    """All of :class:`_Twiddles`' rows at once, ``(k1, width)`` (for the tests)."""
    table = _Twiddles(k1, start, width, n, inverse, ctype)
    return np.concatenate([tw.copy() for _, _, tw in table.slabs()] or [table.lo[:0]])


def columns(
    block: Any,
    axis: int,
    n: int,
    inverse: bool,
    ctype: np.dtype,
    overwrite: bool = False,
    block_info: dict | None = None,
) -> np.ndarray:
    """The six-step's first pass on one block: transform along ``axis`` (all ``n1`` rows of the
    split axis, one chunk), then multiply by the twiddles of the block's ``n2`` columns, which
    sit at ``axis + 1``; ``overwrite``: ``block`` is this task's own and may be reused."""
    out = _fft(block, axis, inverse, ctype, overwrite=overwrite)
    assert block_info is not None
    start, stop = block_info[None]["array-location"][axis + 1]
    table = _Twiddles(out.shape[axis], start, stop - start, n, inverse, out.dtype)
    index: list[Any] = [slice(None)] * out.ndim
    for first, last, tw in table.slabs():
        index[axis] = slice(first, last)
        out[tuple(index)] *= tw.reshape(tw.shape + (1,) * (out.ndim - axis - 2))
    return out


def split_axis(block: Any, axis: int, n2: int) -> np.ndarray:
    """``(..., r * n2, ...)`` → ``(..., r, n2, ...)``: a chunk of whole rows of the six-step's
    matrix (a view, no copy, when the block is contiguous).

    A dfits stored chunk stays stored (its reshape is a view of the stored bytes): the first
    transpose then decodes each piece straight into the block the column FFTs transform,
    instead of decoding here and copying there."""
    if not hasattr(block, "reshape"):
        block = np.asarray(block)
    shape = block.shape
    return block.reshape((*shape[:axis], shape[axis] // n2, n2, *shape[axis + 1 :]))


def merge_axes(block: Any, axis: int) -> np.ndarray:
    """``(..., a, b, ...)`` → ``(..., a * b, ...)``, the inverse of :func:`split_axis` (a view
    of a contiguous block). ``block`` may come as the one-element list a blockwise without
    concatenation passes for the merged axis."""
    if isinstance(block, list):
        (block,) = block
    block = np.asarray(block)
    shape = block.shape
    return block.reshape((*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2 :]))


def _square_mod(i: np.ndarray, m: int) -> np.ndarray:
    """``i**2 % m`` exactly in int64 for ``m < 2**40`` (``i < m``): the square is split so no
    partial product passes 2**63."""
    hi, lo = i >> 16, i & 0xFFFF
    return (((i * hi) % m << 16) + i * lo) % m


def _chirp_at(k: np.ndarray, n: int, sign: float, ctype: np.dtype) -> np.ndarray:
    # k**2 is reduced modulo 2n in exact integers first: the phase of k**2 / n in float64
    # would lose all its digits for k past ~1e8
    angle = _square_mod(k % (2 * n), 2 * n) * (sign * np.pi / n)
    out = np.empty(angle.shape, dtype=np.complex128)
    np.cos(angle, out=out.real)
    np.sin(angle, out=out.imag)
    return out.astype(ctype, copy=False)


def chirp(n: int, inverse: bool, ctype: np.dtype, block_info: dict | None = None) -> np.ndarray:
    """Bluestein's chirp ``exp(∓iπ k²/n)`` (``-`` forward) for the block's ``k``."""
    assert block_info is not None
    ((start, stop),) = block_info[None]["array-location"]
    k = np.arange(start, stop, dtype=np.int64)
    return _chirp_at(k, n, 1.0 if inverse else -1.0, ctype)


def kernel(
    n: int, m: int, inverse: bool, ctype: np.dtype, block_info: dict | None = None
) -> np.ndarray:
    """Bluestein's convolution kernel of length ``m``: the conjugate chirp at ``j`` for
    ``j < n``, at ``m - j`` for ``j > m - n`` (its wrapped negative lags), zero between."""
    assert block_info is not None
    ((start, stop),) = block_info[None]["array-location"]
    j = np.arange(start, stop, dtype=np.int64)
    lag = np.where(j < n, j, m - j)
    out = _chirp_at(np.where(lag < n, lag, 0), n, -1.0 if inverse else 1.0, ctype)
    out[(j >= n) & (j <= m - n)] = 0
    return out
