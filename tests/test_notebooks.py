"""CI runs the notebooks: every cell of ``notebooks/*.ipynb`` must execute without error.

Each notebook runs in a fresh ``python3`` kernel started from this interpreter's
environment (jupyter_client swaps the kernelspec's ``python`` for ``sys.executable``); a cell
injected at the top proves it. The stored notebooks must carry no outputs.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
BUDGET_S = 120.0  # the bound per notebook; they aim for well under 60 s
PROBE = "import sys\nprint(sys.prefix)"


def test_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == [
        "01-quickstart",
        "02-cube-exploration",
        "03-distributed",
        "04-spectral-cube",
        "05-explore",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_stripped(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {cell.id} stores outputs"
            assert cell.execution_count is None


@pytest.mark.timeout(int(BUDGET_S) + 60)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(PROBE))
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=int(BUDGET_S),
        resources={"metadata": {"path": str(tmp_path)}},
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError naming the failing cell
    elapsed = time.perf_counter() - start
    probe = "".join(o.get("text", "") for o in nb.cells[0].outputs).strip()
    assert os.path.realpath(probe) == os.path.realpath(sys.prefix), "kernel is not this venv"
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors
    assert elapsed < BUDGET_S, f"{path.name} took {elapsed:.0f} s"
