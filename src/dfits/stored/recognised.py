"""What a stored chunk recognises: the one table of numpy calls answered from a kernel pass.

dask and xarray reduce a dfits array by calling numpy on each chunk. A
:class:`~dfits.stored.stored.StoredChunk` answers some of those calls from one fused kernel
pass over its stored bytes instead of decoding; everything else decodes and is numpy's.
This module lists, as data:

* :data:`PATTERNS`: every call pattern answered from a pass, with the public library call
  that produces it and the kernel passes it costs per chunk. ``tests/stored/test_recognised.py``
  runs each library call on a dfits array and counts passes and decodes, so a dask or
  xarray release that changes how it calls numpy fails by the pattern's name;
* :data:`HANDLERS` and :data:`UFUNC_RULES`: the handler behind each numpy function and
  ufunc, per lazy class; :func:`install` fills the classes' tables from them, and nothing
  else does;
* :data:`TRICKS`: what dfits does to other libraries' checks, why, and the test that fails
  when the trick is removed. The code of each trick lives here too.

``docs/architecture.md`` ("What a stored chunk recognises") shows the same rows.

Examples
--------
>>> names = [p.name for p in PATTERNS]
>>> len(names) == len(set(names))
True
>>> next(p.counts() for p in PATTERNS if p.name == "dask-var")
{'sum_count': 1, 'moments': 1}
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "HANDLERS",
    "PATTERNS",
    "TRICKS",
    "UFUNC_RULES",
    "ChunkFlags",
    "Pattern",
    "Trick",
    "c_strides",
    "count_cast",
    "install",
    "markdown_rows",
]


@dataclass(frozen=True)
class Pattern:
    """One call pattern: the public library call ``produced_by`` makes the numpy ``calls`` on
    each chunk, answered by kernel ``passes`` (``"sum_count moments"``: at most one call of
    each per chunk, ``"extrema:2"``: at most two; at least one in all). ``decodes`` is 1 where
    the pass *is* the decode (into its place in the result), else 0."""

    name: str
    produced_by: str
    calls: str
    passes: str
    decodes: int = 0

    def counts(self) -> dict[str, int]:
        """The kernel -> at most that many calls per chunk."""
        pairs = (item.partition(":")[::2] for item in self.passes.split())
        return {kernel: int(n or 1) for kernel, n in pairs}


_P = Pattern
_SUM = "np.sum(chunk, keepdims=True)"
_VAR = "numel; np.sum; chunk - mean -> Deviation; ** 2; np.sum(Deviation)"
_SKIP = "np.isnan(chunk) -> NanMask; np.where(mask, 0, chunk) -> NanZeroed; np.sum"
_CUT = "chunk > t -> Cut; np.where(cut, chunk, fill) -> CutValues"
_BAND, _BANDS = "band_sum_count", "band_sum_count band_moments"
_DEV = "CutValues - mean -> Deviation"
_SQ = "x ** 2 -> Deviation; np.isnan(square) -> NanMask; np.where; np.sum"

#: every call pattern answered from a kernel pass (the test of each is named after it)
PATTERNS: tuple[Pattern, ...] = (
    _P("dask-sum", "x.sum(axis)", _SUM, "sum_count"),
    _P("dask-integer-sum", "x.sum() of integers", _SUM, "integer_sum"),
    _P("dask-nansum", "da.nansum(x)", "np.nansum(chunk)", "sum_count"),
    _P("dask-mean", "x.mean()", "numel_lookup; np.sum(chunk)", "sum_count"),
    _P("dask-nanmean", "da.nanmean(x)", "nannumel_lookup; np.nansum(chunk)", "sum_count"),
    # (a float sum of 64-bit integers: the float64 pass, as numpy adds them; never wrapping)
    _P("dask-wide-mean", "x.mean() of int64", "np.sum(chunk, dtype=float64)", "sum_count"),
    _P("dask-wide-var", "x.var() of int64 (dask's moment_chunk)", _VAR, "sum_count moments"),
    _P("dask-var", "x.var() (dask's moment_chunk)", _VAR, "sum_count moments"),
    _P("dask-nanstd", "da.nanstd(x) (dask's moment_chunk)", _VAR, "sum_count moments"),
    _P("dask-max", "x.max()", "np.max(chunk)", "extrema"),
    _P("dask-nanmin", "da.nanmin(x)", "np.nanmin(chunk)", "extrema"),
    _P("dask-argmax", "x.argmax(axis)", "np.max; np.argmax (one indexed pass)", "extrema"),
    _P("dask-nanargmin", "da.nanargmin(x, axis)", "np.nanmin; np.nanargmin", "extrema"),
    # (the extrema find the infinite values of slices whose sum of squares is NaN)
    _P("dask-mean-of-squares", "(x ** 2).mean()", "x ** 2 -> Deviation", "moments extrema:2"),
    _P("dask-affine", "(x * c + d).sum()", "x * c: a new BSCALE/BZERO; np.sum", "sum_count"),
    _P("dask-astype-sum", "x.astype(float64).sum()", "exact astype; np.sum", "sum_count"),
    _P("dask-threshold-count", "(x > t).sum()", "x > t -> Cut; np.sum(cut)", _BAND),
    _P("dask-threshold-nansum", "da.nansum(da.where(x > t, x, nan))", _CUT, _BAND),
    _P("dask-threshold-zero-sum", "da.where(x > t, x, 0).sum()", _CUT, _BAND),
    _P("dask-threshold-nanmax", "da.nanmax(da.where(x > t, x, nan))", _CUT, "extrema"),
    _P("dask-threshold-nanstd", "da.nanstd(da.where(x > t, x, nan))", f"{_CUT}; {_DEV}", _BANDS),
    _P("dask-count-nonzero", "da.count_nonzero(~da.isnan(x))", "mask.astype(intp)", "sum_count"),
    _P("dask-isnan-sum", "da.isnan(x).sum()", "np.isnan(chunk); np.sum(mask)", "sum_count"),
    _P("xarray-skipna-sum", "a.sum() (skipna)", _SKIP, "sum_count"),
    _P("xarray-blank-sum", "a.sum() of integers with BLANK", _SKIP, "sum_count"),
    _P("xarray-count", "a.count()", "np.sum(~np.isnan(chunk))", "sum_count"),
    # (dask need not fuse the sum and the count of NaN into one task: a pass each)
    _P("xarray-min-count", "a.sum(min_count=1)", _SKIP + "; np.sum(isnan)", "sum_count:2"),
    _P("xarray-skipna-mean", "a.mean() (skipna)", "nannumel; np.nansum", "sum_count"),
    _P("xarray-skipna-std", "a.std() (skipna)", _VAR, "sum_count moments"),
    _P("xarray-skipna-max", "a.max() (skipna)", "np.nanmax(chunk)", "extrema"),
    _P("xarray-argmax", "a.argmax(dim)", "np.nanmax; np.nanargmax", "extrema"),
    _P("xarray-where-sum", "a.where(a > t).sum(dim)", f"{_CUT}; {_SKIP}", _BAND),
    _P("xarray-where-count", "a.where(a > t).count(dim)", f"{_CUT}; ~np.isnan; np.sum", _BAND),
    _P("xarray-where-mean", "a.where(a > t).mean(dim)", f"{_CUT}; np.nanmean", _BAND),
    _P("xarray-where-std", "a.where(a > t).std(dim)", f"{_CUT}; {_VAR}", _BANDS),
    _P("xarray-where-max", "a.where(a > t).max(dim)", f"{_CUT}; np.nanmax", "extrema"),
    _P("xarray-sum-of-squares", "(a ** 2).sum(dim) (skipna)", _SQ, "moments"),
    _P("dask-rechunk", "x.rechunk(...)", "np.concatenate: decoded into place", "decode", 1),
)


# -- the handler tables, filled by install() -------------------------------------------------


def _h(owner: str, funcs: str, handler: str, **bound: Any) -> tuple:
    return (owner, tuple(funcs.split()), handler, bound)


_S, _CV, _M = "stored:StoredChunk", "cuts:CutValues", "nanmask:NanMask"
_MAX, _MIN = {"want_max": True}, {"want_max": False}

#: (lazy class, numpy functions, handler, keyword arguments bound to the handler); names
#: are ``module:attribute`` in :mod:`dfits.stored`, resolved by :func:`install`
HANDLERS: tuple[tuple[str, tuple[str, ...], str, dict[str, Any]], ...] = (
    _h(_S, "ndim", "handlers:ndim"),
    _h(_S, "shape", "handlers:shape"),
    _h(_S, "size", "handlers:size"),
    _h(_S, "result_type", "handlers:result_type"),
    _h(_S, "sum", "handlers:sum_", skipna=False),
    _h(_S, "nansum", "handlers:sum_", skipna=True),
    _h(_S, "mean", "handlers:mean", skipna=False),
    _h(_S, "nanmean", "handlers:mean", skipna=True),
    _h(_S, "var", "handlers:spread", kind="var", skipna=False),
    _h(_S, "nanvar", "handlers:spread", kind="var", skipna=True),
    _h(_S, "std", "handlers:spread", kind="std", skipna=False),
    _h(_S, "nanstd", "handlers:spread", kind="std", skipna=True),
    _h(_S, "max amax", "handlers:extreme", **_MAX, skipna=False),
    _h(_S, "min amin", "handlers:extreme", **_MIN, skipna=False),
    _h(_S, "nanmax", "handlers:extreme", **_MAX, skipna=True),
    _h(_S, "nanmin", "handlers:extreme", **_MIN, skipna=True),
    _h(_S, "argmax", "handlers:arg", **_MAX, skipna=False),
    _h(_S, "argmin", "handlers:arg", **_MIN, skipna=False),
    _h(_S, "nanargmax", "handlers:arg", **_MAX, skipna=True),
    _h(_S, "nanargmin", "handlers:arg", **_MIN, skipna=True),
    _h(_S, "concatenate", "handlers:concatenate"),
    _h("lazy:Deviation", "sum", "handlers:deviation", skipna=False),
    _h("lazy:Deviation", "nansum", "handlers:deviation", skipna=True),
    _h("cuts:Cut", "sum nansum", "cut_handlers:mask_sum"),
    _h("cuts:Cut", "count_nonzero", "cut_handlers:mask_count_nonzero"),
    _h("cuts:Cut", "any", "cut_handlers:mask_any"),
    _h("cuts:Cut", "all", "cut_handlers:mask_all"),
    _h("cuts:Cut", "where", "cut_handlers:cut_where"),
    _h(_CV, "sum", "cut_handlers:values_sum", skipna=False),
    _h(_CV, "nansum", "cut_handlers:values_sum", skipna=True),
    _h(_CV, "mean", "cut_handlers:values_mean", skipna=False),
    _h(_CV, "nanmean", "cut_handlers:values_mean", skipna=True),
    _h(_CV, "max amax", "cut_handlers:values_extreme", **_MAX, skipna=False),
    _h(_CV, "min amin", "cut_handlers:values_extreme", **_MIN, skipna=False),
    _h(_CV, "nanmax", "cut_handlers:values_extreme", **_MAX, skipna=True),
    _h(_CV, "nanmin", "cut_handlers:values_extreme", **_MIN, skipna=True),
    _h(_M, "sum nansum", "cut_handlers:mask_sum"),
    _h(_M, "count_nonzero", "cut_handlers:mask_count_nonzero"),
    _h(_M, "any", "cut_handlers:mask_any"),
    _h(_M, "all", "cut_handlers:mask_all"),
    _h(_M, "where", "nanmask:mask_where"),
    _h("nanmask:NanZeroed", "sum nansum", "nanmask:zeroed_sum"),
    _h("partials:PartialStack", "sum", "partials:stack_sum"),
)

#: (ufunc, rule ``(lazy, inputs) -> lazy value or None``, comparison bound to it): tried in
#: order for ``ufunc(*inputs)`` on stored chunks and lazy values
UFUNC_RULES: tuple[tuple[str, str, str | None], ...] = (
    ("isnan", "nanmask:isnan_rule", None),
    *(
        (op, "cuts:comparison_rule", op)
        for op in ("greater", "greater_equal", "less", "less_equal")
    ),
)


def markdown_rows() -> list[str]:
    """The rows of the two tables in ``docs/architecture.md`` (a test keeps them equal)."""
    rows = ["| pattern | library call | numpy calls on each chunk | passes per chunk |"]
    rows.append("|---|---|---|---|")
    for p in PATTERNS:
        lib = p.name.split("-")[0] + ": " + p.produced_by
        rows.append(f"| `{p.name}` | `{lib}` | {p.calls} | {p.passes} |")
    rows += ["", "| trick | where | why | test |", "|---|---|---|---|"]
    rows += [f"| `{t.name}` | {t.where} | {t.why} | `{t.test}` |" for t in TRICKS]
    return rows


def _resolve(name: str) -> Any:
    # by name, so that this module imports nothing of the wing (stored chunks and partials
    # import the tricks below from it)
    module, attr = name.split(":")
    return getattr(importlib.import_module(f"dfits.stored.{module}"), attr)


@functools.cache
def install() -> None:
    """Fill each lazy class's ``handlers`` and the ufunc rules from the tables (once)."""
    rules = _resolve("lazy:RULES")
    for owner, funcs, handler, bound in HANDLERS:
        impl = functools.partial(_resolve(handler), **bound) if bound else _resolve(handler)
        table = _resolve(owner).handlers
        for f in funcs:
            table[getattr(np, f)] = impl
    for ufunc, rule, op in UFUNC_RULES:
        impl = functools.partial(_resolve(rule), op=getattr(np, op)) if op else _resolve(rule)
        rules.setdefault(getattr(np, ufunc), []).append(impl)


