"""Tables, side by side: dfits against astropy, fitsio and a LIMIT, each tool in fresh processes.

    python benchmarks/tables.py --size 1GiB [--cases sum1,cols3,pandas,ascii,parquet,where]
        [--tools dfits,dfits-columns,dfits-dask,dfits-read,astropy,astropy-table,fitsio,LIMIT]
        [--ascii-rows 1000000]
        [--rounds 5] [--tmpdir /tmp/dfbench]

Files (``tables_files.py``), written once into ``--tmpdir`` and reused: a BINTABLE of
``--size`` bytes with 30 columns (10 each of E, D and J; 160-byte rows), and an ASCII TABLE of
``--ascii-rows`` rows of 10 numeric fields (4 ``I10``, 3 ``F13.6``, 3 ``E15.7``).
Cases (``tables_ops.py``):

* ``sum1``: one column (``D0``) summed. ``dfits``: ``hdu.column("D0").sum().compute()`` (the
  JIT-swap kernel on the strided field); ``astropy``: ``fits.open(memmap=True)``,
  ``data["D0"].sum()``; ``fitsio``: ``read(columns=["D0"])`` + numpy; ``LIMIT``: a Numba
  loop on 2 threads over the native unsigned view of the mapped field, swapping in registers.
* ``cols3``: three columns (``E0``, ``D0``, ``J0``) read and summed, the same tools plus
  ``astropy-table`` (``Table.read`` + numpy). ``dfits``: ``dask.compute(hdu.aggregate("sum",
  ["E0", "D0", "J0"]))`` (one pass over the rows for the three); ``dfits-columns``:
  ``dask.compute(*(hdu.column(n).sum() for n in names))`` (one pass per column).
* ``pandas``: the whole table to a pandas DataFrame. ``dfits``: ``hdu.to_pandas()`` (the
  numeric fields swapped out of each mapped span in one pass, on dask's thread count);
  ``dfits-dask``: ``to_dask_dataframe().compute()``; ``astropy-table``:
  ``Table.read(...).to_pandas()``;
  ``fitsio``: ``pd.DataFrame(fitsio.read(...))``; ``LIMIT``: numpy swaps each field of the
  map into a native array once, handed to pandas uncopied.
* ``ascii``: every field of the ASCII table parsed. ``dfits``: the 10 columns computed (the
  Numba parser); ``astropy``: ``fits.open`` and each field of ``.data``; ``fitsio``:
  ``read``. There is no LIMIT row: no parser faster than dfits' exact one was written.
* ``parquet``: ``to_dask_dataframe(["E0", "D0", "J0"]).to_parquet(...)`` (dfits only): peak
  RSS is the figure (bounded by chunk x threads, not by the table).
* ``vla_pandas``, ``vla_arrow``: a 2.5 M-row (``--catalogue-rows``), 14-column catalogue
  with a ``PE`` column to pandas (against the same without ``PE`` and astropy's
  ``Table.read().to_pandas()``) and to Arrow (``tables_vla.py``).
* ``where``: a row filter on two fields keeping 1 % of the rows, then three columns of the
  matches (``tables_where.py``): ``to_pandas(where=)`` and ``read(where=)`` against astropy's
  ``Table.read`` + mask, fitsio's ``where`` + ``read(rows=)`` and a one-pass numpy LIMIT.

Each tool runs ``--rounds`` times, each in a fresh process (``--worker``), right after the
parent reads the file into the page cache. Inside a process the operation first runs untimed
on a tiny twin file of 1,000 rows (imports, Numba compilation), then timed on the real one;
peak RSS (the process's own ``VmHWM``) covers both. The median time is reported, ``vs LIMIT`` =
median(LIMIT) / median(tool), and the check values of every tool must agree (rtol 1e-6;
float32 sums differ in their last bits).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the pieces live beside this driver
    sys.path.insert(0, _HERE)

from tables_files import (  # noqa: E402
    ASCII_FIELDS,
    COLUMN,
    NCOLS,
    THREE,
    ascii_row_bytes,
    data_offset,
    ensure,
    row_dtype,
    write_ascii_table,
    write_table,
)  # fmt: skip
from tables_ops import OPS as _OPS  # noqa: E402
from tables_vla import OPS as _VLA  # noqa: E402
from tables_vla import write_catalogue  # noqa: E402
from tables_where import OPS as _WHERE  # noqa: E402

__all__ = [
    "ASCII_FIELDS",
    "CASES",
    "COLUMN",
    "NCOLS",
    "OPS",
    "THREE",
    "data_offset",
    "main",
    "measure",
    "measure_all",
    "row_dtype",
    "run_case",
    "run_tool",
    "table_files",
    "write_ascii_table",
    "write_table",
]  # fmt: skip

#: case -> tool -> operation (tables_ops.py; the row filter case in tables_where.py)
OPS = {**_OPS, **_WHERE, **_VLA}
#: the file each case reads (the others: the binary table)
FILE_OF = {"ascii": "ascii", "vla_pandas": "catalogue", "vla_arrow": "catalogue"}
CASES = tuple(OPS)
TOOLS = ("dfits", "dfits-columns", "dfits-dask", "dfits-read", "dfits-novla", "astropy",
         "astropy-table", "fitsio", "LIMIT")  # fmt: skip


def run_case(case: str, tool: str, path: str, out: str) -> list[float]:
    """Check values of ``tool`` doing ``case`` on ``path`` (``out``: a scratch folder)."""
    return OPS[case][tool](path, out)


def run_tool(tool: str, path: str, out: str) -> float:
    """The one-column sum of ``tool`` (or, for ``parquet``, the rows written): asv's entry."""
    if tool == "parquet":
        return run_case("parquet", "dfits", path, out)[0]
    return run_case("sum1", tool, path, out)[0]


