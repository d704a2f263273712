"""The winning part of each element when dask combines the partials of an arg reduction.

dask's ``argmax``/``argmin`` keep, for every output element, each part's extreme and its
index; a combine step picks the part whose extreme wins, with numpy's rules: of equal extremes
the first wins, and a NaN wins (``argmax``/``argmin`` return the first NaN) unless NaNs are
skipped (``nanargmax``/``nanargmin``: any value beats a NaN). :func:`fold_part` folds one part
into a running best, in place; :func:`gather_part` copies a part's values where it won. Both
take flat arrays (any stride) and run one pass, so combining ``k`` parts reads each once.

One case differs from numpy on purpose, as the chunk kernels do: where a slice holds only NaN
and -inf (``nanargmax``; +inf for ``nanargmin``), numpy fills NaN with -inf and answers the
first NaN; here the first -inf wins (dask's own combine would answer NaN and raise).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

__all__ = ["fold_part", "gather_part", "oracle_winner"]


@functools.cache
def _fold(want_max: bool, skipna: bool):
    # no fast-math: the NaN tests (v != v) must survive
    @njit(nogil=True)
    def fold(best, winner, values, k):
        for i in range(best.size):
            v = values[i]
            b = best[i]
            take = v > b if want_max else v < b
            if not take:
                # comparisons with NaN are false: only these tests move a NaN in or out
                take = (b != b and v == v) if skipna else (v != v and b == b)
            if take:
                best[i] = v
                winner[i] = k

    return fold


@functools.cache
def _gather():
    @njit(nogil=True)
    def gather(out, winner, values, k):
        for i in range(out.size):
            if winner[i] == k:
                out[i] = values[i]

    return gather


def fold_part(
    best: np.ndarray,
    winner: np.ndarray,
    values: np.ndarray,
    k: int,
    *,
    want_max: bool,
    skipna: bool,
) -> None:
    """Where part ``k``'s ``values`` beat ``best``, write them there and ``k`` into ``winner``.

    ``best`` and ``winner`` are 1-d and writable; ``values`` is 1-d of the same length. Start
    with part 0's values and zeros, then fold parts 1, 2, ... in order.
    """
    if best.size:
        _fold(bool(want_max), bool(skipna))(best, winner, values, winner.dtype.type(k))


def gather_part(out: np.ndarray, winner: np.ndarray, values: np.ndarray, k: int) -> None:
    """``out[i] = values[i]`` wherever ``winner[i] == k`` (all 1-d, same length)."""
    if out.size:
        _gather()(out, winner, values, winner.dtype.type(k))


def oracle_winner(parts: list[np.ndarray], *, want_max: bool, skipna: bool) -> np.ndarray:
    """numpy's answer: the arg function over the parts stacked on a new first axis.

    A slice of NaN only gives 0 where NaNs are skipped (numpy raises; dask's combine steps
    fall back to index 0 there).
    """
    stacked = np.stack(parts)
    func = np.argmax if want_max else np.argmin
    if not (skipna and stacked.dtype.kind in "fc"):
        return func(stacked, axis=0)
    real = ~np.isnan(stacked)
    filled = np.where(real, stacked, -np.inf if want_max else np.inf)
    best = (np.max if want_max else np.min)(filled, axis=0)
    hit = (filled == best) & real
    return np.where(hit.any(axis=0), hit.argmax(axis=0), 0)
