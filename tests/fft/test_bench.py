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
    if args[0] == "ooc":
        assert "4 passes over 0.1 MiB; dfits takes" in out


def test_out_of_core_case_refuses_what_the_disk_cannot_hold(tmp_path):
    # 2**40 complex64 is 8 TiB: refused before any file is written, naming the largest size
    # that fits (input, three scratch stores and the output at once)
    cmd = [sys.executable, str(SCRIPT), "ooc", "--log2n", "40", "--dir", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2
    assert "needs 40960 GiB" in done.stderr
    assert "the largest that fits is --log2n" in done.stderr
    assert not list(tmp_path.iterdir())
