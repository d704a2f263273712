"""numpy functions on stored chunks and their deviations → fused kernel passes.

Each handler has numpy's signature and numpy's result semantics (dtype, NaN propagation,
``keepdims``), so dask's chunk, combine and aggregate steps (or anything else calling numpy
on a chunk) cannot tell a stored chunk from a decoded one. Sums of floating data accumulate
in float64 (more accurate than numpy's float32 pairwise sum) and come back in the dtype asked
for. Kernel passes are memoised on the chunk (:mod:`dfits.stored.passes`): a count then a sum,
a mean then a variance, or an extreme then its index read the stored bytes once or twice,
never more, whoever asks. :mod:`dfits.stored.recognised` says which numpy function each
handler answers.
"""

from __future__ import annotations

import warnings

import numpy as np

from dfits._lazy import kernels
from dfits.stored import passes
from dfits.stored.lazy import Deviation, materialize
from dfits.stored.results import axes_of, finish, keepdims_partial, shape_out
from dfits.stored.stored import StoredChunk

# the handlers are named in dfits.stored.recognised, which installs them
__all__ = ["count", "deviation_sum", "moment_stat", "with_nan"]


# -- metadata: answered without decoding ----------------------------------------------------


def ndim(x):
    return x.ndim


def shape(x):
    return x.shape


def size(x, axis=None):
    return x.size if axis is None else x.shape[axis]


def result_type(*arrays_and_dtypes):
    return np.result_type(
        *(a.dtype if isinstance(a, StoredChunk) else a for a in arrays_and_dtypes)
    )


# -- sums and counts --------------------------------------------------------------------------


def _sum(x: StoredChunk, axis, dtype, out, keepdims, skipna: bool):
    axes, _ = axes_of(x, axis)
    if kernels.is_integer_kind(x.spec) and not _float_sum_of_wide(x.dtype, dtype):
        x.spec.check()
        value = kernels.integer_sum(x.u, x.spec, axes)
    else:
        value = passes.total(x, axes, skipna, dtype)
    return keepdims_partial(finish(shape_out(x, axes, keepdims, value), dtype, out), keepdims, out)


def _float_sum_of_wide(values: np.dtype, dtype) -> bool:
    """True for a float sum of 64-bit integers (dask's mean and var ask for one): numpy adds
    their values as floats, where an int64 or uint64 total wraps past 2**63. Narrower
    integers keep their exact integer total, cast (no chunk can make it wrap)."""
    return dtype is not None and np.dtype(dtype).kind in "fc" and np.dtype(values).itemsize == 8


def sum_(x, axis=None, dtype=None, out=None, keepdims=False, *, skipna: bool, **_):
    """``np.sum`` (``np.nansum`` with ``skipna``) of a stored chunk."""
    return _sum(x, axis, dtype, out, keepdims, skipna)


def count(x: StoredChunk, skipna: bool, axis=None, keepdims=False, dtype=None):
    """Per-slice numbers of values (``skipna``: of values that are not NaN or BLANK).

    Without anything to skip every count is the same: a read-only broadcast, not a map of
    fresh memory per chunk (dask only adds and divides by counts). Skipping counts come
    from the sum pass, which a NaN-skipping mean asks for next.
    """
    axes, size = axes_of(x, axis)
    dtype = np.float64 if dtype is None else dtype
    if not skipna or not x.spec.has_missing:
        shape = tuple(
            1 if ax in axes else n for ax, n in enumerate(x.shape) if keepdims or ax not in axes
        )
        value = np.broadcast_to(np.asarray(size, dtype=dtype), shape)
        return keepdims_partial(finish(value, None, None), keepdims, None)
    n = passes.sum_count(x, axes, True)[0]
    return keepdims_partial(finish(shape_out(x, axes, keepdims, n), dtype, None), keepdims, None)


# -- means and variances ----------------------------------------------------------------------


