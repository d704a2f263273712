"""One column of a wide BINTABLE summed: dfits vs astropy vs fitsio vs a numpy LIMIT; and a
table converted to Parquet through dfits' dask DataFrame, with each tool's peak RSS.

    python benchmarks/tables.py --size 1GiB [--tmpdir /tmp/dfbench] [--rounds 5]

The table has 30 columns (10 each of E, D and J; 160-byte rows), written once into
``--tmpdir`` and read from the page cache (a warm-up read first). Each tool runs ``--rounds``
times, each in a fresh process (so peak RSS is its own); the median time is reported.

* ``dfits``: ``hdu.column("D0").sum().compute()`` (the JIT-swap kernel on the strided field);
* ``astropy``: ``fits.open(memmap=True)``, ``data["D0"].sum()``;
* ``fitsio``: ``fitsio.read(path, ext=1, columns=["D0"]).sum()`` (skipped if not installed);
* ``LIMIT``: numpy on the mmap: a strided big-endian ``>f8`` view of the field, ``.sum()``;
* ``parquet``: ``hdu.to_dask_dataframe(["E0", "D0", "J0"]).to_parquet(...)``: peak RSS is
  the figure (it must stay bounded by chunk x threads, not grow with the table).
"""

from __future__ import annotations

import argparse
import json
import mmap
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NCOLS = 10  # of each of E, D, J
COLUMN = "D0"


def row_dtype() -> np.dtype:
    names = [f"{c}{i}" for c in "EDJ" for i in range(NCOLS)]
    types = [">f4"] * NCOLS + [">f8"] * NCOLS + [">i4"] * NCOLS
    return np.dtype(list(zip(names, types, strict=True)))


def _card(key: str, value: object) -> bytes:
    text = f"'{value:<8}'" if isinstance(value, str) else str(value)
    return f"{key:<8}= {text:>20}".ljust(80).encode()


def write_table(path: Path, nrows: int, block: int = 1 << 16) -> None:
    """A 30-column BINTABLE of ``nrows`` rows, written block by block (bounded memory)."""
    dt = row_dtype()
    fmt = {">f4": "E", ">f8": "D", ">i4": "J"}
    cards = [b"SIMPLE  =                    T".ljust(80), _card("BITPIX", 8), _card("NAXIS", 0),
             b"END".ljust(80)]  # fmt: skip
    head = [
        _card("XTENSION", "BINTABLE"), _card("BITPIX", 8), _card("NAXIS", 2),
        _card("NAXIS1", dt.itemsize), _card("NAXIS2", nrows), _card("PCOUNT", 0),
        _card("GCOUNT", 1), _card("TFIELDS", len(dt.names)),
    ]  # fmt: skip
    for i, name in enumerate(dt.names, 1):
        head += [_card(f"TTYPE{i}", name), _card(f"TFORM{i}", fmt[dt[name].str])]
    head.append(b"END".ljust(80))
    rng = np.random.default_rng(7)
    with open(path, "wb") as out:
        for blob in (b"".join(cards), b"".join(head)):
            out.write(blob + b" " * (-len(blob) % 2880))
        for first in range(0, nrows, block):
            n = min(block, nrows - first)
            rows = np.empty(n, dt)
            for name in dt.names:
                kind = dt[name].str
                rows[name] = rng.integers(-1000, 1000, n) if kind == ">i4" else rng.random(n)
            out.write(rows.tobytes())
        out.write(b"\0" * (-nrows * dt.itemsize % 2880))


