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
        ["2d", "--side", "128", "--tile", "32", "--block", "32KiB"],
    ],
    ids=["inmem", "2d"],
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


@pytest.mark.slow
def test_out_of_core_case_runs(tmp_path):
    # every method at a tiny size: the capped ones only where a memory cgroup can be made
    from tests.fft.test_ooc import WHY

    methods = ["numpy", "dfits-inmem"]
    if WHY is None:
        methods += ["dfits", "floor", "paging"]
    cmd = [sys.executable, str(SCRIPT), "ooc", "--sizes", "14", "--cap", "64MiB", "--methods"]
    out = subprocess.run(
        [*cmd, *methods, "--dir", str(tmp_path), "--threads", "1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "plan: block" in out
    for method in methods:
        assert f"  {method} " in out
    if "dfits" in methods:
        assert "x faster than demand paging" in out
        assert "x the I/O floor" in out
        assert out.count(" err ") == 2  # dfits and paging checked against numpy


def test_out_of_core_case_refuses_what_the_disk_cannot_hold(tmp_path):
    # 2**40 complex64 is 8 TiB: refused before any file is written, naming the largest size
    # that fits (the input, and the scratch store read and the one written at once)
    cmd = [sys.executable, str(SCRIPT), "ooc", "--sizes", "40", "--dir", str(tmp_path)]
    done = subprocess.run([*cmd, "--methods", "dfits", "numpy"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "24576.00 GiB" in done.stdout + done.stderr
    assert "too little; the largest size that fits is 2**" in done.stderr
    assert not list(tmp_path.iterdir())