def moment_stat(x: StoredChunk, axis, dtype, out, keepdims, ddof, skipna: bool, kind: str):
    """``mean``, ``var`` or ``std`` of a chunk over ``axis`` (numpy's NaN and dtype rules)."""
    axes, _ = axes_of(x, axis)
    if kind == "mean":
        n, total = passes.sum_count(x, axes, skipna)
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    else:
        n, _, m2 = passes.moments(x, axes, skipna)
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(n - ddof > 0, m2 / np.maximum(n - ddof, 1), np.nan)
            if kind == "std":
                value = np.sqrt(value)
    if skipna and np.any(np.asarray(n) - (0 if kind == "mean" else ddof) <= 0):
        what = "Mean of empty slice" if kind == "mean" else "Degrees of freedom <= 0 for slice."
        warnings.warn(what, RuntimeWarning, stacklevel=4)
    if dtype is None:
        dtype = x.dtype if x.dtype.kind == "f" else np.float64
    return finish(shape_out(x, axes, keepdims, value), dtype, out)


def mean(x, axis=None, dtype=None, out=None, keepdims=False, *, skipna: bool, **_):
    """``np.mean`` (``np.nanmean`` with ``skipna``) of a stored chunk."""
    return moment_stat(x, axis, dtype, out, keepdims, 0, skipna, "mean")


def spread(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, kind, skipna, **_):
    """``np.var`` or ``np.std`` (``kind``; their ``nan`` forms with ``skipna``)."""
    return moment_stat(x, axis, dtype, out, keepdims, ddof, skipna, kind)


# -- extrema and their indices ----------------------------------------------------------------


def _extreme(x: StoredChunk, axis, out, keepdims, want_max: bool, skipna: bool):
    axes, size = axes_of(x, axis)
    if x.size == 0 or size == 0:
        name = "maximum" if want_max else "minimum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    val, valid, nans = passes.extrema(x, axes, want_max)
    none_valid = np.asarray(valid) == 0
    missing = none_valid | (np.asarray(nans) > 0 if not skipna else False)
    val = with_nan(val, missing, x.dtype)
    if skipna and np.any(none_valid):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)
    return finish(shape_out(x, axes, keepdims, val), None, out)


def with_nan(val, missing, dtype: np.dtype):
    """The extremes in ``dtype`` with NaN where ``missing``."""
    if np.any(missing):
        val = np.asarray(val).astype(dtype, copy=True)
        val[missing] = np.nan
    return val


def extreme(x, axis=None, out=None, keepdims=False, *, want_max: bool, skipna: bool, **_):
    """``np.max``/``np.min`` (``want_max``; their ``nan`` forms with ``skipna``)."""
    return _extreme(x, axis, out, keepdims, want_max, skipna)


def _arg(x: StoredChunk, axis, out, keepdims, want_max: bool, skipna: bool):
    if axis is not None and np.ndim(axis) != 0:
        raise TypeError("argmin/argmax take a single axis or None")
    axes, _ = axes_of(x, axis)
    if x.size == 0:
        raise ValueError(
            f"attempt to get {'argmax' if want_max else 'argmin'} of an empty sequence"
        )
    _, idx, nanidx = passes.indexed(x, axes, want_max)
    if skipna:
        if np.any(idx < 0):
            raise ValueError("All-NaN slice encountered")
        res = idx
    else:
        res = np.where(nanidx >= 0, nanidx, idx)  # numpy's arg* return the first NaN
    res = shape_out(x, axes, keepdims, np.asarray(res, dtype=np.intp))
    return finish(res, None, out)


def arg(x, axis=None, out=None, *, keepdims=False, want_max: bool, skipna: bool, **_):
    """``np.argmax``/``np.argmin`` (``want_max``; their ``nan`` forms with ``skipna``)."""
    return _arg(x, axis, out, keepdims, want_max, skipna)


# -- sums of squared deviations ---------------------------------------------------------------


def deviation_sum(d: Deviation, axis=None, dtype=None, out=None, keepdims=False, skipna=False):
    """``Σ (x - c)²`` from the chunk's moments: ``M2 + n (mean - c)²`` (exact identity)."""
    if d.power != 2:
        return NotImplemented
    x = d.chunk
    axes, _ = axes_of(x, axis)
    if isinstance(x, StoredChunk):
        n, mean, m2 = passes.moments(x, axes, skipna)
    else:  # the values inside a threshold cut
        n, mean, m2 = x.pooled_moments(axes, skipna)
    centre = _centre(d.centre, x.ndim, axes)
    rdtype = np.dtype(np.float64 if dtype is None else dtype)
    with np.errstate(invalid="ignore"):
        shift = np.subtract(mean, centre, dtype=np.float64)
        value = m2 + np.asarray(n) * (shift * shift)
    value = np.where(np.asarray(n) > 0, value, 0.0)
    if isinstance(x, StoredChunk) and d.keeps_nan and x.spec.is_float:
        _infinite_squares(x, axes, skipna, value)
    value = shape_out(x, axes, keepdims, value.astype(rdtype, copy=False))
    return keepdims_partial(finish(value, dtype, out), keepdims, out)