def data_offset() -> int:
    """Where :func:`write_table`'s rows start: a one-block primary, then the table header."""
    ncards = 8 + 2 * len(row_dtype().names) + 1
    return 2880 + -(-ncards * 80 // 2880) * 2880


def _limit(path: str) -> float:
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    dt = row_dtype()
    offset = data_offset()
    with open(path, "rb") as fh:  # NAXIS2 from the header: the padding is not rows
        fh.seek(2880)
        head = fh.read(offset - 2880)
    at = head.index(b"NAXIS2  =")
    nrows = int(head[at + 10 : at + 30])
    field = np.ndarray(nrows, ">f8", mm, offset + dt.fields[COLUMN][1], dt.itemsize)
    return float(field.sum())


def run_tool(tool: str, path: str, out: str) -> float:
    """The tool's column sum (or, for ``parquet``, the rows written)."""
    if tool == "dfits":
        import dfits

        return float(dfits.open(path)[1].column(COLUMN).sum().compute())
    if tool == "astropy":
        from astropy.io import fits

        with fits.open(path, memmap=True) as hl:
            return float(hl[1].data[COLUMN].sum())
    if tool == "fitsio":
        import fitsio

        return float(fitsio.read(path, ext=1, columns=[COLUMN])[COLUMN].sum())
    if tool == "LIMIT":
        return _limit(path)
    if tool == "parquet":
        import dfits

        frame = dfits.open(path)[1].to_dask_dataframe(["E0", COLUMN, "J0"])
        frame.to_parquet(out, write_index=False)
        return float(len(frame))
    raise ValueError(f"unknown tool {tool!r}")


def worker(tool: str, path: str, out: str) -> None:
    # a first call imports and compiles (dfits' kernels, numpy's paths): only the second is
    # timed; peak RSS covers both
    run_tool(tool, path, str(Path(out) / "warm"))
    start = time.perf_counter()
    value = run_tool(tool, path, str(Path(out) / "timed"))
    wall = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"tool": tool, "s": wall, "value": value, "rss": rss}))


def measure(tool: str, path: Path, rounds: int, tmpdir: Path) -> dict | None:
    times, rss, value = [], [], None
    for k in range(rounds + 1):  # the first is the warm-up (page cache)
        out = tempfile.mkdtemp(dir=tmpdir)
        cmd = [sys.executable, __file__, "--worker", tool, str(path), out]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode:
            print(f"{tool}: failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return None
        res = json.loads(done.stdout.strip().splitlines()[-1])
        if k:
            times.append(res["s"])
            rss.append(res["rss"])
        value = res["value"]
    return {
        "tool": tool,
        "median_s": statistics.median(times),
        "peak_rss": max(rss),
        "value": value,
    }


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
    ap.add_argument("--tools", default="dfits,astropy,fitsio,LIMIT,parquet")
    args = ap.parse_args(argv)
    args.tmpdir.mkdir(parents=True, exist_ok=True)
    nrows = max(args.size // row_dtype().itemsize, 1)
    path = args.tmpdir / f"table-{nrows}.fits"
    if not path.exists():
        part = path.with_suffix(".part")
        write_table(part, nrows)
        part.replace(path)
    print(f"{path}: {nrows:,} rows x {row_dtype().itemsize} B, sum of column {COLUMN}")
    results = []
    for tool in args.tools.split(","):
        if tool == "fitsio":
            try:
                import fitsio  # noqa: F401
            except ImportError:
                print("fitsio: not installed, skipped")
                continue
        res = measure(tool, path, args.rounds, args.tmpdir)
        if res is not None:
            results.append(res)
    limit = next((r["median_s"] for r in results if r["tool"] == "LIMIT"), None)
    print(f"{'tool':<8} {'median s':>9} {'vs LIMIT':>9} {'peak RSS':>10}  value")
    for r in results:
        ratio = f"{limit / r['median_s']:.2f}x" if limit else ""
        print(f"{r['tool']:<8} {r['median_s']:>9.3f} {ratio:>9} "
              f"{r['peak_rss'] / 2**20:>8.0f}Mi  {r['value']:.6g}")  # fmt: skip
    sums = {r["tool"]: r["value"] for r in results if r["tool"] != "parquet"}
    if sums and not np.allclose(list(sums.values()), next(iter(sums.values())), rtol=1e-9):
        print(f"MISMATCH: {sums}")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:])
    else:
        sys.exit(main())
