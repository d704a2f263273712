"""Row filters: ``where="(MAG < 20) & (FLAG == 0)"``, evaluated in one pass over the rows.

The contract: :func:`compile_filter` parses an expression once into a :class:`RowFilter`
that names the columns it reads; a :class:`Filter` binds it to a table's readers. The one
route of rows (:func:`dfits.tables.rowdecode.spans`) decodes only those columns' fields of
each span of rows (through their :class:`~dfits.tables.columns.ColumnReader`, so the values
follow the one decode of :mod:`dfits.tables.fields`: scaled columns are physical, a null is
NaN, and a comparison with NaN is False, as in numpy and pandas), asks :meth:`Filter.test`
which rows match, and decodes the selected columns of those rows only, from the same map:
``hdu.where``, ``to_pandas``, ``to_arrow``, ``read`` and ``to_dask_dataframe`` partitions.

The language is Python's expression syntax, restricted to:

* column names (a name that is no identifier in backquotes: ```FLUX-1` > 0``), numbers,
  strings, ``True``/``False``;
* comparisons (chained ones too: ``1 < X <= 3``), ``+ - * / // % **``, unary ``-``;
* ``&``, ``|``, ``^``, ``~`` (logical on booleans, bitwise on integers: ``(FLAGS & 4) == 0``),
  and ``and``, ``or``, ``not``;
* the functions ``abs``, ``sqrt``, ``log``, ``log10``, ``exp``, ``isnan``, ``isfinite``.

Anything else (attributes, calls of other names, subscripts, lambdas) is an
:class:`~dfits.errors.ExpressionError` naming the token, before a byte is read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dfits.errors import ExpressionError
from dfits.tables.rowdecode import spans

__all__ = ["Filter", "RowFilter", "compile_filter"]

_BINARY = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power,
    ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or, ast.BitXor: np.bitwise_xor,
}  # fmt: skip
_COMPARE = {
    ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
    ast.Eq: np.equal, ast.NotEq: np.not_equal,
}  # fmt: skip
_FUNCTIONS = {
    "abs": np.abs, "sqrt": np.sqrt, "log": np.log, "log10": np.log10, "exp": np.exp,
    "isnan": np.isnan, "isfinite": np.isfinite,
}  # fmt: skip
_QUOTED = re.compile(r"`([^`]*)`")

Node = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class RowFilter:
    """A parsed row filter: the column names it reads and its evaluator."""

    expression: str
    names: tuple[str, ...]
    evaluate: Node


def _fail(expression: str, what: str) -> ExpressionError:
    return ExpressionError(f"where={expression!r}: {what}")


@lru_cache(maxsize=64)
def compile_filter(expression: str, columns: tuple[str, ...]) -> RowFilter:
    """Parse ``expression`` against the table's column names ``columns``.

    Raises
    ------
    ExpressionError
        For a syntax error (naming the token), an unknown column (listing the columns) or
        a construct outside the language (naming it).
    """
    quoted: dict[str, str] = {}

    def hold(match: re.Match[str]) -> str:
        quoted[f"__dfits_q{len(quoted)}__"] = match.group(1)
        return f"__dfits_q{len(quoted) - 1}__"

    source = _QUOTED.sub(hold, expression)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as err:
        token = (err.text or "").strip()[max((err.offset or 1) - 1, 0) :][:20]
        raise _fail(expression, f"syntax error at {token!r}") from None
    names: dict[str, str] = {}

    def column(name: str) -> str:
        name = quoted.get(name, name)
        found = name if name in columns else None
        if found is None:
            found = next((c for c in columns if c.lower() == name.lower()), None)
        if found is None:
            raise _fail(expression, f"no column {name!r}; columns: {', '.join(columns)}")
        names[found] = found
        return found

    evaluate = _build(tree.body, expression, column)
    return RowFilter(expression, tuple(names), evaluate)


def _build(node: ast.AST, expression: str, column: Callable[[str], str]) -> Node:
    def sub(n: ast.AST) -> Node:
        return _build(n, expression, column)

    if isinstance(node, ast.Name):
        name = column(node.id)
        return lambda v: v[name]
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        value = node.value
        return lambda v: value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        op, left, right = _BINARY[type(node.op)], sub(node.left), sub(node.right)
        return lambda v: _apply(op, expression, left(v), right(v))
    if isinstance(node, ast.UnaryOp):
        operand = sub(node.operand)
        if isinstance(node.op, ast.USub):
            return lambda v: np.negative(operand(v))
        if isinstance(node.op, ast.UAdd):
            return operand
        op = np.invert if isinstance(node.op, ast.Invert) else np.logical_not
        return lambda v: _apply(op, expression, operand(v))
    if isinstance(node, ast.BoolOp):
        op = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        parts = [sub(n) for n in node.values]
        return lambda v: _fold(op, [p(v) for p in parts])
    if isinstance(node, ast.Compare) and all(type(o) in _COMPARE for o in node.ops):
        terms = [sub(node.left), *(sub(n) for n in node.comparators)]
        ops = [_COMPARE[type(o)] for o in node.ops]
        return lambda v: _chain(ops, expression, [t(v) for t in terms])
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and len(node.args) == 1
        and not node.keywords
    ):
        fn, arg = _FUNCTIONS[node.func.id], sub(node.args[0])
        return lambda v: _apply(fn, expression, arg(v))
    text = ast.unparse(node)
    raise _fail(expression, f"{text!r} is not allowed in a row filter (see dfits.tables.filters)")


def _apply(op: Any, expression: str, *args: Any) -> Any:
    try:
        with np.errstate(all="ignore"):  # NaN and overflow as numpy gives them, silently
            return op(*args)
    except TypeError as err:
        kinds = ", ".join(str(np.asarray(a).dtype) for a in args)
        raise _fail(expression, f"{op.__name__} cannot take {kinds} ({err})") from None


def _fold(op: Any, values: list[Any]) -> Any:
    out = values[0]
    for value in values[1:]:
        out = op(out, value)
    return out


def _chain(ops: list[Any], expression: str, terms: list[Any]) -> Any:
    out = True
    for op, a, b in zip(ops, terms, terms[1:], strict=False):
        out = np.logical_and(out, _apply(op, expression, a, b))
    return out


def _mask(rule: RowFilter, values: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Which of ``n`` rows ``rule`` keeps, from the values of the columns it names."""
    for name, column in values.items():
        if column.ndim != 1:
            shape = column.shape[1:]
            what = f"column {name!r} has cells of shape {shape}: a filter needs one per row"
            raise _fail(rule.expression, what)
    mask = np.asarray(rule.evaluate(values))
    if mask.dtype != bool:
        raise _fail(rule.expression, f"gives {mask.dtype} values, not True/False per row")
    return np.full(n, bool(mask)) if mask.ndim == 0 else mask


@dataclass(frozen=True)
class Filter:
    """A row filter bound to a table: the expression, the table's column names and the
    readers of the columns it names; a few hundred bytes, so a DataFrame partition task
    carries it (it compiles again, once per process, where it runs)."""

    expression: str
    columns: tuple[str, ...]
    readers: Mapping[str, Any]
    step: int | None
    where: str = ""

    def test(self, values: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Which of ``n`` rows match (bool), from the values of the columns the expression
        names (as ``hdu.column`` gives them): what :func:`~dfits.tables.rowdecode.spans`
        asks of a filter."""
        rule = compile_filter(self.expression, self.columns)
        try:
            return _mask(rule, values, n)
        except ExpressionError as err:
            raise ExpressionError(f"{self.where}: {err}") from None

    def rows(self, first: int, stop: int, threads: int = 1) -> np.ndarray:
        """Matching row numbers (int64, ascending) from ``first`` to ``stop``: one pass over
        the rows, reading only the named fields."""
        found = [s.rows for s in spans([], first, stop, threads=threads, keep=self)]
        return np.concatenate(found)