def _centre(centre, ndim: int, axes: tuple[int, ...]):
    """The centre over the kept axes (it must be constant along the reduced ones, as dask's
    mean is), or None when it varies along them and the identity does not apply."""
    c = np.asarray(centre)
    if c.ndim == 0:
        return c
    c = c.reshape((1,) * (ndim - c.ndim) + c.shape)
    if any(c.shape[a] != 1 for a in axes):
        return None
    return c.reshape(tuple(n for i, n in enumerate(c.shape) if i not in axes))


def _infinite_squares(x: StoredChunk, axes: tuple[int, ...], skipna: bool, value) -> None:
    """Set the sums of squares that an infinite value makes infinite (numpy's ``inf``).

    ``M2 + n·mean²`` is NaN there (``inf - inf`` in the moments), and numpy's sum of
    ``(x - c) ** 2`` is ``inf`` unless a NaN is summed too. Only slices whose sum came out
    NaN are looked at, with the value-only extrema kernel, and only when there are any.
    """
    bad = np.isnan(value)
    if not bad.any():
        return
    top = passes.extrema(x, axes, True)
    low = passes.extrema(x, axes, False)
    infinite = (np.isinf(top[0]) & (np.asarray(top[1]) > 0)) | (
        np.isinf(low[0]) & (np.asarray(low[1]) > 0)
    )
    if not skipna:
        infinite &= np.asarray(top[2]) == 0
    value[bad & infinite] = np.inf


def deviation(d, axis=None, dtype=None, out=None, keepdims=False, *, skipna: bool, **_):
    """``np.sum`` (``np.nansum`` with ``skipna``) of a :class:`Deviation`."""
    if _centre(d.centre, d.ndim, axes_of(d, axis)[0]) is None:
        return NotImplemented
    return deviation_sum(d, axis, dtype, out, keepdims, skipna)


def concatenate(arrays, axis=0, out=None, **kwargs):
    """``np.concatenate`` with stored pieces decoded straight into their place."""
    arrays = list(arrays)
    if out is not None or kwargs or axis is None or not _same_shape(arrays, axis):
        return np.concatenate(materialize(arrays), axis=axis, out=out, **kwargs)
    return _decode_into_place(arrays, axis)


def _same_shape(arrays: list, axis: int) -> bool:
    """True when the pieces concatenate (numpy's checks, without decoding anything)."""
    if not all(hasattr(a, "dtype") for a in arrays):
        return False
    shapes = [np.shape(a) for a in arrays]
    if (
        not shapes
        or len({len(s) for s in shapes}) != 1
        or not -len(shapes[0]) <= axis < len(shapes[0])
    ):
        return False
    axis %= len(shapes[0])
    return len({s[:axis] + s[axis + 1 :] for s in shapes}) == 1


def _decode_into_place(arrays: list, axis: int) -> np.ndarray:
    """``np.concatenate`` whose stored pieces decode straight into their slot of the result:
    one pass over the stored bytes instead of a decoded copy of each piece and then a copy of
    that into the result (a dask rechunk of a dfits array, such as an FFT's first transpose,
    assembles its blocks this way)."""
    axis %= np.ndim(arrays[0])
    dtype = np.result_type(*(np.dtype(a.dtype) for a in arrays))
    shape = list(np.shape(arrays[0]))
    shape[axis] = sum(np.shape(a)[axis] for a in arrays)
    out = np.empty(shape, dtype=dtype)
    start = 0
    for a in arrays:
        stop = start + np.shape(a)[axis]
        slot = out[(slice(None),) * axis + (slice(start, stop),)]
        if isinstance(a, StoredChunk) and not a.decoded and a.dtype == dtype:
            a.spec.check()
            kernels.decode(a.u, a.spec, out=slot)
        else:
            slot[...] = materialize(a)
        start = stop
    return out
