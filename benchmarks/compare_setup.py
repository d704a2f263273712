"""compare.py's cases, tools and files: the case and tool tables, the generated FITS files
(big-endian data written in slabs, a ``.json`` layout beside each) and the page-cache
preparation before each run (see ``compare.py``'s docstring for the methodology)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

TOOLS = (
    "LIMIT",
    "numpy-native",
    "numpy-rawint",
    "astropy-eager",
    "astropy-memmap",
    "fitsio",
    "dask-from-array",
    "dask-native",
    "dfits",
    "dfits-plan",
)
REDUCTIONS = (
    *("sum", "mean", "std", "nanmean16", "moment0", "spectrum", "nanmoment16", "stdmap"),
    *("maskedmoment0", "maskedmoment16", "peakmap"),
)
#: ``maskedmoment0`` keeps the values above this (a fifth of the cube)
MASK_THRESHOLD = 0.8
#: ``maskedmoment16`` keeps the physical values above this (stored integers above 25600)
MASK16_THRESHOLD = 12810.0
ALL_CASES = (*REDUCTIONS, "stamps", "headers")
#: cube cases that reduce along the spectral axis: ``dfits-plan`` times them on the chunks
#: that ``hdu.to_dask(reduce_axis=0)`` plans (what ``da.fits.moment`` and ``dfits moment`` use)
PLANNED = ("moment0", "nanmoment16", "stdmap", "maskedmoment0", "maskedmoment16", "peakmap")
DEFAULT_CASES = "sum,nanmean16,moment0,spectrum,stamps,headers"
#: fresh-process case run by ``cold_start.py`` (import, open, first reduction; empty and warm
#: kernel cache; ``dfits warm``), on its own 100 MB cube: no tool matrix, dfits only
COLD_CASE, COLD_SIZE = "cold_start", 100_000_000
#: tile-compressed images, run by ``tiles.py`` (its own files and tool matrix: dfits, astropy,
#: fitsio, funpack+dfits, funpack alone, LIMIT); ``--tiles-scale`` picks its sizes
TILES_CASE = "tiles"
#: one column summed from a 30-column BINTABLE (``--tables-size``, default 1 GiB), run by
#: ``tables.py`` (dfits, astropy, fitsio, LIMIT, each in fresh processes)
TABLES_CASE = "tables"
FILE_OF = {
    "sum": "f8img",
    "mean": "f8img",
    "std": "f8img",
    "nanmean16": "i2img",
    "moment0": "cube",
    "spectrum": "cube",
    "nanmoment16": "i2cube",
    "stdmap": "cube",
    "maskedmoment0": "cube",
    "maskedmoment16": "i2cube",
    "peakmap": "cube",
    "stamps": "stamps",
    "headers": "headers",
}
NOT_APPLICABLE = {
    # the raw-integer idiom exists only for scaled integers with BLANK
    *((case, "numpy-rawint") for case in ALL_CASES if case != "nanmean16"),
    ("stamps", "dask-from-array"),
    ("stamps", "dask-native"),
    ("headers", "dask-native"),
    *((case, "dfits-plan") for case in ALL_CASES if case not in PLANNED),
    ("headers", "numpy-native"),
    ("headers", "astropy-eager"),
    ("headers", "dask-from-array"),
}
MARK = "@@RESULT "
BLOCK = 2880
SLAB = 32 << 20
STAMP = 32
HOW = {  # what each tool does, by tool or by (case, tool)
    "LIMIT": "Numba kernel on native uint memmap, bswap in registers",
    "numpy-native": "numpy on a preloaded native array (load not timed)",
    "numpy-rawint": "np.memmap('>i2') blocks: swap, int64 sum - BLANK x count, scale once",
    "astropy-eager": "fits.getdata(memmap=False) + numpy",
    "astropy-memmap": "fits.open(path)[0].data (default memmap) + numpy",
    "fitsio": "fitsio.read + numpy",
    "dfits": "dfits.open(path)[0].data + dask .compute()",
    "dfits-plan": "dfits.open(path)[0].to_dask(reduce_axis=0) + dask .compute()",
    "dask-from-array": "da.from_array(fits.open(path)[0].data, chunks='auto') + dask",
    "dask-native": "dask over a preloaded native array in dfits' chunks (load not timed)",
    ("nanmean16", "fitsio"): "fitsio.read, scaled BLANK -> NaN, np.nanmean",
    ("nanmoment16", "fitsio"): "fitsio.read, scaled BLANK -> NaN, np.nansum(axis=0)",
    ("maskedmoment16", "fitsio"): "fitsio.read, scaled BLANK -> NaN, np.where + np.nansum",
    ("stamps", "LIMIT"): "np.memmap('>f4') slice .astype(native)",
    ("stamps", "numpy-native"): "slice copy of a preloaded native array",
    ("stamps", "astropy-eager"): "fits.getdata then slice",
    ("stamps", "astropy-memmap"): "fits.open(path)[0].section[...]",
    ("stamps", "fitsio"): "fitsio.FITS(path)[0][y:y+32, x:x+32]",
    ("stamps", "dfits"): "dfits.open(path)[0].section[...]",
    ("headers", "LIMIT"): "pure-Python 2880-byte block scan, cards into dicts",
    ("headers", "astropy-memmap"): "fits.open, len(hdu.header) for every HDU",
    ("headers", "fitsio"): "fitsio.FITS, len(hdu.read_header()) for every HDU",
    ("headers", "dfits"): "dfits.open, len(h.header) for every HDU",
}


def parse_size(text: str) -> int:
    """'2GiB' -> 2147483648; also accepts kB/MB/GB (powers of 1000) and plain bytes."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([kKMGT]?)(i?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}")
    power = " KMGT".index(m[2].upper() or " ")
    return int(float(m[1]) * (1024 if m[3] else 1000) ** power)


