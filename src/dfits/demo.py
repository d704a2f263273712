"""The README's main job: a ~1 GiB synthetic spectral cube, a moment-0 map and a spectrum.

``./run demo`` (or ``python -m dfits.demo``) writes an ALMA-like float32 cube — Gaussian
sources whose emission line drifts in frequency across the field, plus noise and a few blanked
(NaN) channels — into a temporary folder, opens it with dfits (headers only), and reduces it
with plain dask calls that run the fused byte-swapping kernels. It prints the results and how
long each step took, then deletes the cube (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["add_arguments", "main", "make_cube", "run"]


def _sources(ny: int, nx: int, rng: np.random.Generator, n: int = 6):
    ys, xs = rng.uniform(0.15, 0.85, (2, n)) * np.array([[ny], [nx]])
    return list(zip(ys, xs, rng.uniform(1.0, 5.0, n), rng.uniform(8, 30, n), strict=True))


def make_cube(
    path: str,
    shape: tuple[int, int, int] = (256, 1024, 1024),
    seed: int = 0,
    cards: Sequence[tuple[str, Any]] = (),
) -> str:
    """Write the synthetic cube to ``path`` in 16-channel slabs (bounded memory).

    ``cards``: extra header cards after the WCS, e.g. a beam (``BMAJ``, ``BMIN``, ``BPA``).
    """
    nchan, ny, nx = shape
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:ny, 0:nx].astype(np.float32)
    sky = np.zeros((ny, nx), np.float32)
    for y0, x0, peak, width in _sources(ny, nx, rng):
        sky += peak * np.exp(-((yy - y0) ** 2 + (xx - x0) ** 2) / (2 * width**2))
    # the line centre drifts across the field (a rotating disk, roughly)
    centre = nchan / 2 + (xx - nx / 2) / nx * nchan / 4
    cards = [
        ("BUNIT", "Jy/beam"),
        ("OBJECT", "DFITS-DEMO"),
        ("CTYPE1", "RA---SIN"),
        ("CRVAL1", 83.8221),
        ("CDELT1", -1.0e-4),
        ("CRPIX1", nx / 2 + 1),
        ("CUNIT1", "deg"),
        ("CTYPE2", "DEC--SIN"),
        ("CRVAL2", -5.3911),
        ("CDELT2", 1.0e-4),
        ("CRPIX2", ny / 2 + 1),
        ("CUNIT2", "deg"),
        ("CTYPE3", "FREQ"),
        ("CRVAL3", 230.538e9),
        ("CDELT3", 0.5e6),
        ("CRPIX3", nchan / 2 + 1),
        ("CUNIT3", "Hz"),
        ("SPECSYS", "LSRK"),
        ("RESTFRQ", 230.538e9),
        *cards,
    ]
    # here, not at the top: ``dfits info`` builds the demo's parser, never its writer
    from dfits.io.writer import ImageWriter

    slab = 16
    with ImageWriter(path, shape, ">f4", cards) as out:
        for c0 in range(0, nchan, slab):
            chans = np.arange(c0, min(c0 + slab, nchan), dtype=np.float32)[:, None, None]
            line = np.exp(-((chans - centre) ** 2) / (2 * 6.0**2))
            block = sky * line + rng.standard_normal((len(chans), ny, nx), np.float32) * 0.05
            if c0 == 0:
                block[:2] = np.nan  # flagged edge channels, as real cubes have
            out.write(block)
    return path


def _timed(label: str, func):
    t0 = time.perf_counter()
    value = func()
    print(f"  {label:<44} {time.perf_counter() - t0:7.3f} s")
    return value


def _shape(text: str) -> tuple[int, int, int]:
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != 3 or min(shape) <= 0:
        raise argparse.ArgumentTypeError(f"needs three positive integers, not {text!r}")
    return shape  # type: ignore[return-value]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options, on its own parser or on ``dfits demo``'s."""
    parser.add_argument(
        "--shape",
        type=_shape,
        default=(256, 1024, 1024),
        help="cube shape nchan,ny,nx (default: 256,1024,1024, 1 GiB of float32)",
    )
    parser.add_argument("--dir", default=None, help="where to write the cube (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the cube afterwards")


