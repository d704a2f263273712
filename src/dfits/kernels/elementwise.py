"""Sums of elementwise expressions over parts, compiled to one pass without temporaries.

dask's combine steps for ``var``/``std`` along axes run the same chain of numpy steps on every
part before adding the parts: ``ns * (divide(totals, ns).astype(dt) - mu) ** 2``, with a
``where(ns == 0, 0, ...)`` in the aggregate. Evaluated by numpy, each step is a call and a
temporary per tile, and the combine of a 1024² noise map took longer than reading its cube.
:func:`sum_kernel` compiles such a chain, described as a small expression tree, into a loop
that computes it element by element and adds it into an accumulator.

The result is bit for bit numpy's (but for the sign bit of a NaN, which the hardware sets).
Each step casts its operands to the loop dtype numpy's ufunc would pick (the caller resolves it
with ``ufunc.resolve_dtypes``) and computes in it, under strict IEEE arithmetic (no fast-math),
and ``x ** 2`` is ``x * x``, as numpy computes it. Parts are added in order, as ``np.add``
over the concatenation would.

Expression trees are nested tuples (hashable, so each distinct chain compiles once per
process):

* ``("in", k)``: element ``[i, j]`` of input ``k`` (2-D arrays of the accumulator's shape; any
  strides, broadcasts included);
* ``("arg", k)``: input ``k`` itself, a scalar (an array of one value everywhere, passed as its
  value so that the loop over the other inputs can vectorise);
* ``("const", kind, text)``: a scalar, ``kind`` ``"int"``/``"float"``/``"bool"`` and ``text``
  its ``repr`` (``"nan"`` and ``"inf"`` allowed);
* ``("binop", op, dtype, a, b)``: ``op`` one of ``+ - * / == <=`` on ``a`` and ``b`` cast to
  ``dtype`` (a numpy dtype name; ``==`` and ``<=`` give a bool);
* ``("square", dtype, a)``: ``a`` cast to ``dtype``, times itself;
* ``("where", dtype, c, a, b)``: ``a`` if ``c`` else ``b``, cast to ``dtype``;
* ``("cast", dtype, a)``.

A cast from a floating value to an integer or bool dtype is the caller's to refuse: numpy and
LLVM give NaN and infinities different integers.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
from numba import njit

__all__ = ["DTYPES", "evaluate", "sum_kernel"]

#: Dtypes an expression may compute in (numba has them all as scalars).
DTYPES = frozenset(
    ("bool", "float32", "float64", *(f"{s}int{n}" for s in ("", "u") for n in (8, 16, 32, 64)))
)
_OPS = {"+", "-", "*", "/", "==", "<="}
_SPECIAL = {"nan": "np.nan", "inf": "np.inf", "-inf": "(-np.inf)"}


def _cast(expr: str, dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}")
    return f"np.bool_({expr})" if dtype == "bool" else f"np.{dtype}({expr})"


def _const(kind: str, text: str) -> str:
    # only a number may reach the generated source
    if kind == "bool" and text in ("True", "False"):
        return text
    if kind == "int" and re.fullmatch(r"-?\d+", text):
        return text
    if kind == "float" and (text in _SPECIAL or re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", text)):
        return _SPECIAL.get(text, text)
    raise ValueError(f"unsupported constant {kind} {text!r}")


def _emit(node: tuple, lines: list[str], count: list[int]) -> str:
    """Append the statements computing ``node``; return the name holding its value."""
    op = node[0]
    if op == "in":
        return f"in{int(node[1])}[i, j]"
    if op == "arg":
        return f"in{int(node[1])}"
    if op == "const":
        return _const(node[1], node[2])
    name = f"t{count[0]}"
    count[0] += 1
    if op == "binop":
        sym, dtype, a, b = node[1:]
        if sym not in _OPS:
            raise ValueError(f"unsupported operator {sym!r}")
        ea, eb = _emit(a, lines, count), _emit(b, lines, count)
        lines.append(f"{name} = {_cast(ea, dtype)} {sym} {_cast(eb, dtype)}")
    elif op == "square":
        dtype, a = node[1:]
        lines.append(f"{name} = {_cast(_emit(a, lines, count), dtype)}")
        lines.append(f"{name} = {name} * {name}")
    elif op == "where":
        dtype, c, a, b = node[1:]
        ec, ea, eb = (_emit(n, lines, count) for n in (c, a, b))
        lines.append(f"{name} = {_cast(ea, dtype)} if {ec} else {_cast(eb, dtype)}")
    elif op == "cast":
        dtype, a = node[1:]
        lines.append(f"{name} = {_cast(_emit(a, lines, count), dtype)}")
    else:
        raise ValueError(f"unsupported expression node {op!r}")
    return name


def _inputs(node: tuple) -> int:
    if node[0] in ("in", "arg"):
        return int(node[1]) + 1
    if node[0] == "const":
        return 0
    return max((_inputs(n) for n in node if isinstance(n, tuple)), default=0)


@functools.lru_cache(maxsize=128)
def sum_kernel(expr: tuple, value_dtype: str, acc_dtype: str, skipna: bool):
    """Compile ``kernel(acc, first, in0, in1, ...)`` adding ``expr`` into ``acc``.

    ``expr`` computes values of ``value_dtype``; each is cast to ``acc_dtype`` and stored
    (``first``) or added to ``acc[i, j]`` (``np.add(acc, value, dtype=acc_dtype)``). With
    ``skipna`` a NaN value counts as 0 (``np.nansum``). Raises ``ValueError`` for trees or
    dtypes outside the grammar above.
    """
    lines: list[str] = []
    value = _emit(expr, lines, [0])
    lines.append(f"v = {value}")
    if skipna and value_dtype.startswith("float"):
        lines.append(f"v = {_cast('0', value_dtype)} if v != v else v")
    nin = _inputs(expr)
    body = "\n".join(" " * 16 + line for line in lines)
    stored = _cast("v", acc_dtype)
    params = "".join(f", in{k}" for k in range(nin))
    src = (
        f"def kernel(acc, first{params}):\n"
        "    n0, n1 = acc.shape\n"
        "    if first:\n"
        "        for i in range(n0):\n"
        "            for j in range(n1):\n"
        f"{body}\n"
        f"                acc[i, j] = {stored}\n"
        "    else:\n"
        "        for i in range(n0):\n"
        "            for j in range(n1):\n"
        f"{body}\n"
        f"                acc[i, j] = acc[i, j] + {stored}\n"
    )
    namespace: dict[str, Any] = {"np": np}
    # the source holds only operators, dtype names and checked numbers (see ``_const``)
    exec(compile(src, f"<dfits.kernels.elementwise {expr!r}>", "exec"), namespace)
    # strict IEEE (no fast-math): the same roundings as numpy's steps; errors as numpy's
    return njit(nogil=True, error_model="numpy")(namespace["kernel"])


def evaluate(expr: tuple, inputs: list[np.ndarray]) -> np.ndarray:
    """numpy's value of ``expr`` (the oracle the compiled kernels are tested against)."""
    op = expr[0]
    if op in ("in", "arg"):
        return np.asarray(inputs[int(expr[1])])
    if op == "const":
        kind, text = expr[1], expr[2]
        return {"int": int, "float": float, "bool": lambda t: t == "True"}[kind](text)
    if op == "binop":
        sym, dtype, a, b = expr[1:]
        ufunc = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
        ufunc["=="], ufunc["<="] = np.equal, np.less_equal
        va, vb = evaluate(a, inputs), evaluate(b, inputs)
        with np.errstate(all="ignore"):  # the compiled loops are quiet too
            return ufunc[sym](np.asarray(va).astype(dtype), np.asarray(vb).astype(dtype))
    if op == "square":
        v = np.asarray(evaluate(expr[2], inputs)).astype(expr[1])
        return v * v
    if op == "where":
        dtype, c, a, b = expr[1:]
        va = np.asarray(evaluate(a, inputs)).astype(dtype)
        vb = np.asarray(evaluate(b, inputs)).astype(dtype)
        return np.where(evaluate(c, inputs), va, vb)
    if op == "cast":
        return np.asarray(evaluate(expr[2], inputs)).astype(expr[1])
    raise ValueError(f"unsupported expression node {op!r}")
