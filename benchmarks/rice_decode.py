"""Per-thread RICE_1 decode, tile by tile: dfits' decoder against cfitsio's (imagecodecs).

    python benchmarks/rice_decode.py [--tmpdir /tmp/dfbench-rice] [--side 8192]
                                     [--tile rows|64] [--rounds 5] [--tools ...]
                                     [--write-only]

Issue 46's figure: "Per-thread Rice decode of the 8k x 8k int16 image, tile by tile: >= 1.0x
cfitsio's rcomp_decode (imagecodecs)". The image (``--side`` squared, int16 sky noise,
N(1000, 30) as ``tiles.py`` draws it) is written once into ``--tmpdir`` by astropy's
``CompImageHDU`` (RICE_1, BLOCKSIZE 32, BYTEPIX 2) with fpack's default tiles, one row each
(``--tile rows``), or 64 x 64 tiles (``--tile 64``); a JSON file beside it keeps the CRC-32 of
the image's values in tile order (each tile's pixels, C order, tile after tile), the check.

Each measurement is a fresh process (``--one``): it reads the file's tile descriptors (dfits'
tile reader) and its whole heap into memory (untimed: only decoding is timed), warms up on the
small file of the same tiling (kernels loaded, untimed), then decodes every tile of the image
once per case, on one thread, timed:

``into``
    every tile decoded into its place in one preallocated array of the image's values, in
    tile order (no allocation timed);
``fresh``
    every tile (or group) decoded into a new array of its own, as a one-shot call returns it.

Tools:

``dfits``
    one call per tile: ``kernels.rice._decode_kernel`` (the bounds-checked kernel, into) and
    ``kernels.rice.rice_decode`` (its public wrapper, fresh; what ``kernels.codecs`` calls);
``dfits-group``
    one ``kernels.tilegroup.rice_group`` call per group of tiles, the groups as the tile reader
    makes them (each chunk of ``hdu.data``'s default plan, in ``tiles.places.BATCH`` bytes of
    compressed tiles at most);
``imagecodecs``
    ``imagecodecs.rcomp_decode`` per tile (cfitsio's ``fits_rdecomp``), with ``out=`` (into)
    or without (fresh).

Rounds are interleaved (round 1 of every tool, then round 2, ...; the order rotates each
round); each figure is the median of ``--rounds`` processes: ns per pixel, the time, the
speed-up against imagecodecs (its time / the tool's: issue 46 asks >= 1.0x), the median peak
RSS of the case (``VmHWM``, reset before each case), and the check (the decoded values' CRC-32
equals the written image's).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

TOOLS = ("dfits", "dfits-group", "imagecodecs")
CASES = ("into", "fresh")
#: the side of the small image each process warms up on
WARM_SIDE = 128


def tile_shape(tile: str, side: int) -> tuple[int, int]:
    """``rows``: fpack's default, one row per tile; else square tiles of that side."""
    return (1, side) if tile == "rows" else (int(tile), int(tile))


def tile_order(data: np.ndarray, tile: tuple[int, int]) -> np.ndarray:
    """The image's values tile after tile (grid in C order), each tile's pixels in C order:
    the order every tool decodes into."""
    ny, nx = data.shape
    parts = [
        data[y : y + tile[0], x : x + tile[1]].ravel()
        for y in range(0, ny, tile[0])
        for x in range(0, nx, tile[1])
    ]
    return np.concatenate(parts)


def crc(values: np.ndarray) -> int:
    """CRC-32 of the values' native bytes (no copy of a contiguous array)."""
    return zlib.crc32(memoryview(np.ascontiguousarray(values)).cast("B"))


def write_file(tmpdir: Path, side: int, tile: str) -> Path:
    """The RICE_1 int16 image (astropy ``CompImageHDU``) and its tile-order CRC, reused."""
    from astropy.io import fits

    tmpdir.mkdir(parents=True, exist_ok=True)
    path = tmpdir / f"rice-{side}-{tile}.fits.fz"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return path
    rng = np.random.default_rng(0)
    data = np.empty((side, side), np.int16)
    for k in range(0, side, 512):  # a slab at a time: never the whole image in float64
        slab = data[k : k + 512]
        slab[...] = rng.normal(1000, 30, slab.shape)
    shape = tile_shape(tile, side)
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=shape)
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path, overwrite=True)
    info = {"crc": crc(tile_order(data, shape)), "npix": data.size, "writer": "astropy"}
    meta.write_text(json.dumps(info))
    return path


