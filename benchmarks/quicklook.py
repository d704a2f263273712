"""The quick look a notebook user gets of a tile-compressed image, against its full sum.

    python benchmarks/quicklook.py [--tmpdir /tmp/dfbench-tiles] [--scale full|small|tiny]
                                   [--rounds 5] [--files int16,dither2]

Issue 46's figure: "Quicklook of the 8k x 8k RICE image <= 1.5x its full sum". Two images
(full scale: 8192 x 8192), both RICE_1 with fpack's default row tiles:

``int16``
    int16 sky noise, N(1000, 30), written by astropy's ``CompImageHDU`` (the file of
    ``rice_decode.py``: ``rice-<side>-rows.fits.fz``);
``dither2``
    float32 N(100, 5) quantised with SUBTRACTIVE_DITHER_2 (q = 4), written by astropy as
    ``tiles.py`` writes its image (at full scale ``tiles-image-full.fits.fz``: with the
    default ``--tmpdir`` the file ``tiles.py`` already wrote is reused).

At full scale the quick look reads the int16 image ``::16`` (512 x 512 shown: one row tile in
16 decoded) and the float one ``::16`` too (its decoded bytes weigh twice as much).

Tools, each timed in a fresh process (``--one``) after the same steps on the small file of
the same kind (1024 x 1024, read decimated too: imports, kernels, matplotlib's fonts,
untimed), file opening included:

``quicklook``
    ``hdu.quicklook()`` (the public entry a notebook calls; dfits.jupyter's figure) and the
    PNG Jupyter makes of it (``IPython.core.pylabtools.print_figure(fig, "png",
    bbox_inches="tight")``, what matplotlib-inline's display formatter runs); the two phases
    are also shown apart. Check: the figure's image equals astropy's ``.section`` of the
    same strides (values, NaN where NaN), and the PNG is not blank.
``sum``
    ``hdu.data.sum().compute()`` (dask, its default threads). Check: equal to astropy's
    ``.data.sum()`` in float64 (relative 1e-6).

Rounds are interleaved (round 1 of every file and tool, then round 2, ...; the tools' order
rotates each round); each figure is the median of ``--rounds`` processes, with the median
peak RSS, and for each file the ratio quicklook / sum (issue 46: <= 1.5x).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _sibling(name: str) -> Any:
    """The sibling script ``<name>.py``, loaded without adding this folder to ``sys.path``."""
    import importlib.util

    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_{name}_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the int16 image's writer and the peak RSS reader
rice_decode = _sibling("rice_decode")

SIDES = {"full": 8192, "small": 2048, "tiny": 128}
#: the side of the images each process warms up on: large enough to be read decimated, so
#: the warm-up takes the same stepped route as the timed quick look
WARM_SIDE = 1024
FILES = ("int16", "dither2")
TOOLS = ("quicklook", "sum")


def write_files(tmpdir: Path, side: int) -> dict[str, Path]:
    """The two images, ``side`` x ``side`` (reused when present)."""
    from astropy.io import fits

    name = "tiles-image-full" if side == SIDES["full"] else f"quicklook-dither2-{side}"
    dither = tmpdir / f"{name}.fits.fz"
    if not dither.exists():
        # tiles.py's recipe for its DITHER_2 image
        data = np.random.default_rng(0).normal(100, 5, (side, side)).astype(np.float32)
        hdu = fits.CompImageHDU(
            data, compression_type="RICE_1", quantize_method=2, quantize_level=4.0
        )
        tmpdir.mkdir(parents=True, exist_ok=True)
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(dither, overwrite=True)
    return {"int16": rice_decode.write_file(tmpdir, side, "rows"), "dither2": dither}


def _quicklook(path: Path) -> dict[str, Any]:
    """Open, ``hdu.quicklook()``, the PNG Jupyter shows: times of each phase."""
    from IPython.core.pylabtools import print_figure

    import dfits

    t0 = time.perf_counter()
    with dfits.open(path) as f:
        fig = f[1].quicklook()
    t1 = time.perf_counter()
    png = print_figure(fig, "png", bbox_inches="tight")
    t2 = time.perf_counter()
    return {"s": t2 - t0, "figure": t1 - t0, "png": t2 - t1, "fig": fig, "bytes": png}


def _sum(path: Path) -> dict[str, Any]:
    import dfits

    t0 = time.perf_counter()
    with dfits.open(path) as f:
        value = f[1].data.sum().compute()
    return {"s": time.perf_counter() - t0, "value": float(value)}


def _check(tool: str, path: Path, got: dict[str, Any]) -> bool:
    """The result against astropy's (after timing; see the module docstring)."""
    from astropy.io import fits

    with fits.open(path) as hl:
        if tool == "sum":
            want = float(hl[1].data.sum(dtype=np.float64))
            return bool(np.isclose(got["value"], want, rtol=1e-6))
        import matplotlib.image

        fig = got["fig"]
        image = np.asarray(fig.axes[0].images[0].get_array().filled(np.nan))
        # the strides the figure's note names: "... (section[::16, ::16]) ..."
        note = " ".join(t.get_text() for t in fig.texts)
        found = re.search(r"section\[([^\]]*)\]", note)
        steps = [int(s.strip()[2:]) for s in found.group(1).split(",")] if found else [1, 1]
        want = hl[1].section[tuple(slice(None, None, s) for s in steps)]
        pixels = matplotlib.image.imread(io.BytesIO(got["bytes"]), format="png")
        same = want.shape == image.shape and np.array_equal(want, image, equal_nan=True)
        return same and float(pixels.std()) > 0


