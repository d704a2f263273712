"""The chunk, combine and finalize steps of the reductions dfits owns (see
:mod:`dfits.array.aggregations`).

Partials are dicts of arrays with the reduced axes kept (length one): ``{"n", "total"}`` for
sums, counts and means; ``{"n", "mean", "m2"}`` for variances, pooled with Chan et al.'s
formula; ``{"value", "valid", "nan"}`` for extrema. A stored chunk's partials come from one
kernel pass on its stored bytes; any other block's from numpy in float64 (integers summed
exactly, as numpy sums them). A mean's totals of 64-bit integers are float64, as numpy
accumulates a mean: their integer total wraps past 2**63 (:func:`mean_chunk`).
"""

from __future__ import annotations

import numpy as np

from dfits._lazy import kernels
from dfits.stored import passes
from dfits.stored.cuts import CutValues
from dfits.stored.stored import StoredChunk

__all__ = [
    "count_chunk",
    "count_combine",
    "count_finalize",
    "extreme_finalize",
    "max_chunk",
    "max_combine",
    "mean_chunk",
    "mean_finalize",
    "min_chunk",
    "min_combine",
    "moment_chunk",
    "moment_combine",
    "std_finalize",
    "sum_chunk",
    "sum_combine",
    "sum_dtype",
    "sum_finalize",
    "var_finalize",
]


def _kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _stored(block) -> bool:
    return isinstance(block, StoredChunk) and not block.decoded


def _keep(value, shape, axes):
    return np.reshape(np.asarray(value), _kept(shape, axes))


def _missing(v: np.ndarray, band) -> np.ndarray | None:
    """Where values do not take part: NaN, or outside the band."""
    if band is not None:
        with np.errstate(invalid="ignore"):
            return ~((v >= band[0]) & (v <= band[1]))
    return np.isnan(v) if v.dtype.kind == "f" else None


# -- sums, counts, means ----------------------------------------------------------------------


def sum_chunk(block, axes: tuple[int, ...], skipna: bool, band=None, *, floats=False) -> dict:
    """``{"n": counts, "total": sums}`` of the values that take part.

    Integers are summed in their own type, wrapping as numpy's sum does, except with
    ``floats`` for 64-bit integers: those are summed in float64 (see :func:`mean_chunk`).
    """
    shape = block.shape
    wide = floats and _wide(block.dtype)
    if _stored(block):
        if band is not None:
            total, n = kernels.band_sum_count(block.u, block.spec, axes, lo=band[0], hi=band[1])
        elif kernels.is_integer_kind(block.spec) and not wide:
            total = kernels.integer_sum(block.u, block.spec, axes)
            n = np.prod([shape[a] for a in axes], dtype=np.int64)
        else:
            n, total = passes.sum_count(block, axes, skipna)
        return {"n": _keep(np.broadcast_to(n, np.shape(total)), shape, axes),
                "total": _keep(total, shape, axes)}  # fmt: skip
    v = np.asarray(block)
    missing = _missing(v, band) if skipna or band is not None else None
    if v.dtype.kind in "iub" and missing is None and not wide:
        total = np.sum(v, axis=axes, keepdims=True)
    else:
        w = v.astype(np.float64)
        total = np.sum(w if missing is None else np.where(missing, 0.0, w), axis=axes,
                       keepdims=True)  # fmt: skip
    n = np.sum(~missing, axis=axes, keepdims=True) if missing is not None else None
    if n is None:
        n = np.full(total.shape, np.prod([shape[a] for a in axes], dtype=np.int64))
    return {"n": n.astype(np.int64), "total": total}


