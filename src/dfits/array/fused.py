"""Sums of recorded elementwise steps, run as one compiled pass per part.

A :class:`~dfits.array.tiles.LazyPart` records the numpy steps dask's moment combine takes on
each part before the parts are summed (``ns * (divide(totals, ns).astype(dt) - mu) ** 2``, with
``where(ns == 0, 0, ...)`` in the aggregate). :func:`fused_sum` translates such a chain into an
expression of :mod:`dfits.kernels.elementwise`, with the loop dtypes numpy's ufuncs would
pick, and adds every part through the compiled kernel: no temporaries and no Python call per
tile. The sum is bit for bit the one numpy's steps give (but for the sign bit of a NaN).
Chains with a step outside that grammar (other functions, keyword arguments, complex or
object dtypes, float-to-integer casts, broadcasts that cannot be laid out in two dimensions)
return None, and the caller evaluates them tile by tile.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dfits.array.tiles import AsType, LazyPart, quiet_divide
from dfits.kernels import elementwise

__all__ = ["fused_sum", "shifted_m2"]

_BINOPS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}
_COMPARISONS = {np.equal: "==", np.less_equal: "<="}


class _Unsupported(Exception):
    pass


def _name(dtype: np.dtype) -> str:
    if dtype.name not in elementwise.DTYPES:
        raise _Unsupported(dtype)
    return dtype.name


def _castable(src: Any, dst: np.dtype) -> None:
    # NaN and infinities have no integer value: numpy and LLVM would answer differently
    if not isinstance(src, type) and np.dtype(src).kind == "f" and dst.kind != "f":
        raise _Unsupported("float to integer cast")


def _translate(node: Any, shape: tuple[int, ...], inputs: list[Any]) -> tuple[tuple, Any]:
    """``(expression, dtype)`` of ``node``; a weak Python scalar's dtype is its type."""
    if isinstance(node, LazyPart):
        if node.shape != shape:
            raise _Unsupported("operand of another shape")
        return _step(node.func, node.args, shape, inputs)
    if isinstance(node, bool | int | float) and not isinstance(node, np.generic):
        kind = {bool: "bool", int: "int", float: "float"}[type(node)]
        return ("const", kind, repr(node)), type(node)
    if isinstance(node, np.generic) or (isinstance(node, np.ndarray) and node.ndim == 0):
        value = np.asarray(node)
        expr, _ = _translate(value.item(), shape, inputs)
        return ("cast", _name(value.dtype), expr), value.dtype
    if isinstance(node, np.ndarray):
        _name(node.dtype)
        if np.broadcast_shapes(node.shape, shape) != shape:
            raise _Unsupported("operand does not broadcast to the part")
        for k, seen in enumerate(inputs):
            if seen is node:
                return (_kind(node), k), node.dtype
        inputs.append(node)
        return (_kind(node), len(inputs) - 1), node.dtype
    raise _Unsupported(type(node))


def _kind(a: np.ndarray) -> str:
    # one value everywhere (dask's counts are broadcasts of one): passed as a scalar
    return "arg" if a.size and not any(a.strides) else "in"


def _input(a: np.ndarray, shape: tuple[int, ...]) -> Any:
    if _kind(a) == "arg":
        return a.reshape(-1)[0]  # a numpy scalar of the array's dtype
    v = _as_2d(a, shape)
    return None if v is None else _read_only(v)


def _step(func: Any, args: list[Any], shape, inputs) -> tuple[tuple, Any]:
    if isinstance(func, AsType):
        if func.kwargs or len(args) != 1:
            raise _Unsupported("astype keywords")
        expr, src = _translate(args[0], shape, inputs)
        dtype = np.dtype(func.dtype)
        _castable(src, dtype)
        return ("cast", _name(dtype), expr), dtype
    if func is np.where:
        if len(args) != 3:
            raise _Unsupported("where")
        (c, tc), (a, ta), (b, tb) = (_translate(x, shape, inputs) for x in args)
        if tc is not bool and np.dtype(tc) != np.bool_:
            raise _Unsupported("where on a non-boolean condition")
        # numpy's result type: a weak scalar takes the other branch's kind
        out = np.result_type(*(_weak(e, t) for e, t in ((a, ta), (b, tb))))
        _castable(ta, out)
        _castable(tb, out)
        return ("where", _name(out), c, a, b), out
    if func is quiet_divide:
        ufunc = np.true_divide
    elif not isinstance(func, functools.partial) or func.keywords or func.args:
        raise _Unsupported(func)
    else:
        ufunc = func.func
    known = ufunc in _BINOPS or ufunc in _COMPARISONS or ufunc is np.power
    if len(args) != 2 or not known:
        raise _Unsupported(ufunc)
    (a, ta), (b, tb) = (_translate(x, shape, inputs) for x in args)
    loop = ufunc.resolve_dtypes((_dtype_or_weak(ta), _dtype_or_weak(tb), None))
    _castable(ta, loop[0])
    _castable(tb, loop[1])
    if ufunc is np.power:
        # x ** 2 is x * x in numpy's float loops; other powers stay numpy's
        if b != ("const", "int", "2") or len(set(loop)) != 1 or loop[0].kind != "f":
            raise _Unsupported("power")
        return ("square", _name(loop[0]), a), loop[2]
    if ufunc in _COMPARISONS:
        if loop[0] != loop[1]:
            raise _Unsupported("mixed loop dtypes")
        return ("binop", _COMPARISONS[ufunc], _name(loop[0]), a, b), loop[2]
    if len(set(loop)) != 1:
        raise _Unsupported("mixed loop dtypes")
    return ("binop", _BINOPS[ufunc], _name(loop[0]), a, b), loop[2]