# -- tricks: what dfits does to other libraries' checks, and why ----------------------------


@dataclass(frozen=True)
class Trick:
    """What dfits answers to another library's check (``where``), ``why``, and the ``test``
    that fails when the trick is removed."""

    name: str
    where: str
    why: str
    test: str


TRICKS: tuple[Trick, ...] = (
    Trick(
        "flags-without-decoding",
        "StoredChunk.flags, .strides (ChunkFlags, c_strides)",
        "dask.array.chunk.getitem asks flags.owndata of every chunk slice (and copies one that "
        "does not own its data): answered as chunk.decode() has them (C-contiguous, owning, "
        "read-only), without decoding",
        "tests/stored/test_recognised.py::test_trick_flags_without_decoding",
    ),
    Trick(
        "base-of-views",
        "StoredChunk.base, LazyValues.base",
        "distributed's P2P rechunk copies each shard whose base is set, and then takes a "
        "memoryview of it, which a Python class cannot export before Python 3.12: a view of a "
        "chunk reports the stored values it was cut from, so it is copied to a plain array",
        "tests/array/test_distributed.py::test_p2p_rechunk_ships_stored_chunks_as_arrays",
    ),
    Trick(
        "count-cast-stays-broadcast",
        "SumPartial.astype (count_cast)",
        "dask's moment_chunk casts its count to int64; a count that is one value everywhere "
        "(a read-only broadcast) stays a broadcast instead of a fresh map per chunk",
        "tests/stored/test_recognised.py::test_trick_count_cast_stays_broadcast",
    ),
)


