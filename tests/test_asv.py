"""Run every asv benchmark body once on tiny data so the suite in ``asv_bench/`` never rots.

Modelled on flox's ``tests/test_asv.py``: import each benchmark module, instantiate each class,
call ``setup_cache`` once and ``setup`` with every parameter combination (a
``NotImplementedError`` there is asv's skip), then every ``time_``/``peakmem_``/``track_``
method once; ``timeraw_`` code runs in a fresh interpreter. Reductions are also checked against
``numpy-native`` so a wrong tool cannot hide behind a fast time.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "asv_bench" / "benchmarks"
PACKAGE = "dfits_asv_benchmarks"  # not "benchmarks": that name is the repo's compare.py folder
PREFIXES = ("time_", "peakmem_", "track_", "timeraw_")

pytestmark = pytest.mark.timeout(180)


def _load_package():
    """Import ``asv_bench/benchmarks`` with ``DFITS_ASV_SCALE=tiny`` (read at import time)."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DFITS_ASV_SCALE", "tiny")
        mp.delenv("DFITS_ASV_DATA", raising=False)
        spec = importlib.util.spec_from_file_location(
            PACKAGE, BENCH / "__init__.py", submodule_search_locations=[str(BENCH)]
        )
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = pkg
        spec.loader.exec_module(pkg)
        for info in pkgutil.iter_modules([str(BENCH)]):
            importlib.import_module(f"{PACKAGE}.{info.name}")
    return pkg


def _modules() -> list[str]:
    return [i.name for i in pkgutil.iter_modules([str(BENCH)]) if not i.name.startswith("_")]


def _classes(module) -> list[type]:
    return [
        obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and not name.startswith("_")
        and obj.__module__ == module.__name__
        and any(m.startswith(PREFIXES) for m in dir(obj))
    ]


def _cases() -> list:
    pkg = _load_package()
    cases = []
    for name in _modules():
        module = sys.modules[f"{pkg.__name__}.{name}"]
        cases += [pytest.param(module, c, id=f"{name}.{c.__name__}") for c in _classes(module)]
        if any(n.startswith(PREFIXES) and callable(f) for n, f in vars(module).items()):
            cases.append(pytest.param(module, None, id=f"{name}.<functions>"))
    return cases


def _run_raw(code: str | tuple[str, str]) -> None:
    if isinstance(code, tuple):  # ``(code, setup)``: asv runs the setup first, untimed
        code = f"{code[1]}\n{code[0]}"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_package_is_tiny():
    pkg = _load_package()
    assert pkg.TINY