def worker(case: str, tool: str, path: str, warm: str, out: str) -> None:
    # the same operation on a tiny twin first (imports, Numba compilation, numpy's paths),
    # untimed; peak RSS covers both
    run_case(case, tool, warm, str(Path(out) / "warm"))
    start = time.perf_counter()
    value = run_case(case, tool, path, str(Path(out) / "timed"))
    wall = time.perf_counter() - start
    print(json.dumps({"tool": tool, "s": wall, "value": value, "rss": peak_rss()}))


def peak_rss() -> int:
    """This process's own peak RSS in bytes: VmHWM, not ``ru_maxrss``, which Linux keeps
    across exec, so a worker would count its parent's resident pages at fork."""
    try:
        with open("/proc/self/status") as fh:
            return int(next(x for x in fh if x.startswith("VmHWM:")).split()[1]) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def preread(path: Path, block: int = 64 << 20) -> None:
    """Bring ``path`` into the page cache (the figures are for cached files)."""
    buf = bytearray(block)
    with open(path, "rb", buffering=0) as fh:
        while fh.readinto(buf):
            pass


def measure(case: str, tool: str, path: Path, warm: Path, rounds: int, tmpdir: Path) -> dict:
    """Median time, peak RSS and check values of ``rounds`` fresh processes (or an error)."""
    times, rss, value = [], [], None
    for _ in range(rounds):
        preread(path)
        out = tempfile.mkdtemp(dir=tmpdir)
        cmd = [sys.executable, __file__, "--worker", case, tool, str(path), str(warm), out]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        finally:
            shutil.rmtree(out, ignore_errors=True)  # a Parquet copy per run would pile up
        if done.returncode:
            return {"tool": tool, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        res = json.loads(done.stdout.strip().splitlines()[-1])
        times.append(res["s"])
        rss.append(res["rss"])
        value = res["value"]
    return {"tool": tool, "median_s": statistics.median(times), "peak_rss": max(rss),
            "value": value}  # fmt: skip


#: rows of the warm-up twins
WARM_ROWS = 1000


def table_files(
    tmpdir: Path, size: int, ascii_rows: int, catalogue_rows: int = 0
) -> dict[str, Path]:
    """The binary table of ``size`` bytes and the ASCII table (and their tiny warm-up twins,
    ``*-warm``), written unless present; with ``catalogue_rows``, the catalogue too."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    nrows = max(size // row_dtype().itemsize, 1)
    extra = {}
    if catalogue_rows:
        rows = catalogue_rows
        extra = {
            "catalogue": ensure(tmpdir / f"catalogue-{rows}.fits", write_catalogue, rows),
            "catalogue-warm": ensure(tmpdir / f"catalogue-{WARM_ROWS}.fits", write_catalogue,
                                     WARM_ROWS),
        }  # fmt: skip
    return extra | {
        "binary": ensure(tmpdir / f"table-{nrows}.fits", write_table, nrows),
        "ascii": ensure(tmpdir / f"ascii-{ascii_rows}.fits", write_ascii_table, ascii_rows),
        "binary-warm": ensure(tmpdir / f"table-{WARM_ROWS}.fits", write_table, WARM_ROWS),
        "ascii-warm": ensure(tmpdir / f"ascii-{WARM_ROWS}.fits", write_ascii_table, WARM_ROWS),
    }


def _available(tool: str) -> bool:
    if tool != "fitsio":
        return True
    try:
        import fitsio  # noqa: F401
    except ImportError:
        return False
    return True


def measure_all(
    tmpdir: Path,
    size: int,
    rounds: int,
    cases=CASES,
    tools=TOOLS,
    ascii_rows: int = 10**6,
    catalogue_rows: int = 2_500_000,
) -> list[tuple[str, ...]]:
    """Every case x tool: rows of (case, tool, median s, vs LIMIT, peak RSS, check)."""
    catalogue = catalogue_rows if any(FILE_OF.get(c) == "catalogue" for c in cases) else 0
    paths = table_files(tmpdir, size, ascii_rows if "ascii" in cases else 1, catalogue)
    rows = []
    for case in cases:
        kind = FILE_OF.get(case, "binary")
        path, warm = paths[kind], paths[f"{kind}-warm"]
        got = [measure(case, t, path, warm, rounds, tmpdir)
               for t in OPS[case] if t in tools and _available(t)]  # fmt: skip
        rows += _rows(case, got)
    return rows


def _rows(case: str, got: list[dict]) -> list[tuple[str, ...]]:
    ok = [r for r in got if "error" not in r]
    limit = next((r["median_s"] for r in ok if r["tool"] == "LIMIT"), None)
    ref = ok[0]["value"] if ok else None
    rows = []
    for r in got:
        if "error" in r:
            rows.append((case, r["tool"], "failed", "", "", r["error"]))
            continue
        k = min(len(r["value"]), len(ref))  # a tool may check fewer values (dfits-novla)
        agree = np.allclose(r["value"][:k], ref[:k], rtol=1e-6)
        rows.append((
            case, r["tool"], f"{r['median_s']:.3f}",
            f"{limit / r['median_s']:.2f}x" if limit else "",
            f"{r['peak_rss'] / 2**20:.0f} MiB", "ok" if agree else f"MISMATCH {r['value']}",
        ))  # fmt: skip
    return rows


HEAD = ("case", "tool", "median s", "vs LIMIT", "peak RSS", "check")


def text_table(rows: list[tuple[str, ...]]) -> str:
    body = [HEAD, *rows]
    widths = [max(len(r[i]) for r in body) for i in range(len(HEAD))]
    return "\n".join("  ".join(f"{v:<{w}}" for v, w in zip(r, widths, strict=True)).rstrip()
                     for r in body)  # fmt: skip


def parse_size(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for suffix, mult in units.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * mult)
    return int(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("1GiB"))
    ap.add_argument("--tmpdir", type=Path, default=Path("/tmp/dfbench"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--ascii-rows", type=int, default=10**6)
    ap.add_argument("--catalogue-rows", type=int, default=2_500_000)
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if bad := [c for c in cases if c not in CASES]:
        ap.error(f"unknown case(s) {bad}; choose from {CASES}")
    tools = [t for t in args.tools.split(",") if t]
    nrows = max(args.size // row_dtype().itemsize, 1)
    print(f"binary: {nrows:,} rows x {row_dtype().itemsize} B; ascii: {args.ascii_rows:,} rows "
          f"x {ascii_row_bytes()} B; median of {args.rounds} fresh processes")  # fmt: skip
    rows = measure_all(args.tmpdir, args.size, args.rounds, cases, tools, args.ascii_rows,
                       args.catalogue_rows)  # fmt: skip
    print(text_table(rows))
    return 1 if any(r[-1] != "ok" for r in rows if r[2] != "failed") else 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
    else:
        sys.exit(main())