def _dtype_or_weak(t: Any) -> Any:
    return t if isinstance(t, type) else np.dtype(t)


def _weak(expr: tuple, t: Any) -> Any:
    # np.result_type treats Python scalars as weak only when given as values
    if isinstance(t, type):
        return {"int": 0, "float": 0.0, "bool": False}[expr[1]]
    return np.dtype(t)


def _as_2d(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """``a`` broadcast to ``shape`` as a 2-D view (unit axes dropped), or None."""
    # the accumulator itself stays writeable: broadcast_to gives read-only views
    b = a if a.shape == shape else np.broadcast_to(a, shape)
    kept = tuple(n for n in shape if n != 1)
    v = b.reshape(kept)  # dropping length-1 axes never copies
    if v.ndim > 2:
        try:
            v = v.reshape((math.prod(kept[:-1]), kept[-1]), copy=False)
        except ValueError:
            return None
    return v.reshape((1,) * (2 - v.ndim) + v.shape)


def _read_only(v: np.ndarray) -> np.ndarray:
    # numba compiles once per argument type, and read-only is part of the type: inputs are
    # always read-only views, so that a map that happens to be writeable adds no variant
    v = v.view()
    v.flags.writeable = False
    return v


def fused_sum(
    leaves: list[Any], shape: tuple[int, ...], rdtype: np.dtype, skipna: bool
) -> np.ndarray | None:
    """``Σ leaves`` (each evaluated elementwise) in ``rdtype``, in part order; or None.

    The same value as adding the evaluated parts with ``np.add(..., dtype=rdtype)`` one after
    another (NaN counted as 0 with ``skipna``). None when any part is not a translatable chain
    of the same steps as the first, so that the caller can evaluate the parts itself.
    """
    if not any(isinstance(leaf, LazyPart) for leaf in leaves) or not math.prod(shape):
        return None
    try:
        plans = []
        for leaf in leaves:
            inputs: list[Any] = []
            expr, dtype = _translate(leaf, shape, inputs)
            plans.append((expr, dtype, inputs))
        expr, dtype, _ = plans[0]
        if isinstance(dtype, type) or any(p[0] != expr or p[1] != dtype for p in plans[1:]):
            return None
        _castable(dtype, rdtype)
        kernel = elementwise.sum_kernel(expr, _name(np.dtype(dtype)), _name(rdtype), skipna)
    except (_Unsupported, ValueError, TypeError):
        return None
    acc = np.empty(shape, rdtype)
    flat = _as_2d(acc, shape)
    views = [[_input(a, shape) for a in inputs] for _, _, inputs in plans]
    if flat is None or any(v is None for vs in views for v in vs):
        return None
    for k, vs in enumerate(views):
        kernel(flat, k == 0, *vs)
    return acc


def shifted_m2(
    n: Any, mean: np.ndarray, m2: np.ndarray, centre: Any, dtype: np.dtype
) -> np.ndarray | None:
    """``Σ(x - c)² = M2 + n (mean - c)²`` in one compiled pass, stored in ``dtype``; or None.

    The steps of :func:`dfits.array.dispatch._shifted_m2`'s tiles, recorded: ``mean - c`` in
    float64, squared, times the counts, plus ``M2``, and 0 where a slice counts nothing.
    """
    shape = np.shape(mean)
    if isinstance(centre, LazyPart) and centre.shape != shape:
        return None
    step = functools.partial
    d = LazyPart(
        step(np.subtract), [mean, LazyPart(AsType(np.float64, {}), [centre], shape)], shape
    )
    sq = LazyPart(step(np.power), [d, 2], shape)
    total = LazyPart(step(np.add), [LazyPart(step(np.multiply), [sq, n], shape), m2], shape)
    empty = LazyPart(step(np.less_equal), [n, 0], shape)
    return fused_sum([LazyPart(np.where, [empty, 0.0, total], shape)], shape, dtype, False)
