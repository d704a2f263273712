"""Every ``>>>`` example in dfits' docstrings runs, and shows what it says it shows.

Each module is one test, found by walking ``src/dfits``, so a module that is added or moved is
covered without a list to keep. Examples run in a fresh temporary folder (some write files).
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> list[str]:
    names = []
    for path in sorted((SRC / "dfits").rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(SRC).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=flags)
    tests = finder.find(module, name)  # globals: a copy of the module's, as testmod gives
    assert tests, f"{name} has '>>>' in its source but no doctest was found"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def _documents() -> list[str]:
    docs = SRC.parent / "docs"
    return sorted(p.name for p in docs.glob("*.md") if ">>>" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", _documents())
def test_document_examples_run(name, tmp_path, monkeypatch):
    """The ``>>>`` examples of the user docs (docs/*.md) run as they are shown."""
    monkeypatch.chdir(tmp_path)
    path = SRC.parent / "docs" / name
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(str(path), module_relative=False, optionflags=flags, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