def layout(kind: str, size: int, warm: bool) -> dict:
    """Shape, BITPIX and extra cards of one generated file (numpy axis order)."""
    if kind == "f8img":
        return {"shape": [16 if warm else max(1, size // (8 * 4096)), 4096], "bitpix": -64}
    if kind == "i2img":
        cards = {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768}
        return {
            "shape": [16 if warm else max(1, size // 4 // (2 * 4096)), 4096],
            "bitpix": 16,
            **cards,
        }
    if kind == "i2cube":  # an int16 cube of size/4 with BSCALE/BZERO/BLANK
        nchan = 16 if warm else 256
        pix = 1024 if warm else max(1, size // 4 // (2 * nchan))
        ny = 2 ** (int(math.log2(pix)) // 2)
        cards = {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768}
        return {"shape": [nchan, ny, max(1, pix // ny)], "bitpix": 16, **cards}
    if kind == "cube":
        nchan = 16 if warm else 256
        pix = 1024 if warm else max(1, size // 2 // (4 * nchan))
        ny = 2 ** (int(math.log2(pix)) // 2)
        return {"shape": [nchan, ny, max(1, pix // ny)], "bitpix": -32}
    if kind == "stamps":
        return {
            "shape": [256, 256] if warm else [4000, 4000],
            "bitpix": -32,
            "nstamps": 10 if warm else 1000,
        }
    return {"nhdu": 20 if warm else 10_000}


def header_bytes(cards: list) -> bytes:
    from astropy.io import fits

    return fits.Header(cards).tostring().encode("ascii")


def fill(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if kind == "f8img":
        return rng.random(n)
    if kind == "i2img":
        data = rng.integers(-32000, 32001, n, dtype=np.int16)
        data[rng.integers(0, n, max(1, n // 100))] = -32768
        return data
    if kind == "i2cube":  # non-negative, so float32 sums over the planes stay far from 0
        data = rng.integers(0, 32001, n, dtype=np.int16)
        data[rng.integers(0, n, max(1, n // 100))] = -32768
        return data
    return rng.random(n, dtype=np.float32)


def write_image(path: Path, kind: str, meta: dict) -> None:
    shape, bitpix = meta["shape"], meta["bitpix"]
    cards = [("SIMPLE", True), ("BITPIX", bitpix), ("NAXIS", len(shape))]
    cards += [(f"NAXIS{i + 1}", n) for i, n in enumerate(reversed(shape))]
    cards += [(k, meta[k]) for k in ("BSCALE", "BZERO", "BLANK") if k in meta]
    head = header_bytes(cards)
    be = np.dtype({-64: "f8", -32: "f4", 16: "i2"}[bitpix]).newbyteorder(">")
    n, step = math.prod(shape), SLAB // be.itemsize
    rng = np.random.default_rng(12345)
    with open(path, "wb") as f:
        f.write(head)
        for start in range(0, n, step):
            fill(kind, rng, min(step, n - start)).astype(be).tofile(f)
        f.write(b"\0" * (-f.tell() % BLOCK))
    meta.update(offset=len(head), data_bytes=n * be.itemsize)


def write_headers(path: Path, meta: dict) -> None:
    data = np.arange(100, dtype=">i2").tobytes()
    data += b"\0" * (-len(data) % BLOCK)
    with open(path, "wb") as f:
        for i in range(meta["nhdu"]):
            first = [("SIMPLE", True)] if i == 0 else [("XTENSION", "IMAGE")]
            cards = [*first, ("BITPIX", 16), ("NAXIS", 2), ("NAXIS1", 10), ("NAXIS2", 10)]
            cards += (
                [("EXTEND", True)]
                if i == 0
                else [("PCOUNT", 0), ("GCOUNT", 1), ("EXTNAME", "SCI"), ("EXTVER", i)]
            )
            f.write(header_bytes(cards) + data)
    meta["data_bytes"] = path.stat().st_size


def ensure_file(tmpdir: Path, kind: str, size: int, warm: bool) -> Path:
    """Create (or reuse) one test file; its layout goes to a ``.json`` sidecar."""
    tag = (
        "warm" if warm else (str(size) if kind in ("f8img", "i2img", "cube", "i2cube") else "full")
    )
    path = tmpdir / f"dfits-bench-{kind}-{tag}.fits"
    side = path.with_suffix(".json")
    meta = layout(kind, size, warm)
    if path.exists() and side.exists():
        old = json.loads(side.read_text())
        if old.get("file_bytes") == path.stat().st_size and all(
            old[k] == v for k, v in meta.items()
        ):
            return path
    print(f"writing {path} ...", file=sys.stderr, flush=True)
    part = path.with_suffix(".part")
    write_headers(part, meta) if kind == "headers" else write_image(part, kind, meta)
    meta["file_bytes"] = part.stat().st_size
    os.replace(part, path)
    side.write_text(json.dumps(meta))
    return path


#: how ``--cache`` leaves each file in the page cache before every run
CACHE_STATES = {
    "large": "dropped, then read sequentially: readahead caches it in large folios "
    "(2 MiB where the kernel and file system use them), as a first read of the file would",
    "small": "dropped, then read with readahead off (POSIX_FADV_RANDOM): 4 KiB pages, "
    "as kernels or file systems without large folios cache it",
    "huge": "dropped, then faulted in through a MADV_HUGEPAGE map: 2 MiB folios from the "
    "first byte, as a first read by a tool that asks for huge pages would",
    "asis": "read once, keeping whatever folios already cache it",
}


def case_files(case: str, size: int, tmpdir: Path | None) -> tuple[Path, Path]:
    """The case's big file and its small warm-up twin, made (or reused) in ``tmpdir``."""
    tmpdir = tmpdir or Path(tempfile.gettempdir()) / "dfits-bench"
    tmpdir.mkdir(parents=True, exist_ok=True)
    kind = FILE_OF[case]
    return ensure_file(tmpdir, kind, size, False), ensure_file(tmpdir, kind, size, True)


def preread(path: Path, cache: str = "large") -> None:
    """Pull the whole file into the page cache, in the folio sizes ``cache`` asks for.

    Mapping a file costs a page fault per 16 pages of a 4 KiB-page cache but one per 2 MiB
    folio, and unmapping likewise: on this project's VM the LIMIT sum of a 2 GiB file took
    0.10 s from large folios and 0.2-0.3 s from 4 KiB pages, while tools that copy with
    ``read`` barely noticed. Which one an already cached file has depends on how its pages
    got there, so the state is set here instead of left to the file's history.
    """
    buf = bytearray(64 << 20)
    view = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        if cache != "asis":
            os.fsync(fd)  # dirty pages (a file just written) would survive the drop
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if cache == "huge":
            _fault_in_huge(fd)
            return
        advice = os.POSIX_FADV_RANDOM if cache == "small" else os.POSIX_FADV_SEQUENTIAL
        os.posix_fadvise(fd, 0, 0, advice)
        offset = 0
        while n := os.preadv(fd, [view], offset):
            offset += n
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_NORMAL)
    finally:
        os.close(fd)


def _fault_in_huge(fd: int) -> None:
    """Fault a file into the page cache through a ``MADV_HUGEPAGE`` map.

    Such a map's page faults read ahead in whole 2 MiB folios (Linux's mmap readahead for
    huge-page VMAs), where a sequential ``read`` ramps its folio size up and leaves the
    file's first tens of MiB in small folios.
    """
    import mmap

    size = os.fstat(fd).st_size
    if not size:
        return
    m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    try:
        if hasattr(mmap, "MADV_HUGEPAGE"):
            m.madvise(mmap.MADV_HUGEPAGE)
        view = np.frombuffer(m, np.uint8)
        int(view[:: mmap.PAGESIZE].sum(dtype=np.uint64))
        del view
    finally:
        m.close()


def pmd_share(path: Path) -> float | None:
    """Share of the cached file that maps as 2 MiB pages (``FilePmdMapped`` / ``Rss``).

    Read from ``/proc/self/smaps`` after touching every page of a fresh whole-file map;
    None where the kernel does not say.
    """
    import mmap

    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    try:
        view = np.frombuffer(m, np.uint8)
        int(view[:: mmap.PAGESIZE].sum(dtype=np.uint64))
        start = view.ctypes.data
        del view
        found: dict[str, int] = {}
        inside = False
        with open("/proc/self/smaps") as smaps:
            for line in smaps:
                head = line.split(maxsplit=1)[0]
                if not head.endswith(":"):
                    inside = int(head.split("-")[0], 16) == start
                elif inside and head in ("Rss:", "FilePmdMapped:"):
                    found[head] = int(line.split()[1])
    finally:
        m.close()
    if found.get("Rss:") and "FilePmdMapped:" in found:
        return found["FilePmdMapped:"] / found["Rss:"]
    return None