def load(path: Path) -> dict[str, Any]:
    """The tiles' compressed bytes (the whole heap, in memory), where each starts and how
    many bytes and pixels it has, and the RICE_1 parameters: from dfits' tile reader."""
    import dfits

    with dfits.open(path) as f:
        reader = f[1].section.block
        tiles = reader.tiles
        spans = reader.descriptors.spans["COMPRESSED_DATA"]
        heap_offset = reader.heap_offset
        # hdu.data's default plan (the reader decodes a chunk at a time), without building
        # the dask array: dask.array's import would sit in every tool's peak RSS
        chunks = f[1]._plan(False)[1]
    counts, starts = spans[:, 0].astype(np.int64), spans[:, 1].astype(np.int64)
    heap = np.fromfile(path, np.uint8, count=int((starts + counts).max()), offset=heap_offset)
    rows = np.arange(tiles.nrows)
    lo = np.stack(np.unravel_index(rows, tiles.grid), axis=1) * np.array(tiles.tile)
    hi = np.minimum(lo + np.array(tiles.tile), np.array(tiles.shape))
    npix = (hi - lo).prod(axis=1).astype(np.int64)
    # each chunk's first tile, where chunks span whole rows of tiles (else: one chunk)
    firsts = [0]
    if len(chunks) == 2 and len(chunks[1]) == 1:
        rows_at = np.cumsum((0, *chunks[0][:-1]))
        firsts = (rows_at // tiles.tile[0] * tiles.grid[1]).tolist()
    return {"heap": heap, "starts": starts, "counts": counts, "npix": npix, "chunks": firsts,
            "blocksize": tiles.blocksize, "bytepix": tiles.bytepix}  # fmt: skip


def groups(tiles: dict[str, Any]) -> list[tuple[int, int]]:
    """Tile ranges ``[a, b)`` decoded by one call, as the reader cuts them: each chunk of the
    default plan, cut as ``tiles.places.batches`` cuts a chunk's tiles (every
    :data:`~dfits.tiles.places.BATCH` bytes of compressed data)."""
    from dfits.tiles.places import BATCH

    out = []
    for a, b in itertools.pairwise([*tiles["chunks"], len(tiles["counts"])]):
        ends = np.cumsum(tiles["counts"][a:b])
        cuts = (np.flatnonzero(np.diff(ends // BATCH)) + 1 + a).tolist()
        out += itertools.pairwise([a, *cuts, b])
    return out


def decoder(tool: str, case: str, tiles: dict[str, Any]):
    """A callable decoding every tile once with ``tool``; it returns the values in tile
    order (one array, or the list of fresh arrays). Case ``into`` decodes into one array
    allocated (and its pages touched) here, so only decoding is timed."""
    heap, starts, counts, npix = tiles["heap"], tiles["starts"], tiles["counts"], tiles["npix"]
    blocksize, bytepix = tiles["blocksize"], tiles["bytepix"]
    firsts = np.concatenate(([0], np.cumsum(npix))).tolist()
    triples = list(zip(starts.tolist(), counts.tolist(), npix.tolist(), strict=True))
    dtype = {1: np.uint8, 2: np.int16, 4: np.int32}[bytepix]
    # the output of the into case: allocated and its pages touched here, untimed
    out = np.zeros(int(npix.sum()), dtype) if case == "into" else None
    if tool == "dfits":
        from dfits.kernels import rice

        if case == "fresh":
            return lambda: [rice.rice_decode(heap[a : a + c], n, blocksize, bytepix)
                            for a, c, n in triples]  # fmt: skip
        kernel, params = rice._decode_kernel, rice._PARAMS[bytepix]

        def into_tiles():
            for (a, c, _), p, q in zip(triples, firsts, firsts[1:], strict=False):
                if kernel(heap[a : a + c], out[p:q], blocksize, *params, bytepix):
                    raise ValueError(f"tile at heap byte {a} does not decode")
            return out

        return into_tiles
    if tool == "dfits-group":
        from dfits.kernels import tilegroup

        cut = groups(tiles)

        def by_group():
            got = []
            for a, b in cut:
                where = None if out is None else out[firsts[a] : firsts[b]]
                packed, bad, _ = tilegroup.rice_group(
                    heap, starts[a:b], counts[a:b], npix[a:b], blocksize, bytepix, out=where
                )
                if packed is None:
                    raise ValueError(f"tile {a + bad} does not decode")
                got.append(packed)
            return got if out is None else out

        return by_group
    import imagecodecs

    dec = imagecodecs.rcomp_decode
    if case == "fresh":
        return lambda: [dec(heap[a : a + c], shape=(n,), dtype=dtype, nblock=blocksize)
                        for a, c, n in triples]  # fmt: skip

    def into_codecs():
        for (a, c, _), p, q in zip(triples, firsts, firsts[1:], strict=False):
            dec(heap[a : a + c], shape=(q - p,), dtype=dtype, nblock=blocksize, out=out[p:q])
        return out

    return into_codecs


def _peak() -> int:
    """This process's own peak RSS in bytes (``VmHWM``; ``ru_maxrss`` would be the
    parent's peak too: Linux keeps it across exec)."""
    with open("/proc/self/status") as fh:
        return int(next(x for x in fh if x.startswith("VmHWM:")).split()[1]) * 1024


def _reset_peak() -> None:
    """Start this process's peak RSS (VmHWM) afresh, where Linux allows it."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def run_one(tool: str, path: Path, warm: Path) -> dict[str, Any]:
    """Time ``tool`` on each case once in this fresh process, after a warm-up on ``warm``."""
    tiles, small = load(path), load(warm)
    want = json.loads(path.with_suffix(".json").read_text())["crc"]
    out: dict[str, Any] = {"npix": int(tiles["npix"].sum()), "tiles": len(tiles["npix"])}
    for case in CASES:
        decoder(tool, case, small)()
        run = decoder(tool, case, tiles)
        _reset_peak()
        t = time.perf_counter()
        got = run()
        seconds = time.perf_counter() - t
        peak = _peak()
        values = got if isinstance(got, np.ndarray) else np.concatenate(got)
        out[case] = {"s": seconds, "peak_rss": peak, "ok": crc(values) == want}
    return out


def measure(
    tmpdir: Path, side: int, tile: str, rounds: int, tools: tuple[str, ...] = TOOLS
) -> list[tuple[str, str, str]]:
    """Every case x tool, median of ``rounds`` fresh processes, rounds interleaved: rows of
    (case, tool, result text)."""
    path, warm = write_file(tmpdir, side, tile), write_file(tmpdir, WARM_SIDE, tile)
    got: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    for r in range(rounds):
        for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
            cmd = [sys.executable, __file__, "--one", tool, str(path), str(warm)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                failed[tool] = (res.stderr.strip().splitlines() or ["?"])[-1]
                continue
            got.setdefault(tool, []).append(json.loads(res.stdout.strip().splitlines()[-1]))
    return rows(got, failed)


def rows(got: dict[str, list[dict]], failed: dict[str, str]) -> list[tuple[str, str, str]]:
    """Median ns per pixel and time, speed-up against imagecodecs, peak RSS, check."""
    out = []
    for case in CASES:
        base = [r[case]["s"] for r in got.get("imagecodecs", [])]
        for tool in TOOLS:
            if tool in failed:
                out.append((case, tool, f"failed: {failed[tool]}"))
            if tool not in got:
                continue
            runs = got[tool]
            med = statistics.median(r[case]["s"] for r in runs)
            rss = statistics.median(r[case]["peak_rss"] for r in runs) / 2**20
            text = f"{med * 1e9 / runs[0]['npix']:.2f} ns/px, {med * 1e3:.1f} ms"
            if base:
                text += f", {statistics.median(base) / med:.2f}x imagecodecs"
            ok = all(r[case]["ok"] for r in runs)
            text += f", peak RSS {rss:.0f} MiB, {'ok' if ok else 'VALUES DIFFER'}"
            out.append((case, tool, text))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tmpdir", type=Path, default=Path("/tmp/dfbench-rice"))
    ap.add_argument("--side", type=int, default=8192, help="the image is side x side int16")
    ap.add_argument("--tile", default="rows", help="rows (fpack's default) or a square side")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"any of {','.join(TOOLS)}")
    ap.add_argument("--write-only", action="store_true", help="write the files and stop")
    ap.add_argument("--one", nargs=3, metavar=("TOOL", "PATH", "WARM"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        tool, path, warm = args.one
        print(json.dumps(run_one(tool, Path(path), Path(warm))))
        return 0
    if args.tile != "rows" and not args.tile.isdigit():
        ap.error(f"--tile is rows or a number, not {args.tile!r}")
    if args.write_only:
        for side in (WARM_SIDE, args.side):
            path = write_file(args.tmpdir, side, args.tile)
            print(f"{path} ({path.stat().st_size / 2**20:.1f} MiB)")
        return 0
    tools = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    if unknown := sorted(set(tools) - set(TOOLS)):
        ap.error(f"unknown tool(s) {unknown}; choose from {TOOLS}")
    print(f"RICE_1 int16 {args.side} x {args.side}, tiles {args.tile}, one thread, "
          f"median of {args.rounds} fresh processes")  # fmt: skip
    for case, tool, text in measure(args.tmpdir, args.side, args.tile, args.rounds, tools):
        print(f"{case:6} {tool:12} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
