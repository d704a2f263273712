"""dask's concatenate hook for sum partials: a stack when a sum follows, else numpy's.

dask's combine and aggregate steps call ``_concatenate2`` on the partials of a reduction,
which dispatches on the parts' type to :func:`concatenate_partials`. Whether the result is
only summed next (after elementwise steps a :class:`~dfits.array.partials.PartialStack` does
part by part) is read off the calling frames, matched against dask's own functions by code
object; anything else gets a real concatenation.
"""

from __future__ import annotations

import functools
import sys
from types import CodeType
from typing import Any

import numpy as np

from dfits.array.partials import SUMS, PartialStack, plain

__all__ = ["concatenate_partials"]


def concatenate_partials(arrays, axis: int = 0, out: Any = None):
    """dask's ``concatenate`` for partials: a :class:`PartialStack` when a sum follows."""
    arrays = list(arrays)
    if out is None and _summed_next():
        return PartialStack(arrays, axis)
    parts = [p.dense() if isinstance(p, PartialStack) else plain(p) for p in arrays]
    return np.concatenate(parts, axis=axis, out=out)


@functools.cache
def _callers() -> tuple[frozenset[Any], Any, frozenset[Any]]:
    from dask.array import reductions
    from dask.array.core import _concatenate2
    from toolz.functoolz import Compose

    # these call ``_concatenate2(...)`` and then only sum what it returns, after elementwise
    # ufuncs, ``np.where`` and ``[..., k]`` that a PartialStack does part by part
    callers = (
        reductions.mean_combine,
        reductions.mean_agg,
        reductions.moment_combine,
        reductions.moment_agg,
    )
    summing = frozenset(
        getattr(f, "__wrapped__", f).__code__
        for f in callers
        if hasattr(getattr(f, "__wrapped__", f), "__code__")
    )
    # _concatenate2 recurses through a list comprehension (a frame of its own before 3.12)
    own = _concatenate2.__code__
    concat2 = frozenset([own, *(c for c in own.co_consts if isinstance(c, CodeType))])
    return concat2, Compose.__call__.__code__, summing


def _summed_next() -> bool:
    """True when dask's ``_concatenate2`` was called by code that sums its result next
    (after, for the moment steps, elementwise work a stack does part by part)."""
    concat2, compose_call, summing = _callers()
    frame = sys._getframe(2)
    if frame is None or frame.f_code not in concat2:
        return False
    while frame is not None and frame.f_code in concat2:
        frame = frame.f_back
    if frame is None:
        return False
    if frame.f_code in summing:
        return True
    if frame.f_code is compose_call:
        # _tree_reduce's ``compose(partial(sum, axis=...), partial(_concatenate2, ...))``
        funcs = getattr(frame.f_locals.get("self"), "funcs", ())
        return bool(funcs) and all(
            isinstance(f, functools.partial) and f.func in SUMS for f in funcs
        )
    return False
