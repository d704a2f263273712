"""benchmarks/explore_http.py keeps working: run once on a tiny cube (no figure is read)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.network
def test_explore_http_benchmark_runs_and_counts_what_it_fetched(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "explore_http_bench", ROOT / "benchmarks" / "explore_http.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    res = bench.run((4, 96, 80), 16, 2, str(tmp_path))
    assert set(res["cases"]) == {"plane", "window", "spectrum"}
    for name, case in res["cases"].items():
        assert len(case["times"]) == 2
        assert case["requests"] >= 1
        # what was sent holds the rows needed, and never more than the whole file a move
        assert res["needed"][name] <= case["bytes"] <= 2 * (4 * 96 * 80 * 4 + 5 * 2880)
    text = bench.report(res)
    assert "plane" in text
    assert "MiB needed" in text
