"""Cube science on a float32 (channel, y, x) cube: moment-0, moment-1, noise and peak maps, a
spectrum.

The spectral axis is ``v = CRVAL3 + CDELT3 * channel`` (km/s); moment 1 is the
intensity-weighted mean velocity ``sum(v * I) / sum(I)`` over channels; the noise map is the
standard deviation over channels (``std(axis=0)``); the peak map is the channel of each pixel's
peak (``argmax(axis=0)``); the spectrum sums every channel over y and x. Tools: ``dfits``
(plain dask on ``hdu.data``), ``dfits-moment`` (the one-pass weighted sums on chunks planned
for the reduction, what ``.fits.moment()`` and ``dfits moment`` run; moment maps only),
``astropy-eager`` (``fits.getdata`` then numpy), ``spectral-cube`` (``SpectralCube`` over
astropy's data with the matching WCS; skipped when not installed) and ``LIMIT`` (compare.py's
Numba kernels for moment 0, the noise map, the peak map and the spectrum; it has none for
moment 1).

``CubeCutout`` runs a spectrum, a moment-0 map, a noise spectrum and a peak spectrum of a
box inside the same cube; ``CubeWidened`` runs moment-0, the mean and the noise map after
``astype(np.float64)``. Both time dfits, astropy-memmap and astropy-eager. ``CubeXarray`` runs
plain xarray reductions (``sum`` over channels, ``count``, ``mean`` over the sky) on the
engine-opened cube, with and without ``chunks={}``, and on astropy's memory map.

``ScaledCubeMoment`` is the moment-0 map of an int16 cube with BSCALE/BZERO/BLANK
(``np.nansum`` over the channels, BLANK pixels left out), as ``compare.py --cases nanmoment16``
runs it: dfits against astropy's and fitsio's scaled reads and compare.py's ``LIMIT``, which
sums int32 tiles through the planes and scales each pixel once.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import TINY, compare, image_bytes, image_file, prewarm, require

TOOLS = ["dfits", "dfits-moment", "astropy-eager", "spectral-cube", "LIMIT"]
OPS = ["moment0", "moment1", "stdmap", "spectrum", "peakmap"]
CRVAL3, CDELT3 = -50.0, 0.5


def cube_shape(pixels: int, nchan: int) -> list[int]:
    ny = 2 ** (int(np.log2(max(pixels, 1))) // 2)
    return [nchan, ny, max(1, pixels // ny)]


def cube_files(kind: str, bitpix: int, cards: dict | None = None) -> tuple:
    """``(path, meta, warm_path, warm_meta)``: a 256-channel cube of half an image's bytes.

    ``kind`` names the files and picks compare's value generator (``cube``: float32,
    ``i2cube``: non-negative int16 with BLANKs).
    """
    pixels = image_bytes() // 2 // (abs(bitpix) // 8 * 256)
    full = {"shape": [16, 8, 16] if TINY else cube_shape(pixels, 256), "bitpix": bitpix}
    warm = {"shape": [4, 8, 16], "bitpix": bitpix}
    cards = cards or {}
    return (
        *image_file(f"{kind}-data", kind, {**full, **cards}),
        *image_file(f"{kind}-warm", kind, {**warm, **cards}),
    )


def velocities(nchan: int) -> np.ndarray:
    return CRVAL3 + CDELT3 * np.arange(nchan)


def numpy_op(op: str, a: np.ndarray):
    if op == "spectrum":
        return a.sum(axis=(1, 2))
    if op == "stdmap":
        return a.std(axis=0)
    if op == "peakmap":  # the channel of each pixel's peak
        return a.argmax(axis=0)
    m0 = a.sum(axis=0)
    if op == "moment0":
        return m0
    v = velocities(a.shape[0]).astype(a.dtype)
    return np.tensordot(v, a, axes=1) / m0


def wcs_for(shape: list[int]):
    from astropy.wcs import WCS

    w = WCS(naxis=3)
    w.wcs.ctype = ["RA---SIN", "DEC--SIN", "VRAD"]
    w.wcs.cunit = ["deg", "deg", "km/s"]
    w.wcs.crpix = [shape[2] / 2, shape[1] / 2, 1]
    w.wcs.crval = [180.0, 0.0, CRVAL3]
    w.wcs.cdelt = [-1e-4, 1e-4, CDELT3]
    return w


def build(tool: str, op: str, path: str, meta: dict):
    """A zero-argument callable doing the timed work; its setup is done here, untimed."""
    if tool == "LIMIT":
        if op == "moment1":
            raise NotImplementedError("compare.py has no LIMIT kernel for moment 1")
        kernel = compare.limit_kernels()[op]  # stdmap: compare.py's case of that name
        shape = tuple(meta["shape"])
        return lambda: kernel(np.memmap(path, np.uint32, "r", meta["offset"], shape), meta)
    if tool == "dfits":
        import dfits

        def run():
            x = dfits.open(path)[0].data
            if op == "spectrum":
                return x.sum(axis=(1, 2)).compute()
            if op == "moment0":
                return x.sum(axis=0).compute()
            if op == "stdmap":
                return x.std(axis=0).compute()
            if op == "peakmap":
                return x.argmax(axis=0).compute()
            v = velocities(x.shape[0]).astype(x.dtype)[:, None, None]
            return ((x * v).sum(axis=0) / x.sum(axis=0)).compute()

        return run
    if tool == "dfits-moment":
        if op in ("spectrum", "stdmap", "peakmap"):
            raise NotImplementedError("moment maps only")
        import dfits
        from dfits.array import weighted_sums

        def run_moment():
            x = dfits.open(path)[0].to_dask(reduce_axis=0)
            sums = weighted_sums(x, 0, velocities(x.shape[0]))
            return (sums[0] if op == "moment0" else sums[1] / sums[0]).compute()

        return run_moment
    from astropy.io import fits

    if tool == "astropy-eager":
        return lambda: numpy_op(op, fits.getdata(path, memmap=False))
    require("spectral_cube")
    from spectral_cube import SpectralCube

    wcs = wcs_for(meta["shape"])

    def run_sc():
        cube = SpectralCube(data=fits.getdata(path, memmap=False), wcs=wcs)
        if op == "spectrum":
            return cube.sum(axis=(1, 2))
        if op == "stdmap":
            return cube.std(axis=0)
        if op == "peakmap":
            return cube.argmax(axis=0)
        if op == "moment0":
            # the case's moment 0 is the plain channel sum; spectral-cube's moment0() is
            # Σ I·Δv (times the channel width), another quantity
            return cube.sum(axis=0)
        return cube.moment1().to_value("km/s")  # spectral-cube works in SI (m/s)

    return run_sc


def array_tools(tool: str, path: str, f):
    """A callable giving ``f`` of the cube as dfits' dask array (computed), astropy's eager
    array (``astropy-eager``) or astropy's memory map (``astropy-memmap``)."""
    if tool == "dfits":
        import dfits

        return lambda: f(dfits.open(path)[0].data).compute()
    from astropy.io import fits

    if tool == "astropy-eager":
        return lambda: np.asarray(f(fits.getdata(path, memmap=False)))

    def run_memmap():
        with fits.open(path) as hl:
            return np.asarray(f(hl[0].data))

    return run_memmap


