"""compare.py's tables: cross-checks, text and Markdown reports, ratios against dfits."""

from __future__ import annotations

import os
import platform
import shlex
import statistics
from importlib import metadata
from pathlib import Path

import numpy as np

from compare_setup import HOW, TOOLS


def cross_check(out: dict) -> list[str]:
    ref = next(
        (
            t
            for t in ("numpy-native", "astropy-eager", "LIMIT")
            if t in out and out[t]["check"] is not None
        ),
        None,
    )
    notes = [f"{t}: n/a -- {rec['error']}" for t, rec in out.items() if rec["error"]]
    notes += [
        f"{t}: {rec['jit']} Numba compilation(s) inside the timed region"
        for t, rec in out.items()
        if rec.get("jit")
    ]
    for tool, rec in out.items():
        if (
            ref
            and rec["check"] is not None
            and not np.allclose(rec["check"], out[ref]["check"], rtol=1e-5, atol=1e-12)
        ):
            rec["mismatch"] = True
            notes.append(f"{tool}: MISMATCH vs {ref}: {rec['check']} != {out[ref]['check']}")
    return notes


def describe(case: str, meta: dict) -> tuple[str, float, str]:
    """Title, work amount and unit for the rate column."""
    if case == "headers":
        return f"{meta['nhdu']} image HDUs (10x10 int16)", meta["nhdu"], "HDU/s"
    if case == "stamps":
        return (
            f"{meta['nstamps']} stamps 32x32 from {meta['shape']} float32",
            meta["nstamps"],
            "stamp/s",
        )
    dt = {-64: "float64", -32: "float32", 16: "int16 BSCALE/BZERO/BLANK"}[meta["bitpix"]]
    shape = "x".join(map(str, meta["shape"]))
    return f"{dt} {shape}, {meta['data_bytes'] / 1e6:.0f} MB", meta["data_bytes"] / 1e9, "GB/s"


def rows(case: str, res: dict) -> list[list[str]]:
    _, work, _ = describe(case, res["meta"])
    table = []
    for tool, rec in res["tools"].items():
        how = HOW.get((case, tool), HOW[tool])
        if not rec["times"]:
            table.append([tool, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", how])
            continue
        med = statistics.median(rec["times"])
        ok = "MISMATCH" if rec.get("mismatch") else "ok"
        table.append(
            [
                tool,
                f"{med:.4f}",
                f"{min(rec['times']):.4f}",
                f"{max(rec['times']):.4f}",
                f"{work / med:.3g}",
                f"{max(rec['rss']):.0f}",
                ok,
                how,
            ]
        )
    return table


def ratios(results: dict) -> tuple[list[str], list[list[str]]]:
    """dfits against every other tool; cases timed with ``dfits-plan`` get a second row."""
    others = [t for t in TOOLS if t not in ("dfits", "dfits-plan", "LIMIT")]
    head = ["case", *[f"dfits vs {t}" for t in others], "dfits % of LIMIT"]
    head.append("dask-native % of LIMIT")
    body = []
    for case, res in results.items():
        med = {t: statistics.median(r["times"]) for t, r in res["tools"].items() if r["times"]}
        for tool, label in (("dfits", case), ("dfits-plan", f"{case} (dfits-plan)")):
            if tool not in res["tools"]:
                continue
            d = med.get(tool)
            row = [label] + [f"{med[t] / d:.2f}x" if d and t in med else "n/a" for t in others]
            lim = f"{100 * med['LIMIT'] / d:.0f}%" if d and "LIMIT" in med else "n/a"
            floor = med.get("dask-native")
            nat = f"{100 * med['LIMIT'] / floor:.0f}%" if floor and "LIMIT" in med else "n/a"
            body.append([*row, lim, nat])
    return head, body


HEAD = ["tool", "median s", "min s", "max s", "rate", "peak RSS MB", "check", "how"]


def text_table(head: list[str], body: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *body]
    )


def md_table(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


def machine() -> list[str]:
    info = {
        ln.split(":")[0].strip(): ln.split(":", 1)[1].strip()
        for name in ("meminfo", "cpuinfo")
        for ln in reversed(Path(f"/proc/{name}").read_text().splitlines())
        if ":" in ln
    }
    cpu, ram = platform.processor() or info.get("model name", "?"), int(info["MemTotal"].split()[0])
    libs = []
    for name in ("numpy", "numba", "dask", "astropy", "fitsio", "dfits"):
        try:
            libs.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            libs.append(f"{name} missing")
    return [
        f"- CPU: {cpu}; `os.cpu_count()` = {os.cpu_count()}; RAM {ram / 2**20:.1f} GiB",
        f"- {platform.platform()}; Python {platform.python_version()}; {', '.join(libs)}",
        "- load average (1, 5, 15 min) when the report was written: "
        + ", ".join(f"{v:.2f}" for v in os.getloadavg()),
    ]


def markdown(results: dict, argv: list[str], started: str, methodology: str) -> str:
    """The Markdown report; ``methodology``: compare.py's docstring, whose part from the
    heading "Methodology" on says how the figures were measured (split since this module
    left compare.py, whose docstring it once read as its own)."""
    doc = methodology.split("Methodology", 1)[1].strip().replace("``", "`")
    out = [
        "# dfits performance",
        "",
        "## How measured",
        "",
        f"Command: `python benchmarks/compare.py {shlex.join(argv)}`  ",
        f"Date: {started}",
        "",
        *machine(),
        "",
        doc,
        "",
    ]
    for case, res in results.items():
        title, _, unit = describe(case, res["meta"])
        body = rows(case, res)
        out += [f"## {case}: {title}", "", md_table([*HEAD[:4], unit, *HEAD[5:]], body), ""]
        out += [f"- {n}" for n in res["notes"]] + ([""] if res["notes"] else [])
    out += [
        "## Ratios",
        "",
        "Speed-up of dfits = median(other) / median(dfits); "
        "% of LIMIT = median(LIMIT) / median(dfits).",
        "",
        md_table(*ratios(results)),
        "",
    ]
    return "\n".join(out)
