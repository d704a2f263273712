"""The out-of-core FFT under a real memory cap: a child process in a cgroup whose limit is its
warmed-up baseline plus 16 MiB transforms 2**22 complex64 (32 MiB) from FITS through the
scratch store into a FITS file, and the result equals numpy's (issue 48). Skipped, with the
reason, where no memory cgroup can be made (not root, no memory controller)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from dfits.fft.plan import plan_disk
from tests.fft.checks import TOLERANCE, rel_rms

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
MiB = 1 << 20


def _harness():
    spec = importlib.util.spec_from_file_location("fft_ooc", BENCH / "fft_ooc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


harness = _harness()
WHY = harness.cgroup_unavailable()


@pytest.mark.skipif(WHY is not None, reason=f"no memory cgroup: {WHY}")
def test_fft_under_a_16_mib_cap_equals_numpy(tmp_path):
    log2n, cap = 22, 16 * MiB
    path = harness.input_file(tmp_path, log2n)
    plan = plan_disk(1 << log2n, 8, cap, threads=2, bandwidth=1e8, latency=1e-4)
    spec = {
        "input": str(path),
        "scratch": str(tmp_path / "scratch"),
        "out": str(tmp_path / "out.fits"),
        "block": plan.block_bytes,
        "threads": 2,
        "cap": cap,
    }
    (tmp_path / "scratch").mkdir()
    harness.drop_cache(path)  # read from the disk under the cap, not from the page cache
    cmd = [sys.executable, str(BENCH / "fft_ooc_run.py"), "--child", "dfits"]
    result = harness.run_child([*cmd, "--spec", json.dumps(spec)], cap, timeout=600)
    assert result["limit"] - result["base"] == cap
    assert result["peak"] <= result["limit"]
    import dfits

    got = dfits.open(spec["out"])[0].data.compute().view(np.complex64)[:, 0]
    values = np.concatenate([s.view(np.complex64).ravel() for s in harness._slabs(1 << log2n)])
    want = np.fft.fft(values)
    assert got.dtype == want.dtype == np.complex64
    assert rel_rms(got, want) <= TOLERANCE[want.dtype]
    # every store but the last was deleted once read; the last is the caller's
    assert len(list((tmp_path / "scratch").glob("transpose-*.tiles"))) == 1


@pytest.mark.skipif(WHY is not None, reason=f"no memory cgroup: {WHY}")
def test_the_cgroup_is_removed_even_when_the_child_fails():
    _, base = harness._memory_base()
    before = {p.name for p in base.glob("dfits-fft-*")}
    with pytest.raises(RuntimeError, match="exited 3"):
        harness.run_child([sys.executable, "-c", "raise SystemExit(3)"], MiB, timeout=60)
    with pytest.raises(KeyboardInterrupt):
        _interrupted_inside_a_cgroup()
    assert {p.name for p in base.glob("dfits-fft-*")} == before


def _interrupted_inside_a_cgroup():
    with harness.memory_cgroup() as group:
        assert group.path.is_dir()
        raise KeyboardInterrupt


def test_the_cap_is_refused_with_the_reason_where_cgroups_are_unavailable(monkeypatch):
    monkeypatch.setattr(harness.os, "geteuid", lambda: 1000)
    assert "needs root" in harness.cgroup_unavailable()
    with pytest.raises(RuntimeError, match="needs root"), harness.memory_cgroup():
        pass
