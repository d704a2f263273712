"""numpy's result conventions for the handler tables: shapes, dtypes, ``out`` and partials.

Kernels return results shaped like the kept axes, in float64 or int64; every handler turns
them into what numpy's own function would return for the same call (``keepdims``, ``dtype``,
``out``, a scalar for a full reduction), so that dask's chunk, combine and aggregate steps
cannot tell a stored chunk from a decoded one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dfits._lazy import kernels
from dfits.stored.partials import as_partial

__all__ = ["axes_of", "finish", "keepdims_partial", "shape_out"]


def axes_of(x: Any, axis: Any) -> tuple[tuple[int, ...], int]:
    """The reduced axes (sorted, non-negative) and how many values each slice holds."""
    axes = kernels.normalize_axis(axis, x.ndim)
    return axes, math.prod(x.shape[a] for a in axes)


def shape_out(x: Any, axes: tuple[int, ...], keepdims: bool, value: Any) -> Any:
    """A kept-axes result reshaped as numpy's ``keepdims`` would have it."""
    if keepdims:
        shape = tuple(1 if ax in axes else n for ax, n in enumerate(x.shape))
        return np.reshape(value, shape)
    return value


def finish(value: Any, dtype: Any, out: Any) -> Any:
    """Cast to ``dtype``, write into ``out``, or unwrap a 0-d result, as numpy does."""
    if dtype is not None:
        value = np.asarray(value).astype(dtype, copy=False)
    if out is not None:
        out[...] = value
        return out
    return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value


def keepdims_partial(value: Any, keepdims: bool, out: Any) -> Any:
    """Mark a large keepdims result (how dask's chunk step calls) as a sum partial, so that
    concatenations of such partials are stacked lazily (see :mod:`dfits.stored.partials`)."""
    return as_partial(value) if keepdims and out is None else value