def main(argv: list[str] | None = None) -> int:
    """Run the demo (``python -m dfits.demo``); returns the process exit code."""
    parser = argparse.ArgumentParser(prog="dfits demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the demo with parsed options (``shape``, ``dir``, ``keep``); returns the exit code."""
    shape = args.shape
    import dfits

    folder = args.dir or tempfile.mkdtemp(prefix="dfits-demo-")
    path = os.path.join(folder, "demo_cube.fits")
    size = np.prod(shape) * 4 / 2**30
    print(f"dfits demo: a {shape[0]}x{shape[1]}x{shape[2]} float32 cube ({size:.2f} GiB)")
    try:
        _timed(f"write {path}", lambda: make_cube(path, shape))
        f = _timed("dfits.open (headers only)", lambda: dfits.open(path))
        results = _reduce(f[0], shape)
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    _report(*results)
    return 0


def _reduce(hdu, shape: tuple[int, ...]):
    """The demo's reductions, each timed: moment-0 and peak-channel maps, a spectrum, the
    peak and noise, a cut-out."""
    import dask.array as da

    cube = hdu.data
    print(f"  {hdu!r}; {cube.npartitions} chunks of {cube.chunksize}")
    # run every step once on a tiny corner first: the timings below are then I/O and
    # compute, not Numba compiling each kernel variant on first use
    corner = cube[:8, :16, :16]
    # two chunks along the channels, so that combining peak-channel partials compiles too
    split = hdu.to_dask(chunks=(4, 32, 32))[:8, :32, :32]
    _timed(
        "first calls (load or compile the kernels)",
        lambda: da.compute(
            da.nanargmax(split, axis=0),
            da.nansum(corner, axis=0),
            da.nanmean(corner, axis=(1, 2)),
            da.nanmax(corner),
            da.nanstd(corner),
            hdu.section[:2, :2, :2],
        ),
    )
    mom0 = _timed(
        "moment-0 map: nansum over channels",
        lambda: da.nansum(cube, axis=0).compute() * 0.5e6 / 1e9,
    )
    spec = _timed("spectrum: nanmean over the sky", lambda: da.nanmean(cube, axis=(1, 2)).compute())
    peakmap = _timed(
        "peak-channel map: nanargmax over channels",
        lambda: da.nanargmax(cube, axis=0).compute(),
    )
    peak = _timed(
        "peak and noise: nanmax, nanstd",
        lambda: da.compute(da.nanmax(cube), da.nanstd(cube[-16:])),
    )
    cy, cx = shape[1] // 2, shape[2] // 2
    stamp = _timed(
        "cut-out 64x64 through hdu.section",
        lambda: hdu.section[:, cy - 32 : cy + 32, cx - 32 : cx + 32],
    )
    return mom0, spec, peakmap, peak, stamp


def _report(mom0, spec, peakmap, peak, stamp) -> None:
    iy, ix = np.unravel_index(np.nanargmax(mom0), mom0.shape)
    print("\nresults")
    print(
        f"  moment-0 map {mom0.shape}: max {np.nanmax(mom0):.4f} Jy/beam GHz at (y={iy}, "
        f"x={ix}); total {np.nansum(mom0):.1f}"
    )
    print(
        f"  peak-channel map {peakmap.shape}: channel {int(peakmap[iy, ix])} at the moment-0 "
        f"maximum"
    )
    print(
        f"  spectrum {spec.shape}: line peak at channel {int(np.nanargmax(spec))}, "
        f"{np.count_nonzero(np.isnan(spec))} flagged channels"
    )
    print(f"  cube peak {float(peak[0]):.4f} Jy/beam; line-free noise {float(peak[1]):.4f}")
    print(f"  cut-out {stamp.shape} {stamp.dtype}; mean {np.nanmean(stamp):.4f}")
    step = max(1, len(spec) // 32)
    print(f"  spectrum (every {step}th channel):")
    print("   " + " ".join(f"{v:.3f}" for v in spec[::step]))


if __name__ == "__main__":
    raise SystemExit(main())
