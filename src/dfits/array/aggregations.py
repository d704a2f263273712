"""Reductions dfits owns: a table of chunk / combine / finalize triples on ``da.reduction``.

Each :class:`Aggregation` (the flox and dask pattern) says what one chunk contributes (a
dict of partials, kept dims), how two contributions combine (associatively, in block order),
and how the combined partials become the result. A chunk that is a stored chunk gets its
partials from one fused kernel pass over its stored bytes (:mod:`dfits.stored.passes`); any
other block (numpy, an in-memory cube, a rechunked array) gets them from numpy, in float64.
So the accessor, the CLI and quicklook ask for exactly the pass they need, and the plain dask
API (``x.std()``) stays available for everything else.

Examples
--------
>>> import dask.array as da, numpy as np
>>> x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, 2))
>>> float(reduce(x, "std").compute()) == float(np.std(np.arange(12.0)))
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfits._lazy import kernels
from dfits.array import argsteps as a
from dfits.array import steps as m
from dfits.stored.stored import StoredChunk

if TYPE_CHECKING:
    import dask.array as da

__all__ = ["AGGREGATIONS", "Aggregation", "Steps", "prepare", "reduce"]


@dataclass(frozen=True)
class Aggregation:
    """One reduction: ``chunk(block, axes, skipna) -> partials``, ``combine(a, b)``,
    ``finalize(partials, size, **options) -> values`` (kept dims) and the result dtype.

    A ``positional`` entry (the arg reductions) needs each block's place in the array: its
    chunk is ``chunk(axes, shape, block, *positions)`` (see :mod:`dfits.array.argsteps`).
    """

    name: str
    chunk: Callable[..., dict[str, np.ndarray]]
    combine: Callable[[dict, dict], dict]
    finalize: Callable[..., np.ndarray]
    dtype: Callable[[np.dtype], np.dtype]
    skipna: bool = False
    positional: bool = False


def _float(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)


AGGREGATIONS: dict[str, Aggregation] = {}


def _entry(name: str, chunk, combine, finalize, dtype, skipna=False, positional=False) -> None:
    AGGREGATIONS[name] = Aggregation(name, chunk, combine, finalize, dtype, skipna, positional)


for _skip in (False, True):
    _p = "nan" if _skip else ""
    _entry(f"{_p}sum", m.sum_chunk, m.sum_combine, m.sum_finalize, m.sum_dtype, _skip)
    _entry(f"{_p}mean", m.mean_chunk, m.sum_combine, m.mean_finalize, _float, _skip)
    _entry(f"{_p}var", m.moment_chunk, m.moment_combine, m.var_finalize, _float, _skip)
    _entry(f"{_p}std", m.moment_chunk, m.moment_combine, m.std_finalize, _float, _skip)
    _entry(f"{_p}max", m.max_chunk, m.max_combine, m.extreme_finalize, np.dtype, _skip)
    _entry(f"{_p}min", m.min_chunk, m.min_combine, m.extreme_finalize, np.dtype, _skip)
_entry(
    "count", m.count_chunk, m.count_combine, m.count_finalize, lambda _: np.dtype(np.int64), True
)
for _name, (_max, _skip) in a.ARG_REDUCTIONS.items():  # positional: see argsteps
    _chunk_of, _pair = functools.partial(a.arg_chunk, _max), functools.partial(a.arg_combine, _max)
    _last = functools.partial(a.arg_finalize, _skip)
    _entry(_name, _chunk_of, _pair, _last, lambda _: np.dtype(np.intp), _skip, positional=True)


@dataclass(frozen=True)
class Steps:
    """One request of the table bound to an array's shape: what both routes run.

    :func:`reduce` hands ``chunk``, ``combine`` and ``aggregate`` to ``da.reduction``; the
    eager route (:mod:`dfits.array.eager`) calls the very same functions on the very same
    blocks, in dask's tree order. A ``positional`` request's ``chunk`` takes the block and its
    global positions, one ``arange`` per axis (see :mod:`dfits.array.argsteps`).
    """

    name: str
    axes: tuple[int, ...]
    dtype: np.dtype
    keepdims: bool
    chunk: Callable[..., dict]
    combine: Callable[..., dict]
    aggregate: Callable[..., np.ndarray]
    positional: bool = False

    def partial(self, block: Any, positions: tuple[np.ndarray, ...]) -> dict:
        """One block's partials (kept dims), as the dask route's chunk step makes them."""
        if self.positional:
            return self.chunk(block, *positions)
        return self.chunk(block, axis=self.axes, keepdims=True)


def prepare(
    x: Any,
    how: str,
    axis: int | tuple[int, ...] | None = None,
    *,
    keepdims: bool = False,
    band: tuple[float, float] | None = None,
    **options: Any,
) -> Steps:
    """The :class:`Steps` of ``how`` over ``axis`` of ``x`` (anything with ``shape`` and
    ``dtype``), checked as :func:`reduce` checks them; see :func:`reduce` for the arguments.

    >>> import numpy as np
    >>> prepare(np.zeros((2, 3)), "sum", axis=-1).axes
    (1,)
    """
    agg = AGGREGATIONS.get(how)
    if agg is None:
        known = ", ".join(sorted(AGGREGATIONS))
        raise ValueError(f"unknown reduction {how!r}; choose from {known}")
    shape = tuple(x.shape)
    if np.dtype(x.dtype).kind == "c":
        # the steps total, compare and pool real numbers: a complex value would lose its
        # imaginary part (silently wrong), so refuse it by name
        raise TypeError(f"{how} of complex values ({x.dtype}): use dask's own x.{how}()")
    if agg.positional:
        if band is not None:
            raise TypeError(f"{how} takes no band")
        axes, first, pair, last = a.positional_steps(shape, agg, axis, **options)
        return Steps(how, axes, np.dtype(np.intp), keepdims, first, pair, last, positional=True)
    axes = kernels.normalize_axis(axis, len(shape))
    dtype = agg.dtype(x.dtype)
    skipna = agg.skipna or band is not None
    size = int(np.prod([shape[a] for a in axes]))
    if size == 0 and how.removeprefix("nan") in ("min", "max"):
        raise ValueError(f"zero-size array to reduction operation {how} which has no identity")
    options = {**options, "skipna": skipna}
    return Steps(
        how, axes, dtype, keepdims, functools.partial(_chunk, agg, skipna, band),
        functools.partial(_combine, agg), functools.partial(_aggregate, agg, size, dtype, options),
    )  # fmt: skip


def reduce(
    x: da.Array,
    how: str,
    axis: int | tuple[int, ...] | None = None,
    *,
    keepdims: bool = False,
    split_every: int | None = None,
    band: tuple[float, float] | None = None,
    **options: Any,
) -> da.Array:
    """Reduce ``x`` over ``axis`` with the table's ``how`` entry, one kernel pass per chunk.

    Parameters
    ----------
    x : dask.array.Array
        A dfits array (fused kernels on the stored bytes) or any dask array (numpy).
    how : str
        A key of :data:`AGGREGATIONS`: ``sum``, ``mean``, ``var``, ``std``, ``min``, ``max``,
        ``argmax``, ``argmin`` (one ``axis`` or None), their ``nan`` forms, and ``count``.
    axis : int or tuple of int, optional
        The axes reduced (all by default).
    keepdims : bool
        Keep the reduced axes with length one.
    split_every : int, optional
        dask's tree-reduction fan-in.
    band : (float, float), optional
        Only values in the closed band take part (``x.where((x >= lo) & (x <= hi))``).
    **options
        ``ddof`` for ``var``/``std``; ``allnan`` for ``nanargmax``/``nanargmin``: the index
        an all-NaN slice gets (such as -1) instead of numpy's ``ValueError`` (the default).

    Returns
    -------
    dask.array.Array
        The lazy result, with numpy's dtype for the reduction. (The same request computed
        now, without a graph when it is small: :func:`dfits.array.eager.reduce_hdu`.)

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> y = da.from_array(np.array([[1.0, np.nan], [3.0, np.nan]]), chunks=1)
    >>> reduce(y, "nanargmax", axis=0, allnan=-1).compute()
    array([ 1, -1])
    """
    import dask.array as da

    steps = prepare(x, how, axis, keepdims=keepdims, band=band, **options)
    if steps.positional:
        return a.positional_reduce(x, steps, split_every)
    out_ndim = x.ndim if keepdims else x.ndim - len(steps.axes)
    return da.reduction(
        x, steps.chunk, steps.aggregate, combine=steps.combine, axis=steps.axes,
        keepdims=keepdims, dtype=steps.dtype, split_every=split_every, concatenate=False,
        meta=np.empty((0,) * out_ndim, steps.dtype), name=f"dfits-{how}",
    )  # fmt: skip


def _chunk(agg, skipna, band, block, axis, keepdims, computing_meta=False, **_):
    if computing_meta:
        return block
    if isinstance(block, StoredChunk) and not block.decoded:
        block.spec.check()
    return agg.chunk(block, tuple(axis), skipna, band)


def _combine(agg, parts, axis, keepdims, computing_meta=False, **_):
    return functools.reduce(agg.combine, a.flat_parts(parts))


def _aggregate(agg, size, out_dtype, options, parts, axis, keepdims, computing_meta=False, **_):
    if computing_meta:
        return parts
    value = agg.finalize(functools.reduce(agg.combine, a.flat_parts(parts)), size, **options)
    value = np.asarray(value).astype(out_dtype, copy=False)
    return value if keepdims else value.squeeze(axis=tuple(axis))