@pytest.mark.parametrize(("module", "cls"), _cases())
def test_benchmarks_run_once(module, cls, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # setup_cache writes into the working folder, as under asv
    if cls is None:
        for name, func in vars(module).items():
            if name.startswith("timeraw_"):
                _run_raw(func())
            elif name.startswith(PREFIXES):
                func()
        return
    bench = cls()
    cache = bench.setup_cache() if hasattr(bench, "setup_cache") else None
    pre = () if cache is None else (cache,)
    params = getattr(cls, "params", [])
    methods = [m for m in dir(cls) if m.startswith(PREFIXES)]
    results: dict[tuple, object] = {}
    ran = 0
    for combo in itertools.product(*params):
        try:
            if hasattr(bench, "setup"):
                bench.setup(*pre, *combo)
        except NotImplementedError:
            continue
        for name in methods:
            out = getattr(bench, name)(*pre, *combo)
            if name.startswith("timeraw_"):
                _run_raw(out)
            elif name.startswith("time_"):
                results[combo] = out
        if hasattr(bench, "teardown"):
            bench.teardown(*pre, *combo)
        ran += 1
    assert ran, f"every parameter combination of {cls.__name__} was skipped"
    _cross_check(cls.__name__, results)


def _values(out):
    """A result as a float64 array, or None when it is not numeric data (header lists)."""
    if isinstance(out, list):
        return np.stack(out).astype(np.float64) if out and isinstance(out[0], np.ndarray) else None
    return np.asarray(getattr(out, "value", out), np.float64)


def _cross_check(name: str, results: dict) -> None:
    """Same answer from every tool as from ``numpy-native`` (else ``astropy-eager``)."""
    tools = {combo[0] for combo in results}
    ref = next((t for t in ("numpy-native", "astropy-eager") if t in tools), None)
    for combo, got in results.items():
        want = results.get((ref, *combo[1:]))
        if ref is None or want is None or _values(got) is None:
            continue
        assert np.allclose(_values(got), _values(want), rtol=1e-4, equal_nan=True), (name, combo)


def test_asv_check_passes(tmp_path):
    """``asv check`` (what ``./run asv check`` runs) finds no problem in the suite."""
    pytest.importorskip("asv")
    env = {**os.environ, "HOME": str(tmp_path)}  # a fresh machine: no ~/.asv-machine.json
    out = subprocess.run(
        [sys.executable, "-m", "asv", "check", "--python=same"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No problems found" in out.stdout


def test_asv_continuous_arguments():
    """``./run asv continuous [asv-run options] BASE HEAD``: options with values stay options."""
    spec = importlib.util.spec_from_file_location("dfits_asv_run", BENCH.parent / "asv_run.py")
    asv_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(asv_run)
    args = ["--bench", "Stamps", "-f", "1.2", "--quick", "main", "HEAD", "-a", "repeat=3"]
    opts, rest = asv_run.continuous_parser().parse_known_args(args)
    assert (opts.base, opts.head, opts.factor) == ("main", "HEAD", 1.2)
    assert (opts.run_bench, opts.run_a, rest) == (["Stamps"], ["repeat=3"], ["--quick"])
    assert asv_run.continuous_parser().parse_args(["a", "b"]).factor == asv_run.FACTOR


def test_asv_continuous_judges_dfits_rows_only():
    """The exit status of ``continuous`` looks at dfits' rows: the peers' change only by noise."""
    spec = importlib.util.spec_from_file_location("dfits_asv_run", BENCH.parent / "asv_run.py")
    asv_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(asv_run)
    ours = {
        "reductions.ReduceFloat32.time_reduce('dfits', 'sum')": True,
        "cube.CubeScience.time_cube('dfits-moment', 'moment0')": True,
        "tables.TableCases.time_case('cols3', 'dfits')": True,
        "counters.FusedPathCounters.track_decodes('dask-sum')": True,
        "imports.timeraw_import_dfits": True,
        "reductions.ReduceFloat32.time_reduce('astropy-eager', 'sum')": False,
        "tables.TableCases.time_case('cols3', 'fitsio')": False,
        "tiles.CompressedImages.time_case('funpack+dfits', 'cube-sum')": False,
    }
    assert {name: asv_run.ours(name) for name in ours} == ours


def test_asv_plots_draws_from_results_json(tmp_path):
    """``./run asv plots`` turns asv's results JSON into the PNGs of docs/performance.md."""
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location(
        "dfits_asv_plots", BENCH.parents[1] / "benchmarks" / "asv_plots.py"
    )
    plots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plots)
    reduce, count = "reductions.ReduceFloat32.time_reduce", "counters.FusedPathCounters.track_tasks"
    meta = {reduce: {"param_names": ["tool", "op"]}, count: {"param_names": ["pattern"]}}
    (tmp_path / "m").mkdir()
    (tmp_path / "benchmarks.json").write_text(json.dumps(meta))
    for i, commit in enumerate(("a" * 40, "b" * 40)):
        results = {
            reduce: [[0.1 + i, 0.2, None, 0.4], [["'dfits'", "'LIMIT'"], ["'sum'", "'std'"]]],
            count: [[1.5, 2.0], [["'dask-sum'", "'dask-var'"]]],
        }
        run = {"commit_hash": commit, "date": i, "params": {"machine": "m"}, "results": results}
        (tmp_path / "m" / f"{commit[:8]}-env.json").write_text(json.dumps(run))
    out = tmp_path / "img"
    plots.main(["--machine", "m", "--results", str(tmp_path), "--out", str(out)])
    names = {"asv-reductions.png", "asv-counters.png", "asv-history.png"}
    assert names <= {p.name for p in out.iterdir()}
