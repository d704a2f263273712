"""Graphs of the asv results for docs/performance.md, drawn from the results JSON.

    ./run asv plots [--machine dfits-ref-2core] [--out docs/images] [--results DIR]

Reads ``asv_bench/results/<machine>/*.json`` (asv's own files: one per commit) and
``asv_bench/results/benchmarks.json`` (parameter names), and writes PNGs:

* ``asv-reductions.png``, ``asv-cube.png``, ``asv-io.png``: the latest commit's times of every
  headline benchmark, one bar per tool (dfits and its astropy-eager, fitsio, fpack, LIMIT...
  twins), grouped by the benchmark's other parameter; log scale, so equal gaps are equal
  ratios;
* ``asv-counters.png``: the fused-path counters per chunk of the latest commit;
* ``asv-history.png`` (when the machine has results for two commits or more): dfits' time of
  each headline benchmark and the counters, per commit, relative to the oldest commit.

Missing benchmarks (skipped tools, subsets run with ``--bench``) are left out of the graphs.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "asv_bench" / "results"
REFERENCE = "dfits-ref-2core"
#: figure -> the benchmarks drawn in it, one panel each
FIGURES = {
    "reductions": [f"reductions.Reduce{k}.time_reduce" for k in ("Float64", "Float32", "ScaledInt16")],  # noqa: E501
    "cube": ["cube.CubeScience.time_cube", "cube.ScaledCubeMoment.time_moment0"],
    "io": [
        "tiles.CompressedImages.time_case",
        "tables.ColumnSum.time_column_sum",
        "writes.WriteImage.time_write",
        "writes.CompressImage.time_compress",
        "writes.VerifyChecksum.time_verify",
        "imports.cold_start_first_sum",
    ],
}  # fmt: skip
#: a panel made of one-value benchmarks, one bar each: tool -> benchmark
PAIRS = {
    "imports.cold_start_first_sum": {
        "dfits": "imports.timeraw_cold_start_first_sum",
        "astropy-eager": "imports.timeraw_cold_start_first_sum_astropy",
    }
}
#: dfits' tools in reds, the peers in the other colours, so dfits stands out in every panel
OURS, PEERS = ("C3", "#ff9896", "#7f1d1d"), ("C0", "C1", "C2", "C4", "C5", "C6", "C7", "C8", "C9")
COUNTERS = ("kernel_passes", "decodes", "bytes_read", "tasks")


def load(results: Path, machine: str) -> tuple[list[dict], dict]:
    """The machine's result files (oldest commit first) and ``benchmarks.json``."""
    runs = [json.loads(p.read_text()) for p in (results / machine).glob("*.json")]
    runs = sorted((r for r in runs if "results" in r), key=lambda r: r["date"])
    if not runs:
        raise SystemExit(f"no asv results for machine {machine!r} in {results}")
    return runs, json.loads((results / "benchmarks.json").read_text())


def values(run: dict, name: str) -> dict[tuple, float]:
    """``{parameter values: result}`` of benchmark ``name`` in one run (NaN and None left out)."""
    if name in PAIRS:
        return {(t,): v for t, n in PAIRS[name].items() for v in values(run, n).values()}
    entry = run["results"].get(name)
    if entry is None:
        return {}
    result, params = entry[0], entry[1]
    combos = itertools.product(*[[ast.literal_eval(v) for v in p] for p in params])
    return {
        combo: float(v)
        for combo, v in zip(combos, result or [], strict=False)
        if v is not None and not (isinstance(v, float) and math.isnan(v))
    }


