"""benchmarks/fft.py keeps working: each case runs once at a tiny size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fft.py"


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["inmem", "--log2n", "14", "--block", "64KiB"],
        ["ooc", "--log2n", "14", "--block", "32KiB", "--memory", "0"],
        ["2d", "--side", "128", "--tile", "32", "--block", "32KiB"],
    ],
    ids=["inmem", "ooc", "2d"],
)
def test_benchmark_cases_run(tmp_path, args):
    cmd = [sys.executable, str(SCRIPT), *args, "--repeat", "1", "--threads", "1"]
    out = subprocess.run(
        [*cmd, "--dir", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert "median of 1" in out
    assert "x the baseline" in out
    methods = {"inmem": ["limit", "numpy", "scipy", "dask-rechunk", "dfits"], "2d": ["scipy"]}
    for method in methods.get(args[0], []):
        assert f"  {method} " in out  # every method side by side in one run