def run_one(tool: str, path: Path, warm: Path) -> dict[str, Any]:
    """Time ``tool`` on ``path`` once in this fresh process, after it ran on ``warm``."""
    op = _quicklook if tool == "quicklook" else _sum
    op(warm)
    got = op(path)
    out = {k: v for k, v in got.items() if isinstance(v, float)}
    out["peak_rss"] = rice_decode._peak()
    out["ok"] = _check(tool, path, got)
    return out


def measure(
    tmpdir: Path, scale: str, rounds: int, files: tuple[str, ...] = FILES
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every file x tool, ``rounds`` fresh processes each, rounds interleaved."""
    paths, warm = write_files(tmpdir, SIDES[scale]), write_files(tmpdir, WARM_SIDE)
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in range(rounds):
        for key in files:
            for tool in TOOLS[r % 2 :] + TOOLS[: r % 2]:
                cmd = [sys.executable, __file__, "--one", tool, str(paths[key]), str(warm[key])]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode:
                    error = (res.stderr.strip().splitlines() or ["?"])[-1]
                    got.setdefault((key, tool), []).append({"error": error})
                    continue
                got.setdefault((key, tool), []).append(json.loads(res.stdout.splitlines()[-1]))
    return got


def report(got: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    """One line per file and tool (median time, phases, peak RSS, check), then the ratios."""
    lines, med = [], {}
    for (key, tool), runs in got.items():
        ok = [r for r in runs if "error" not in r]
        if len(ok) < len(runs):
            lines.append(f"{key:8} {tool:10} failed: {next(r for r in runs if 'error' in r)}")
        if not ok:
            continue
        med[key, tool] = statistics.median(r["s"] for r in ok)
        text = f"{key:8} {tool:10} {med[key, tool] * 1e3:8.1f} ms"
        if tool == "quicklook":
            figure = statistics.median(r["figure"] for r in ok)
            png = statistics.median(r["png"] for r in ok)
            text += f" (read + figure {figure * 1e3:.1f} ms, PNG {png * 1e3:.1f} ms)"
        rss = statistics.median(r["peak_rss"] for r in ok) / 2**20
        check = "ok" if all(r["ok"] for r in ok) else "DIFFERS FROM ASTROPY"
        lines.append(f"{text}, peak RSS {rss:.0f} MiB, {check}")
    for key in dict.fromkeys(k for k, _ in got):
        if (key, "quicklook") in med and (key, "sum") in med:
            ratio = med[key, "quicklook"] / med[key, "sum"]
            lines.append(f"- {key}: quicklook takes {ratio:.2f}x its full sum (issue 46: <= 1.5x)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tmpdir", type=Path, default=Path("/tmp/dfbench-tiles"))
    ap.add_argument("--scale", choices=SIDES, default="full")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", default=",".join(FILES), help=f"any of {','.join(FILES)}")
    ap.add_argument("--one", nargs=3, metavar=("TOOL", "PATH", "WARM"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        tool, path, warm = args.one
        print(json.dumps(run_one(tool, Path(path), Path(warm))))
        return 0
    files = tuple(f.strip() for f in args.files.split(",") if f.strip())
    if unknown := sorted(set(files) - set(FILES)):
        ap.error(f"unknown file(s) {unknown}; choose from {FILES}")
    print(f"quicklook against the full sum, scale {args.scale}, "
          f"median of {args.rounds} fresh processes")  # fmt: skip
    print(report(measure(args.tmpdir, args.scale, args.rounds, files)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