_FLAGS = {"C_CONTIGUOUS": True, "F_CONTIGUOUS": False, "OWNDATA": True, "WRITEABLE": False}
_FLAGS |= {"ALIGNED": True, "WRITEBACKIFCOPY": False}
_SHORT = {"C": "C_CONTIGUOUS", "F": "F_CONTIGUOUS", "O": "OWNDATA", "W": "WRITEABLE"}
_SHORT |= {"A": "ALIGNED", "X": "WRITEBACKIFCOPY"}


class ChunkFlags:
    """``ndarray.flags`` of the chunk's decoded values (``chunk.decode()``): a fresh C-ordered
    array that owns its memory and is read-only (the chunk is a read-only view of a file).
    Setting ``writeable`` to True makes the values the chunk's own, as writing to it does."""

    __slots__ = ("_chunk",)

    def __init__(self, chunk: Any) -> None:
        object.__setattr__(self, "_chunk", chunk)

    def _key(self, name: str) -> str:
        key = _SHORT.get(name, name.upper())
        if key not in _FLAGS:
            raise KeyError(f"Unknown flag {name!r}")
        return key

    def __getitem__(self, name: str) -> bool:
        if self._chunk.decoded:  # written to since: the chunk is its own array
            return self._chunk.flags[name.upper()]
        derived = _DERIVED.get(name.upper())
        if derived is not None:
            return derived(self)
        key = self._key(name)
        if key == "F_CONTIGUOUS":
            # numpy calls an array empty or with at most one axis longer than 1 both C and F
            shape = self._chunk.shape
            return 0 in shape or sum(n > 1 for n in shape) <= 1
        return _FLAGS[key]

    def __getattr__(self, name: str) -> bool:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: bool) -> None:
        if self._chunk.decoded:
            setattr(self._chunk.flags, name, value)
            return
        if self._key(name) != "WRITEABLE":
            raise ValueError(f"cannot set {name!r} of a stored chunk")
        if value:
            self._chunk.own()

    __setitem__ = __setattr__

    def __repr__(self) -> str:
        return "\n".join(f"  {k} : {self[k]}" for k in _FLAGS)


_DERIVED = {
    "FNC": lambda f: f["F"] and not f["C"],
    "FORC": lambda f: f["F"] or f["C"],
    "BEHAVED": lambda f: f["A"] and f["W"],
    "CARRAY": lambda f: f["A"] and f["W"] and f["C"],
    "FARRAY": lambda f: f["A"] and f["W"] and f["F"] and not f["C"],
}


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-ordered array of ``shape`` (what ``chunk.strides`` reports)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def count_cast(partial: np.ndarray, dtype: Any, *args: Any, **kwargs: Any) -> np.ndarray | None:
    """``partial.astype(dtype)`` as a broadcast when the partial holds one value everywhere
    (dask's ``moment_chunk`` casts its count), else None."""
    if not partial.size or any(partial.strides):
        return None
    one = partial.view(np.ndarray).reshape(-1)[:1].astype(dtype, *args, **kwargs)
    return np.broadcast_to(one.reshape(()), partial.shape)
