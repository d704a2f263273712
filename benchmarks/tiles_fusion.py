"""Where the time of a quantised-float reduction goes, and what fusing the dequantisation
into the reduction saves (issue 30).

    python benchmarks/tiles.py --breakdown [--scale full|small|tiny] [--rounds 5]

On a ``side x side`` float32 image quantised with SUBTRACTIVE_DITHER_2 and RICE_1-compressed
(row tiles, as astropy and fpack write by default), one thread, over the chunks ``hdu.data``
plans, files in the page cache:

* ``fetch + Rice decode``: the tiles' bytes read and decoded to integers, nothing else;
* ``read (decode, integers kept)``: the tile reader's chunk as dask gets it (the fused path);
* ``read + dequantise into floats``: the same, then the floats written into a chunk (what
  every read did before the fusion, and what a request no fused pass answers still does);
* ``sum of the dequantised floats``: the reduction kernel on those floats alone;
* ``read + fused sum``: the read, then ``nansum`` in one pass over the integers;
* ``hdu.data.sum() (dask, 2 threads)``: the whole public path, for scale.

The fused sum replaces the dequantise-and-place writes plus the reduction's reads by one pass
over the decoded integers; the dither value per pixel is still computed, so
``(read + dequantise) + sum - (read + fused sum)`` is what fusing saves. The same three for
``nanstd``'s moments (issue 46): ``moments of the dequantised floats`` (the kernel on floats
already written), ``read + fused moments`` (each block dequantised in cache just before the
moments kernel's step reads it) and ``nanstd(hdu.data)`` through dask.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _image(tmpdir: Path, side: int) -> Path:
    from astropy.io import fits

    path = tmpdir / f"tiles-dither2-{side}.fits.fz"
    if not path.exists():
        tmpdir.mkdir(parents=True, exist_ok=True)
        data = np.random.default_rng(1).normal(100, 5, (side, side)).astype(np.float32)
        hdu = fits.CompImageHDU(
            data, compression_type="RICE_1", quantize_method=2, quantize_level=4.0
        )
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    path.read_bytes()  # into the page cache
    return path


def _median(fn: Callable[[], object], rounds: int) -> float:
    fn()  # compiles, warms
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def breakdown(tmpdir: Path, side: int, rounds: int) -> dict[str, float]:
    """Median seconds of each phase (see the module docstring)."""
    import dask

    import dfits
    from dfits.kernels import moments, sum_count, tilegroup
    from dfits.stored import passes
    from dfits.tiles.places import fetch_spans

    hdu = dfits.open(_image(tmpdir, side))[1]
    reader = hdu._block(raw=False)
    tiles = reader.tiles
    bounds = np.cumsum((0, *hdu.data.chunks[0]))
    regions = [(slice(int(a), int(b)), slice(0, side)) for a, b in itertools.pairwise(bounds)]

    def decode_only():
        for region in regions:
            rows = reader.rows(region)
            spans = reader.lookup(rows).spans["COMPRESSED_DATA"]
            blob, starts = fetch_spans(reader.source, reader.heap_offset, spans)
            npix = np.full(len(rows), tiles.tile[-1], np.int64)
            tilegroup.rice_group(blob, starts, spans[:, 0], npix, tiles.blocksize, tiles.bytepix)

    def read_all():  # the integers decoded, kept for the fused reductions
        for region in regions:
            reader.read(region)

    def dequantised():  # what an unfused read did: the floats written into the chunk
        for region in regions:
            reader.read(region).u  # noqa: B018 - reading it dequantises

    def fused():  # decode, then the sum in one pass over the integers
        for region in regions:
            np.nansum(reader.read(region))

    chunks = [reader.read(r) for r in regions]
    for c in chunks:
        c.u  # noqa: B018 - dequantised once, here, untimed

    def sum_only():
        for c in chunks:
            sum_count(c.u, c.spec, None, skipna=True, counts=False)

    def moments_only():
        for c in chunks:
            moments(c.u, c.spec, None, skipna=True)

    def fused_moments():  # decode, then (n, mean, M2) dequantised block by block
        for region in regions:
            passes.moments(reader.read(region), (0, 1), True)

    with dask.config.set(scheduler="threads", num_workers=2):
        whole = _median(lambda: hdu.data.sum().compute(), rounds)
        spread = _median(lambda: np.nanstd(hdu.data).compute(), rounds)
    return {
        "fetch + Rice decode": _median(decode_only, rounds),
        "read (decode, integers kept)": _median(read_all, rounds),
        "read + dequantise into floats": _median(dequantised, rounds),
        "sum of the dequantised floats": _median(sum_only, rounds),
        "read + fused sum": _median(fused, rounds),
        "hdu.data.sum() (dask, 2 threads)": whole,
        "moments of the dequantised floats": _median(moments_only, rounds),
        "read + fused moments": _median(fused_moments, rounds),
        "nanstd(hdu.data) (dask, 2 threads)": spread,
    }
