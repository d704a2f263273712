"""The size rules of the code: modules of at most 400 lines, functions of at most 60 lines of
code (the docstring not counted), and the array layer within its 2,400 lines.

A few Numba kernels are allowed longer bodies, each with the reason: splitting the hot loop of
a kernel into calls costs a call per value, or per field of every row, where Numba does not
inline them.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dfits"

#: function -> why it may pass 60 lines
LONG_KERNELS = {
    "kernels/rice.py:_decode": "the Rice bit loop: one tight loop over a tile's stream",
    "kernels/fieldsums.py:_kernel": "the row loop over every field kind of a table, per block",
}


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0] if node.body else None
    value = getattr(first, "value", None)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_modules_are_at_most_400_lines():
    big = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := p.read_text(encoding="utf-8").count("\n")) > 400
    }
    assert not big, f"modules over 400 lines: {big}"


def test_functions_are_at_most_60_lines():
    long = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{path.relative_to(SRC)}:{node.name}"
                if (n := _code_lines(node)) > 60 and name not in LONG_KERNELS:
                    long[name] = n
    assert not long, f"functions over 60 lines of code: {long}"


def test_the_array_layer_stays_within_2400_lines():
    total = sum(p.read_text(encoding="utf-8").count("\n") for p in (SRC / "array").glob("*.py"))
    assert total <= 2400, f"src/dfits/array/*.py holds {total} lines"
