"""Byte ranges of a region of a C-ordered array on disk, and how to fetch them in few requests.

A region (step-1 slices) of a stored array is a set of equal-length contiguous *runs*: the
innermost axes it spans whole are one run per index of the outer axes. Remote sources fetch
runs, not the region's bounding range — a spectrum through a 1 GiB cube is 100 runs of 4 bytes,
not one 400 MiB read — after *coalescing* runs whose gap is small into one request, since a
request costs more than reading a few hundred KiB past what is needed.

Pure integer arithmetic: no I/O here, so the planning is tested exhaustively on its own.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Runs", "bounding", "coalesce", "region_runs"]


@dataclass(frozen=True)
class Runs:
    """Equal-length runs, ascending: ``starts`` (absolute byte offsets) and ``length`` each.

    Packed one after the other, the runs hold the region in C order.
    """

    starts: np.ndarray
    length: int

    @property
    def nbytes(self) -> int:
        """Bytes of the region itself (runs packed)."""
        return len(self.starts) * self.length


def region_runs(
    offset: int,
    shape: tuple[int, ...],
    itemsize: int,
    starts: tuple[int, ...],
    counts: tuple[int, ...],
) -> Runs:
    """The contiguous runs holding ``[starts, starts + counts)`` of a C-ordered array.

    Parameters
    ----------
    offset : int
        Byte offset of element ``(0, ..., 0)``.
    shape : tuple of int
        Shape of the whole stored array.
    itemsize : int
        Bytes per element.
    starts, counts : tuple of int
        First index and number of elements of the region along each axis.

    Examples
    --------
    >>> r = region_runs(100, (4, 5, 6), 2, (1, 2, 0), (2, 2, 6))  # two planes, two whole rows
    >>> r.starts.tolist(), r.length
    ([184, 244], 24)
    """
    ndim = len(shape)
    if ndim == 0:
        return Runs(np.array([offset], np.int64), itemsize)
    if math.prod(counts) == 0:
        return Runs(np.zeros(0, np.int64), 0)
    strides = [itemsize] * ndim
    for a in range(ndim - 2, -1, -1):
        strides[a] = strides[a + 1] * shape[a + 1]
    # The run axis: the outermost axis such that every axis inside it is spanned whole.
    k = ndim - 1
    while k > 0 and counts[k] == shape[k]:
        k -= 1
    length = counts[k] * strides[k]
    base = offset + sum(s * st for s, st in zip(starts, strides, strict=True))
    run_starts = np.array([base], np.int64)
    for a in range(k - 1, -1, -1):
        steps = np.arange(counts[a], dtype=np.int64) * strides[a]
        run_starts = (steps[:, None] + run_starts[None, :]).ravel()
    return Runs(run_starts, length)


def coalesce(runs: Runs, gap: int) -> list[tuple[int, int, int, int]]:
    """Group runs into requests, merging neighbours at most ``gap`` bytes apart.

    Returns a list of ``(first_run, stop_run, start_byte, stop_byte)``: runs
    ``first_run .. stop_run - 1`` lie inside ``[start_byte, stop_byte)``.

    Examples
    --------
    >>> runs = Runs(np.array([0, 10, 1000, 1010]), 8)
    >>> coalesce(runs, 4)
    [(0, 2, 0, 18), (2, 4, 1000, 1018)]
    >>> coalesce(runs, 0)
    [(0, 1, 0, 8), (1, 2, 10, 18), (2, 3, 1000, 1008), (3, 4, 1010, 1018)]
    """
    starts = runs.starts
    n = len(starts)
    if n == 0:
        return []
    gaps = starts[1:] - starts[:-1] - runs.length
    cuts = np.flatnonzero(gaps > gap) + 1
    bounds = [0, *cuts.tolist(), n]
    return [
        (a, b, int(starts[a]), int(starts[b - 1]) + runs.length)
        for a, b in itertools.pairwise(bounds)
    ]


def bounding(index: Any, shape: tuple[int, ...]) -> tuple[tuple[slice, ...], tuple[Any, ...]]:
    """Split a basic index into step-1 bounding slices and the index relative to them.

    Reading the bounding region and applying the relative index gives ``array[index]``.

    Examples
    --------
    >>> bounding((3, slice(2, 10, 3)), (5, 20))
    ((slice(3, 4, None), slice(2, 9, None)), (0, slice(0, 8, 3)))
    """
    items = list(index) if isinstance(index, tuple) else [index]
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = len(shape) - (len(items) - 1 - items.count(None))
        items[at : at + 1] = [slice(None)] * fill
    bound, rel = [], []
    axis = 0
    for item in items:
        if item is None:
            rel.append(None)
            continue
        n = shape[axis]
        axis += 1
        if isinstance(item, slice):
            r = range(*item.indices(n))
            if len(r) == 0:
                bound.append(slice(0, 0))
                rel.append(slice(0, 0))
                continue
            lo, hi = min(r[0], r[-1]), max(r[0], r[-1]) + 1
            stop = r.stop - lo
            bound.append(slice(lo, hi))
            rel.append(slice(r.start - lo, stop if stop >= 0 else None, r.step))
        else:
            i = int(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis - 1} with size {n}")
            i %= n
            bound.append(slice(i, i + 1))
            rel.append(0)
    bound.extend(slice(None) for _ in range(len(shape) - axis))
    return tuple(bound), tuple(rel)