def panel(ax, run: dict, name: str, meta: dict) -> bool:
    """Bars of one benchmark: one per tool, grouped by its other parameter."""
    got = values(run, name)
    if not got:
        return False
    names = ["tool"] if name in PAIRS else meta.get(name, {}).get("param_names", [])
    tool_at = names.index("tool") if "tool" in names else None
    groups = sorted({tuple(v for i, v in enumerate(k) if i != tool_at) for k in got}, key=str)
    tools = list(dict.fromkeys(k[tool_at] for k in got)) if tool_at is not None else [name]
    width = 0.8 / len(tools)
    ours = [t for t in tools if str(t).startswith("dfits")]
    peers = [t for t in tools if t not in ours]
    for j, tool in enumerate(tools):
        ys = []
        for g in groups:
            key = list(g)
            if tool_at is not None:
                key.insert(tool_at, tool)
            ys.append(got.get(tuple(key), math.nan))
        xs = [i + j * width for i in range(len(groups))]
        color = OURS[ours.index(tool) % 3] if tool in ours else PEERS[peers.index(tool) % 9]
        ax.bar(xs, ys, width, label=tool, color=color)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))])
    ax.set_xticklabels([" ".join(map(str, g)) or name.rsplit(".", 1)[-1] for g in groups])
    spread = max(got.values()) / max(min(got.values()), 1e-12)
    ax.set_yscale("log" if spread > 10 else "linear")  # log: equal gaps are equal ratios
    ax.set_ylabel("seconds")
    ax.set_title(name.split(".", 1)[1], fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    return True


def figure(plt, names: list[str], run: dict, meta: dict, path: Path) -> bool:
    shown = [n for n in names if values(run, n)]
    if not shown:
        return False
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 3.2 * len(shown)), squeeze=False)
    for ax, name in zip(axes[:, 0], shown, strict=True):
        panel(ax, run, name, meta)
    fig.suptitle(f"asv, commit {run['commit_hash'][:10]}, {run['params']['machine']}")
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def counters_figure(plt, run: dict, path: Path) -> bool:
    per = {c: values(run, f"counters.FusedPathCounters.track_{c}") for c in COUNTERS}
    if not any(per.values()):
        return False
    names = sorted({k[0] for v in per.values() for k in v})
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(names) + 1.5))
    height = 0.8 / len(COUNTERS)
    for j, c in enumerate(COUNTERS):
        ys = [i + j * height for i in range(len(names))]
        ax.barh(ys, [per[c].get((n,), math.nan) for n in names], height, label=c)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(names))])
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("per chunk (bytes read: per stored data byte)")
    ax.legend(fontsize=7)
    ax.set_title(f"fused-path counters, commit {run['commit_hash'][:10]}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def history_figure(plt, runs: list[dict], meta: dict, path: Path) -> bool:
    """dfits' time of each headline benchmark per commit over the oldest commit's, and each
    counter summed over the patterns (a lost fast path shows as a step)."""
    if len(runs) < 2:
        return False
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for name in (n for ns in FIGURES.values() for n in ns):
        names = meta.get(name, {}).get("param_names", [])
        at = names.index("tool") if "tool" in names else None
        series = [values(r, name) for r in runs]
        for key, base in series[0].items():
            if at is not None and not str(key[at]).startswith("dfits"):
                continue
            ys = [s.get(key, math.nan) / base for s in series]
            if sum(not math.isnan(y) for y in ys) < 2:
                continue
            top.plot(range(len(runs)), ys, marker="o", lw=0.8, alpha=0.6)
    if not top.lines:
        top.text(0.5, 0.5, "no timing recorded for two commits yet", ha="center",
                 transform=top.transAxes)  # fmt: skip
    for c in COUNTERS:
        totals = [sum(values(r, f"counters.FusedPathCounters.track_{c}").values()) for r in runs]
        if any(totals):
            bottom.plot(range(len(runs)), totals, marker="o", label=c)
    top.set_ylabel("dfits' time / oldest commit's")
    top.set_title("dfits' timings per commit (1 = unchanged; timings swing ~2x on 2 loaded cores)")
    bottom.set_ylabel("sum over the patterns")
    bottom.set_title("fused-path counters per chunk (exact)")
    bottom.legend(fontsize=7)
    bottom.set_xticks(range(len(runs)))
    bottom.set_xticklabels([r["commit_hash"][:8] for r in runs], rotation=30, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--machine", default=REFERENCE)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, meta = load(args.results, args.machine)
    args.out.mkdir(parents=True, exist_ok=True)
    made = [f"asv-{key}.png" for key, names in FIGURES.items()
            if figure(plt, names, runs[-1], meta, args.out / f"asv-{key}.png")]  # fmt: skip
    if counters_figure(plt, runs[-1], args.out / "asv-counters.png"):
        made.append("asv-counters.png")
    if history_figure(plt, runs, meta, args.out / "asv-history.png"):
        made.append("asv-history.png")
    print("wrote", ", ".join(str(args.out / m) for m in made) or "nothing")


if __name__ == "__main__":
    main()
