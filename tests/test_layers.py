"""The layering rule of DESIGN.md, checked on the source: imports only point down, no cycles.

Every ``import`` of a dfits module counts, inside functions too (a deferred import is still
a dependency), except those under ``if TYPE_CHECKING:``. ``import dfits`` / ``from dfits
import kernels`` name the package root (the public API) or one of its subpackages.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Layer of each top-level part of the package: a module may import its own layer and below.
RANK = {
    "errors": 0,
    "_display": 0,
    "_lazy": 0,
    "format": 1,
    "kernels": 2,
    "io": 3,
    "progress": 3,
    "stored": 4,
    "array": 5,
    "section": 5,
    "tables": 6,
    "tiles": 6,
    "fft": 6,
    "file": 7,
    "listing": 7,
    "write": 8,
    "cube": 8,
    "xarray": 9,
    "jupyter": 10,
    "cli": 11,
    "climoment": 11,
    "demo": 11,
}

#: Third-party packages a layer must never import (DESIGN.md's table of layers): the pure
#: layers stay free of the heavy ones, and only the xarray adapter (and the layers above it,
#: or ``cube`` where a result is a DataArray) may import xarray.
FORBIDDEN = {
    "format": {"dask", "distributed", "xarray", "numba"},
    "kernels": {"dask", "distributed", "xarray", "fsspec", "astropy"},
    "io": {"xarray"},
    "stored": {"xarray", "distributed", "fsspec"},
    "array": {"xarray"},
    "section": {"xarray"},
    "tables": {"xarray"},
    "tiles": {"xarray"},
    "write": {"xarray"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The dfits modules ``path`` imports (submodules named in ``from x import y`` included)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            sub = [f"{node.module}.{a.name}" for a in node.names]
            names = [n for n in sub if n in modules] or [node.module]
        else:
            continue
        out.update(n for n in names if n == "dfits" or n.startswith("dfits."))
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in (SRC / "dfits").rglob("*.py")}
    return {name: _imports(path, set(files)) for name, path in files.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_no_module_imports_upwards(graph):
    upward = []
    for module, imported in graph.items():
        mine = _layer(module)
        if mine is None:
            continue  # the package root is the public API: it may gather every layer
        for other in imported:
            theirs = _layer(other)
            if theirs is None:
                # ``import dfits`` (the public API) gathers every layer: only the layers that
                # face people may use it; below them it would be an import upwards
                if RANK.get(mine, 99) < RANK["xarray"]:
                    upward.append(f"{module} -> dfits (the package root)")
                continue
            if RANK.get(theirs, 99) > RANK.get(mine, 99):
                upward.append(f"{module} -> {other}")
    assert not upward, "imports against the layering:\n" + "\n".join(sorted(upward))


def _third_party(path: Path) -> set[str]:
    """Top-level names of the non-dfits packages ``path`` imports (deferred imports too)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_layers_import_only_their_third_party_packages():
    wrong = []
    for path in sorted((SRC / "dfits").rglob("*.py")):
        layer = _layer(_module_name(path))
        bad = _third_party(path) & FORBIDDEN.get(layer or "", set())
        wrong.extend(f"{_module_name(path)} imports {name}" for name in sorted(bad))
    assert not wrong, "third-party imports against DESIGN.md's layers:\n" + "\n".join(wrong)


def test_every_layer_has_a_rank(graph):
    assert {_layer(m) for m in graph} - {None} <= set(RANK)


def _cycles(edges: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    return found


# With no upward import, a cycle can only run inside one layer: each layer is checked alone.
_LAYERS = sorted(RANK)


@pytest.mark.parametrize("layer", _LAYERS)
def test_no_import_cycles(graph, layer):
    prefix = f"dfits.{layer}"
    inside = {m for m in graph if m == prefix or m.startswith(f"{prefix}.")}
    # A package importing its own submodules is how packages are built, not a cycle.
    edges = {
        m: {i for i in graph[m] & inside if i != m and not i.startswith(f"{m}.")} for m in inside
    }
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
