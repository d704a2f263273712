"""Side-by-side timing of dfits against the usual ways of reducing big FITS files.

    python benchmarks/compare.py --size 2GiB [--runs 5] [--cases sum,nanmean16,moment0,spectrum,
        stamps,headers] [--cache large|huge|small|asis] [--markdown docs/performance.md]
        [--tmpdir DIR] [--tools LIMIT,dfits,...]

The cases ``cold_start`` (``cold_start.py``), ``tiles`` (``tiles.py``, ``--tiles-scale``) and
``tables`` (``tables.py``'s one-column sum of a 30-column BINTABLE of ``--tables-size``,
default 1 GiB: dfits, astropy, fitsio, LIMIT) run their own scripts' matrices.
The pieces: ``compare_setup.py`` (cases, tools, files, page cache), ``compare_limit.py``
(LIMIT kernels), ``compare_ops.py`` (each tool's timed operation), ``compare_report.py``
(cross-checks and tables); this file is the driver and re-exports their names.

Cases (``mean``, ``std``, ``nanmoment16``, ``stdmap``, ``maskedmoment0``, ``maskedmoment16``
and ``peakmap`` exist too, outside the default set):
``sum``/``mean``/``std`` of a float64 2-D image of ``--size`` bytes; ``nanmean16`` of a
BITPIX=16 image of size/4 (BSCALE=0.5, BZERO=10, BLANK=-32768 on ~1% of pixels); ``moment0``
(axis 0) and ``spectrum`` (axes 1,2) sums of a float32 cube (256, ny, nx) of size/2;
``nanmoment16``: ``nansum(axis=0)`` (a moment-0 map skipping BLANKs) of an int16 cube
(256, ny, nx) of size/4 with the same cards; ``stdmap``: ``std(axis=0)`` (a noise map) of the
float32 cube; ``maskedmoment0``: ``where(x > 0.8, x, 0).sum(axis=0)`` (a thresholded moment-0
map; the cube's values are uniform in [0, 1)); ``maskedmoment16``:
``nansum(where(x > 12810, x, nan), axis=0)`` of the int16 cube (xarray's
``where(x > t).sum(dim)``; a fifth of its values are above); ``peakmap``: ``argmax(axis=0)``
of the float32 cube (the channel of each pixel's peak); ``stamps``: 1000 random 32x32
cut-outs (fixed seed) from a 4000x4000 float32 image; ``headers``: every header of a file of
10,000 10x10 int16 HDUs.

Methodology

* Files are generated once (big-endian data written in 32 MiB slabs) and reused from
  ``--tmpdir`` when one of the same size and layout is there.
* Every timed run is a fresh ``python`` subprocess (``compare.py --worker CASE TOOL PATH WARM``).
  It first runs the same operation on a tiny file of the same type (imports, Numba compilation,
  dask start-up are not timed; dask tools plan 8 KiB chunks there, so that combine steps and
  their kernels run too), then times only the operation on the real file with
  ``time.perf_counter`` and reports it, its peak RSS (``ru_maxrss``: the whole process,
  interpreter included; touched pages of memory-mapped files count too) and result values.
* Between the warm-up and the timed operation the worker runs a full garbage collection
  (untimed), so that a generation-2 pass triggered by the warm-up's garbage does not land in
  the timed region (it took ~90 ms on this VM and depended on the warm-up's exact size).
* Right before each run the parent drops the file from the page cache and reads it whole in
  64 MiB blocks, so every run starts from a warm page cache (this VM evicts idle cache after
  ~60 s) in a known state. ``--cache large`` (default) reads it sequentially, which on kernels
  with large folios (Linux 6.x with ext4/xfs here) caches it in 2 MiB folios that map with one
  fault each, except the first tens of MiB, which readahead still caches in smaller folios;
  ``--cache huge`` faults it in through a ``MADV_HUGEPAGE`` map, which caches all of it in
  2 MiB folios; ``--cache small`` reads it with readahead off, which caches 4 KiB pages that
  map 16 to a fault, as older kernels and other file systems do; ``--cache asis`` only reads it.
  The state matters for every tool that maps the file (LIMIT, astropy-memmap, dfits), not
  for those that copy it with ``read``; each table notes the share of the file that mapped
  as 2 MiB pages after the last round.
* Runs are interleaved: round r runs every tool once, in an order rotated by r, so drift of the
  machine hits all tools alike. Tables give median/min/max seconds over the rounds, the rate at
  the median (data bytes / median; stamps/s, HDUs/s) and the largest peak RSS.
* ``LIMIT`` is a hand-written Numba kernel (``parallel``, ``nogil``, ``fastmath`` reassoc/nsz,
  ``prange`` over blocks) on a native unsigned ``np.memmap`` of the data, byte-swapping in
  registers with the ``dfits.kernels._swap`` intrinsics; it is told the layout and parses
  nothing. ``numpy-native`` reduces an in-memory native array loaded before timing (for
  ``nanmean16``: the physical float32 values with NaN for blanks, twice the stored size).
  ``numpy-rawint`` (``nanmean16`` only) is hand-tuned numpy on the stored integers, read
  from the file like the other tools: an int64 sum less BLANK times the count of BLANKs,
  scaled once (see ``rawint_nanmean``).
* astropy 8 refuses ``memmap=True`` on scaled data, so the memmap tools use ``fits.open``'s
  default (memory-mapped where astropy can, converted in memory where it cannot).
* Results are cross-checked against ``numpy-native`` (else ``astropy-eager``, else ``LIMIT``)
  at rtol 1e-5; failures (``n/a``) and mismatches are listed under each table.
* ``dfits`` reduces ``hdu.data``, whose chunks follow the file (whole planes of a cube).
  ``dfits-plan`` (cube cases along the spectral axis only) reduces
  ``hdu.to_dask(reduce_axis=0)``, the deeper chunks that ``da.fits.moment`` and the CLI's
  ``moment`` plan; the ratio table gives it a row of its own.
* ``dask-native`` runs the same dask reduction as ``dfits`` over the ``numpy-native``
  array, in the chunks ``dfits`` uses: no file, no byte swap, no decoding, nothing of dfits'
  in the tasks; the array is made untimed (dask would otherwise hash all of it). Where
  numpy's chunk function is as fast as a kernel (sums of native floats: ``sum``, ``mean``,
  ``moment0``, ``spectrum``), it shows what dask's own machinery (graph, scheduler, tree
  reduction, fresh partial maps) leaves of LIMIT's speed on this host: a floor for any path
  through the plain dask API. Elsewhere numpy's chunk functions (``nanmean``, ``var``) are
  the slower part.
* Ratios: ``dfits vs X`` = median(X) / median(dfits), above 1 when dfits is faster;
  ``% of LIMIT`` = median(LIMIT) / median(dfits).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the pieces live beside this driver, which asv and the other scripts import by its path
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from compare_limit import limit_kernels  # noqa: E402
from compare_ops import (  # noqa: E402
    check_values,
    dask_graph,
    dask_reduce,
    fitsio_read,
    headers_op,
    native,
    numpy_reduce,
    rawint_nanmean,
    reduction_op,
    scan_headers,
    small_chunks,
    stamps_op,
)  # fmt: skip
from compare_report import (  # noqa: E402
    HEAD,
    cross_check,
    describe,
    machine,
    markdown,
    md_table,
    ratios,
    rows,
    text_table,
)  # fmt: skip
from compare_setup import (  # noqa: E402
    ALL_CASES,
    BLOCK,
    CACHE_STATES,
    COLD_CASE,
    COLD_SIZE,
    DEFAULT_CASES,
    FILE_OF,
    HOW,
    MARK,
    MASK16_THRESHOLD,
    MASK_THRESHOLD,
    NOT_APPLICABLE,
    PLANNED,
    REDUCTIONS,
    SLAB,
    STAMP,
    TABLES_CASE,
    TILES_CASE,
    TOOLS,
    case_files,
    ensure_file,
    fill,
    header_bytes,
    layout,
    parse_size,
    pmd_share,
    preread,
    write_headers,
    write_image,
)  # fmt: skip

# what the other scripts, asv and the tests use of compare.py, wherever it now lives
__all__ = [
    "ALL_CASES", "BLOCK", "CACHE_STATES", "COLD_CASE", "COLD_SIZE", "DEFAULT_CASES", "FILE_OF",
    "HEAD", "HOW", "MARK", "MASK16_THRESHOLD", "MASK_THRESHOLD", "NOT_APPLICABLE", "PLANNED",
    "REDUCTIONS", "SLAB", "STAMP", "TABLES_CASE", "TILES_CASE", "TOOLS", "case_files",
    "check_values", "cross_check", "dask_graph", "dask_reduce", "describe", "ensure_file", "fill",
    "fitsio_read", "header_bytes", "headers_op", "layout", "limit_kernels", "machine", "main",
    "markdown", "md_table", "measure", "native", "numpy_reduce", "parse_size", "pmd_share",
    "preread", "ratios", "rawint_nanmean", "reduction_op", "rows", "run_one", "scan_headers",
    "small_chunks", "stamps_op", "text_table", "worker", "write_headers", "write_image",
]  # fmt: skip


def worker(case: str, tool: str, path: str, warm: str) -> None:
    make = {"stamps": stamps_op, "headers": headers_op}.get(case)
    build = make or (lambda t, p, m: reduction_op(case, t, p, m))
    for p in (warm, path):
        op = build(tool, p, json.loads(Path(p).with_suffix(".json").read_text()))
        if p == warm and tool in ("dfits", "dfits-plan", "dask-from-array"):
            op = small_chunks(op)
        if p == warm and tool == "dfits-plan":
            # the plan keeps the small cube's channels in one chunk, so its combine steps
            # would compile on the big one: the file-slab op runs them here too
            meta = json.loads(Path(p).with_suffix(".json").read_text())
            small_chunks(build("dfits", p, meta))()
        if p == path:
            # a full collection now, untimed: the warm-up's garbage (Numba compilations leave
            # ~200,000 objects) must not trigger a generation-2 pass (~90 ms here) inside the
            # timed region, which it did for some warm-ups and not others
            gc.collect()
        spy = contextlib.nullcontext()
        if "numba" in sys.modules:  # count JIT compilations that land inside the timed region
            from numba.core import event

            spy = event.install_recorder("numba:compile")
        with spy as compiled:
            t0 = time.perf_counter()
            res = op()
            dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    jit = len(compiled.buffer) // 2 if compiled else 0
    print(
        MARK
        + json.dumps({"seconds": dt, "rss_mb": rss, "check": check_values(case, res), "jit": jit})
    )


def run_one(case: str, tool: str, path: Path, warm: Path, timeout: float, cache: str) -> dict:
    preread(path, cache)
    cmd = [sys.executable, __file__, "--worker", case, tool, str(path), str(warm)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return {"error": lines[-1] if lines else f"exit status {proc.returncode}"}


def measure(
    case: str,
    tmpdir: Path,
    size: int,
    runs: int,
    timeout: float,
    cache: str,
    only: tuple[str, ...] = TOOLS,
) -> dict:
    path, warm = case_files(case, size, tmpdir)
    meta = json.loads(path.with_suffix(".json").read_text())
    tools = [t for t in TOOLS if (case, t) not in NOT_APPLICABLE and t in only]
    out = {t: {"times": [], "rss": [], "check": None, "error": None} for t in tools}
    for r in range(runs):
        for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
            rec = out[tool]
            if rec["error"]:
                continue
            got = run_one(case, tool, path, warm, timeout, cache)
            if "error" in got:
                rec["error"] = got["error"]
                continue
            rec["times"].append(got["seconds"])
            rec["rss"].append(got["rss_mb"])
            rec["check"] = got["check"]
            rec["jit"] = max(rec.get("jit", 0), got["jit"])
            print(
                f"  {case:10s} round {r + 1}/{runs} {tool:16s} {got['seconds']:9.4f} s",
                file=sys.stderr,
                flush=True,
            )
    preread(path, cache)
    # in a child: touching the whole map raises this process's peak RSS, which Linux passes
    # on to every worker forked after it and would inflate their ``ru_maxrss``
    probe = [sys.executable, __file__, "--pmd-share", str(path)]
    said = subprocess.run(probe, capture_output=True, text=True, timeout=timeout).stdout.split()
    share = float(said[-1]) if said and said[-1] != "None" else None
    notes = (
        []
        if share is None
        else [f"page cache ({cache}): {share:.0%} of the file maps as 2 MiB pages"]
    )
    return {"meta": meta, "tools": out, "notes": notes + cross_check(out)}


def cold_start_case(tmpdir: Path, runs: int) -> list[str]:
    """Run ``cold_start.py``'s measurement (medians of ``runs`` fresh processes), print it and
    return it as Markdown lines."""
    from cold_start import measure as cold_measure

    tmpdir.mkdir(parents=True, exist_ok=True)
    res = cold_measure(tmpdir, COLD_SIZE, runs, with_warm=True)
    body = [[key, f"{value:.2f}"] for key, value in res.items()]
    head = ["cold_start (fresh process; medians)", "s"]
    print(f"\n== {COLD_CASE}: float32 cube of {COLD_SIZE / 1e6:.0f} MB, dfits stats small file ==")
    print(text_table(head, body))
    return ["", f"## {COLD_CASE}", "", md_table(head, body)]


def tiles_case(tmpdir: Path, scale: str, runs: int) -> list[str]:
    """Run ``tiles.py``'s matrix (each tool in its own process), print it and return it as
    Markdown lines."""
    from tiles import measure as tiles_measure

    body = [list(row) for row in tiles_measure(tmpdir, scale, runs)]
    head = ["case", "tool", f"median of {runs}, peak RSS"]
    print(f"\n== {TILES_CASE}: tile-compressed images, scale {scale} ==")
    print(text_table(head, body))
    return ["", f"## {TILES_CASE} ({scale})", "", md_table(head, body)]


def tables_case(tmpdir: Path, size: int, runs: int) -> list[str]:
    """Run ``tables.py``'s one-column sum (each tool in fresh processes), print it and return
    it as Markdown lines."""
    from tables import HEAD as TABLES_HEAD
    from tables import measure_all as tables_measure

    body = [list(row) for row in tables_measure(tmpdir, size, runs, ("sum1",))]
    head = [*TABLES_HEAD[:2], f"median s of {runs}", *TABLES_HEAD[3:]]
    print(f"\n== {TABLES_CASE}: one column of a 30-column BINTABLE of {size / 2**30:.2f} GiB ==")
    print(text_table(head, body))
    return ["", f"## {TABLES_CASE} ({size / 2**30:.2f} GiB)", "", md_table(head, body)]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker(*argv[1:5])
        return 0
    if argv[:1] == ["--pmd-share"]:
        print(pmd_share(Path(argv[1])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="2GiB", type=parse_size, help="e.g. 64MiB, 2GiB")
    ap.add_argument("--runs", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--cases", default=DEFAULT_CASES, help=f"any of {','.join(ALL_CASES)}")
    ap.add_argument("--markdown", type=Path, help="also write a Markdown report here")
    ap.add_argument("--tmpdir", type=Path, help="where test files live (reused if present)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per worker run")
    ap.add_argument("--tools", default=",".join(TOOLS), help="a subset of the tools to run")
    ap.add_argument("--tiles-scale", default="full", choices=("full", "small", "tiny"))
    ap.add_argument("--tables-size", default="1GiB", type=parse_size, help="the tables case's")
    ap.add_argument(
        "--cache",
        choices=sorted(CACHE_STATES),
        default="large",
        help="page-cache state before each run: "
        + "; ".join(f"{k}: {v}" for k, v in CACHE_STATES.items()),
    )
    args = ap.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    extra = (COLD_CASE, TILES_CASE, TABLES_CASE)
    bad = [c for c in cases if c not in (*ALL_CASES, *extra)]
    if bad:
        ap.error(f"unknown case(s) {bad}; choose from {(*ALL_CASES, *extra)}")
    cold, tiled, tabled = COLD_CASE in cases, TILES_CASE in cases, TABLES_CASE in cases
    cases = [c for c in cases if c not in extra]
    only = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    if unknown := [t for t in only if t not in TOOLS]:
        ap.error(f"unknown tool(s) {unknown}; choose from {TOOLS}")
    tmpdir = args.tmpdir or Path(tempfile.gettempdir()) / "dfits-bench"
    tmpdir.mkdir(parents=True, exist_ok=True)
    size, started = args.size, datetime.datetime.now().isoformat(timespec="seconds")
    results = {
        c: measure(c, tmpdir, size, args.runs, args.timeout, args.cache, only) for c in cases
    }
    cold_lines = cold_start_case(tmpdir / "cold", args.runs) if cold else []
    if tiled:
        cold_lines += tiles_case(tmpdir / "tiles", args.tiles_scale, args.runs)
    if tabled:
        cold_lines += tables_case(tmpdir / "tables", args.tables_size, args.runs)
    for case, res in results.items():
        title, _, unit = describe(case, res["meta"])
        print(f"\n== {case}: {title} ==")
        print(text_table([*HEAD[:4], unit, *HEAD[5:]], rows(case, res)))
        print("\n".join(f"  * {n}" for n in res["notes"]))
    if results:
        print("\n== ratios ==\n" + text_table(*ratios(results)))
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        text = markdown(results, argv, started, __doc__) if results else ""
        args.markdown.write_text(text + "".join(f"{line}\n" for line in cold_lines))
        print(f"\nwrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