def _wide(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" and dtype.itemsize == 8


def mean_chunk(block, axes: tuple[int, ...], skipna: bool, band=None) -> dict:
    """:func:`sum_chunk`'s partials, with totals of 64-bit integers in float64.

    numpy accumulates the mean of integers in float64; an int64 or uint64 total wraps once
    it passes 2**63 (``[2**62] * 3`` has a negative int64 sum). Narrower integers keep
    their exact int64 total within the chunk (no chunk can make it wrap), passed on as
    float64: the chunks of a large array together could (2**32 int32 values near 2**31).
    """
    part = sum_chunk(block, axes, skipna, band, floats=True)
    return {"n": part["n"], "total": np.asarray(part["total"], dtype=np.float64)}


def sum_combine(a: dict, b: dict) -> dict:
    return {"n": a["n"] + b["n"], "total": a["total"] + b["total"]}


def sum_finalize(p: dict, size: int, **_) -> np.ndarray:
    return p["total"]


def sum_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's dtype for a sum of ``dtype`` values."""
    return np.sum(np.zeros(1, dtype)).dtype


def mean_finalize(p: dict, size: int, **_) -> np.ndarray:
    n = p["n"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, p["total"] / np.maximum(n, 1), np.nan)


def count_chunk(block, axes: tuple[int, ...], skipna: bool, band=None) -> dict:
    """``{"n": counts}`` of the values that take part.

    Values that cannot be missing (integers without BLANK) need no pass: each count is the
    slice's size. Others are counted by the sum pass (memoised: a sum or mean of the same
    chunk then costs nothing more).
    """
    if skipna and isinstance(block, CutValues) and block.nan_filled:
        # x.where(x > t): its valid values are those of the stored chunk inside the cut's
        # band (NaN never is), counted by the band kernel instead of decoding
        cut = block.cut.band
        band = cut if band is None else (max(cut[0], band[0]), min(cut[1], band[1]))
        block = block.chunk
    if band is None and not (skipna and _can_be_missing(block)):
        size = np.prod([block.shape[a] for a in axes], dtype=np.int64)
        return {"n": np.broadcast_to(size, _kept(block.shape, axes))}  # read-only, no map
    return {"n": sum_chunk(block, axes, skipna, band)["n"]}


def _can_be_missing(block) -> bool:
    if _stored(block):
        return bool(block.spec.has_missing)
    return np.dtype(block.dtype).kind in "fc"


def count_combine(a: dict, b: dict) -> dict:
    return {"n": a["n"] + b["n"]}


def count_finalize(p: dict, size: int, **_) -> np.ndarray:
    return p["n"]


# -- variances --------------------------------------------------------------------------------


def moment_chunk(block, axes: tuple[int, ...], skipna: bool, band=None) -> dict:
    """``{"n", "mean", "m2"}`` of the values that take part (one pass when stored)."""
    shape = block.shape
    if _stored(block):
        if band is not None:
            n, mean, m2 = kernels.band_moments(block.u, block.spec, axes, lo=band[0], hi=band[1])
        else:
            n, mean, m2 = passes.moments(block, axes, skipna)
        n = np.broadcast_to(n, np.shape(mean))
        return {"n": _keep(n, shape, axes), "mean": _keep(mean, shape, axes),
                "m2": _keep(m2, shape, axes)}  # fmt: skip
    v = np.asarray(block, dtype=np.float64)
    missing = _missing(v, band) if skipna or band is not None else None
    if missing is not None:
        v = np.where(missing, np.nan, v)
        n = np.sum(~missing, axis=axes, keepdims=True)
    else:
        n = np.full(_kept(shape, axes), np.prod([shape[a] for a in axes], dtype=np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.nansum(v, axis=axes, keepdims=True) if missing is not None else None
        mean = total / n if total is not None else np.mean(v, axis=axes, keepdims=True)
        d = v - mean
        m2 = (
            np.nansum(d * d, axis=axes, keepdims=True)
            if missing is not None
            else np.sum(d * d, axis=axes, keepdims=True)
        )
    mean = np.where(n > 0, mean, np.nan)
    return {"n": n.astype(np.int64), "mean": mean, "m2": m2}


def moment_combine(a: dict, b: dict) -> dict:
    """Chan et al.'s pooling of two ``(n, mean, M2)``; empty sides leave the other as is."""
    na, nb = a["n"], b["n"]
    n = na + nb
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = b["mean"] - a["mean"]
        frac = np.where(n > 0, nb / np.maximum(n, 1), 0.0)
        mean = a["mean"] + delta * frac
        m2 = a["m2"] + b["m2"] + delta * delta * na * frac
    mean = np.where(na == 0, b["mean"], np.where(nb == 0, a["mean"], mean))
    m2 = np.where(na == 0, b["m2"], np.where(nb == 0, a["m2"], m2))
    return {"n": n, "mean": mean, "m2": m2}


def var_finalize(p: dict, size: int, ddof: int = 0, **_) -> np.ndarray:
    dof = p["n"] - ddof
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dof > 0, p["m2"] / np.maximum(dof, 1), np.nan)


def std_finalize(p: dict, size: int, ddof: int = 0, **_) -> np.ndarray:
    return np.sqrt(var_finalize(p, size, ddof))


# -- extrema ----------------------------------------------------------------------------------


def _extreme_chunk(block, axes, skipna, band, want_max: bool) -> dict:
    shape = block.shape
    if _stored(block):
        if band is not None:
            block.spec.check()
            val, valid, nans = kernels.extrema(block.u, block.spec, axes, want_max=want_max,
                                               with_index=False, band=band)  # fmt: skip
        else:
            val, valid, nans = passes.extrema(block, axes, want_max)
        valid, nans = np.asarray(valid) > 0, np.asarray(nans) > 0
        return {"value": _keep(val, shape, axes), "valid": _keep(valid, shape, axes),
                "nan": _keep(nans, shape, axes)}  # fmt: skip
    v = np.asarray(block)
    missing = _missing(v, band)
    if missing is None:
        value = (np.max if want_max else np.min)(v, axis=axes, keepdims=True)
        return {"value": value, "valid": np.ones(value.shape, bool),
                "nan": np.zeros(value.shape, bool)}  # fmt: skip
    fill = -np.inf if want_max else np.inf
    value = (np.max if want_max else np.min)(np.where(missing, fill, v), axis=axes, keepdims=True)
    nan = np.any(np.isnan(v), axis=axes, keepdims=True) if v.dtype.kind == "f" else missing[:0]
    return {"value": value.astype(v.dtype), "valid": np.any(~missing, axis=axes, keepdims=True),
            "nan": nan if nan.size else np.zeros(value.shape, bool)}  # fmt: skip


def max_chunk(block, axes, skipna, band=None) -> dict:
    return _extreme_chunk(block, axes, skipna, band, True)


def min_chunk(block, axes, skipna, band=None) -> dict:
    return _extreme_chunk(block, axes, skipna, band, False)


def _extreme_combine(a: dict, b: dict, pick) -> dict:
    both = a["valid"] & b["valid"]
    value = np.where(
        both, pick(a["value"], b["value"]), np.where(a["valid"], a["value"], b["value"])
    )
    return {"value": value.astype(a["value"].dtype, copy=False), "valid": a["valid"] | b["valid"],
            "nan": a["nan"] | b["nan"]}  # fmt: skip


def max_combine(a: dict, b: dict) -> dict:
    return _extreme_combine(a, b, np.maximum)


def min_combine(a: dict, b: dict) -> dict:
    return _extreme_combine(a, b, np.minimum)


def extreme_finalize(p: dict, size: int, skipna: bool = False, **_) -> np.ndarray:
    missing = ~p["valid"] if skipna else (~p["valid"] | p["nan"])
    value = p["value"]
    if np.any(missing):
        value = value.astype(np.result_type(value.dtype, np.float32), copy=True)
        value[missing] = np.nan
    return value