class _CubeOps:
    """Set-up shared by the float32-cube benchmarks below (one cache of files for all).

    Subclasses give ``params`` and ``build(tool, op, path, meta)``, which returns the
    callable to time; it runs once on the small warm-up cube first (imports, compilation).
    """

    param_names: ClassVar[list] = ["tool", "op"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 10, 60.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        return cube_files("cube", -32)

    setup_cache.timeout = 1200

    def setup(self, files, tool, op):
        path, meta, warm, warm_meta = files
        self.build(tool, op, warm, warm_meta)()  # imports, Numba compilation, dask start-up
        self.run = self.build(tool, op, path, meta)
        prewarm(path)

    @staticmethod
    def build(tool: str, op: str, path: str, meta: dict):
        raise NotImplementedError


class CubeScience(_CubeOps):
    params: ClassVar[list] = [TOOLS, OPS]
    build = staticmethod(build)

    def time_cube(self, files, tool, op):
        return self.run()

    def peakmem_cube(self, files, tool, op):
        return self.run()


SCALED_TOOLS = ["dfits", "astropy-eager", "fitsio", "LIMIT"]


def build_scaled(tool: str, path: str, meta: dict):
    """The int16 moment-0 map (``nansum`` over axis 0) as a zero-argument callable."""
    if tool == "LIMIT":
        kernel = compare.limit_kernels()["nanmoment16"]
        shape = tuple(meta["shape"])
        return lambda: kernel(np.memmap(path, np.uint16, "r", meta["offset"], shape), meta)
    if tool == "dfits":
        import dask.array as da

        import dfits

        return lambda: da.nansum(dfits.open(path)[0].data, axis=0).compute()
    if tool == "fitsio":
        require("fitsio")
        return lambda: np.nansum(compare.fitsio_read(path, meta), axis=0)
    from astropy.io import fits

    return lambda: np.nansum(fits.getdata(path, memmap=False), axis=0)


class ScaledCubeMoment:
    params: ClassVar[list] = [SCALED_TOOLS]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 10, 60.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        return cube_files("i2cube", 16, {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768})

    setup_cache.timeout = 1200

    def setup(self, files, tool):
        path, meta, warm, warm_meta = files
        build_scaled(tool, warm, warm_meta)()  # imports, Numba compilation, dask start-up
        self.run = build_scaled(tool, path, meta)
        prewarm(path)

    def time_moment0(self, files, tool):
        return self.run()

    def peakmem_moment0(self, files, tool):
        return self.run()


CUTOUT_TOOLS = ["dfits", "astropy-memmap", "astropy-eager"]
CUTOUT_OPS = ["spectrum", "moment0", "stdspec", "peakspec"]


def cutout(shape: list[int]) -> tuple[slice, ...]:
    """A box of an eighth of each spatial axis (at least 2 pixels), a quarter in from the corner."""
    _, ny, nx = shape
    by, bx = max(2, ny // 8), max(2, nx // 8)
    return (slice(None), slice(ny // 4, ny // 4 + by), slice(nx // 4, nx // 4 + bx))


def cutout_op(op: str, box):
    """``op`` over a cut-out ``box`` of any array type with numpy's reduction methods."""
    if op == "spectrum":
        return box.mean(axis=(1, 2))
    if op == "moment0":
        return box.sum(axis=0)
    if op == "stdspec":
        return box.std(axis=(1, 2))
    return box.max(axis=(1, 2))


class CubeCutout(_CubeOps):
    """Reductions of a box inside the float32 cube: what a notebook does with a region.

    The box (an eighth of y and of x through every channel) is a strided view in every
    chunk: its rows are not adjacent in the file. ``astropy-memmap`` slices the box out of
    astropy's memory map and reduces it with numpy; it reads only the box's pages.
    """

    params: ClassVar[list] = [CUTOUT_TOOLS, CUTOUT_OPS]

    @staticmethod
    def build(tool: str, op: str, path: str, meta: dict):
        box = cutout(meta["shape"])
        return array_tools(tool, path, lambda a: cutout_op(op, a[box]))

    def time_cutout(self, files, tool, op):
        return self.run()

    def peakmem_cutout(self, files, tool, op):
        return self.run()


WIDEN_TOOLS = ["dfits", "astropy-memmap", "astropy-eager"]
WIDEN_OPS = ["moment0", "mean", "stdmap"]


def widened_op(op: str, x):
    """``op`` after ``astype(np.float64)``, the usual way to ask for float64 sums."""
    wide = x.astype(np.float64)
    if op == "moment0":
        return wide.sum(axis=0)
    return wide.mean() if op == "mean" else wide.std(axis=0)


class CubeWidened(_CubeOps):
    """Reductions of the float32 cube after ``astype(np.float64)``.

    For dfits the cast is exact, so it keeps every chunk stored and the reduction after it
    runs on the stored bytes as without the cast; astropy's arrays are cast to a float64
    copy of the cube first, as numpy must.
    """

    params: ClassVar[list] = [WIDEN_TOOLS, WIDEN_OPS]

    @staticmethod
    def build(tool: str, op: str, path: str, meta: dict):
        return array_tools(tool, path, lambda a: widened_op(op, a))

    def time_widened(self, files, tool, op):
        return self.run()

    def peakmem_widened(self, files, tool, op):
        return self.run()


XARRAY_TOOLS = ["dfits-engine", "dfits-engine-chunks", "astropy-memmap"]
XARRAY_OPS = [
    *("sum-channels", "count", "mean-sky", "masked-moment0", "masked-count"),
    *("masked-std", "masked-floor", "scaled-moment0", "rms-map"),
]
#: the cube's values are uniform in [0, 1): a fifth of them lie above this
MASK_THRESHOLD = 0.8


def xarray_op(op: str, a):
    """``op`` as xarray users write it (``skipna`` left at its default, True for floats)."""
    if op == "sum-channels":
        return a.sum(a.dims[0])
    if op == "count":
        return a.count()
    if op == "masked-moment0":  # a thresholded moment-0 map
        return a.where(a > MASK_THRESHOLD).sum(a.dims[0])
    if op == "masked-count":  # channels above the threshold, per pixel
        return a.where(a > MASK_THRESHOLD).count(a.dims[0])
    if op == "masked-std":  # spread of the values above the threshold, per pixel
        return a.where(a > MASK_THRESHOLD).std(a.dims[0])
    if op == "masked-floor":  # the smallest value above the threshold, per pixel
        return a.where(a > MASK_THRESHOLD).min(a.dims[0])
    if op == "scaled-moment0":  # a unit conversion before the moment-0 map
        return (a * 1e3).sum(a.dims[0])
    if op == "rms-map":  # root mean square over channels, per pixel
        return np.sqrt((a**2).mean(a.dims[0]))
    return a.mean(a.dims[1:])


class CubeXarray(_CubeOps):
    """Plain xarray reductions of the float32 cube.

    ``dfits-engine``: ``xr.open_dataset(path, engine="dfits")`` with its default
    ``chunks=None``, where reductions reach dfits' dask array; ``dfits-engine-chunks``: the
    same with ``chunks={}``, which makes xarray rebuild the dask array over its own adapters
    (decoded chunks); ``astropy-memmap``: a DataArray over astropy's memory map. xarray's
    skipping ``sum`` and ``count`` are ``isnan``/``where`` graphs, not ``np.nansum``; the
    ``masked-`` ops cut the cube at a threshold first (``a.where(a > t)``); ``scaled-moment0``
    multiplies by a constant first and ``rms-map`` squares.
    """

    params: ClassVar[list] = [XARRAY_TOOLS, XARRAY_OPS]

    @staticmethod
    def build(tool: str, op: str, path: str, meta: dict):
        import xarray as xr

        if tool.startswith("dfits-engine"):
            chunks = {} if tool == "dfits-engine-chunks" else None

            def run_engine():
                with xr.open_dataset(path, engine="dfits", chunks=chunks) as ds:
                    return xarray_op(op, next(iter(ds.data_vars.values()))).values

            return run_engine
        from astropy.io import fits

        def run_memmap():
            with fits.open(path) as hl:
                return xarray_op(op, xr.DataArray(hl[0].data)).values

        return run_memmap

    def time_xarray(self, files, tool, op):
        return self.run()

    def peakmem_xarray(self, files, tool, op):
        return self.run()
