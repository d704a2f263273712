"""Smoothing a spectral cube (issue 45), dfits next to its peers.

On the demo's synthetic ALMA-like cube with a beam (``dfits.demo.make_cube``; the channels,
y and x of ``benchmarks/spectral.py``'s ``--shape``, here sized from ``DFITS_ASV_SIZE``: an
eighth of an image's bytes, since spectral-cube convolves spectrum by spectrum), each case
runs on the whole cube and, but ``downsample``, ends in the moment-0 map:

* ``smooth_spectral``: a Gaussian of sigma = 2 channels along the spectral axis;
* ``smooth_spatial``: a Gaussian of sigma = 2 pixels in every plane;
* ``downsample``: block means of 4 channels.

Tools: ``dfits`` (the ``.fits`` accessor on the engine-opened cube, lazy and fused with the
decode), ``spectral-cube`` (eager: its own ``spectral_smooth``/``spatial_smooth``/
``downsample_axis`` then ``moment0``) and ``scipy`` (``fits.getdata``, NaN to 0, then
``scipy.ndimage.gaussian_filter1d``/``gaussian_filter`` and numpy's sum: the hand-written
eager route a user would write).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import TINY, data_dir, image_bytes, require

TOOLS = ["dfits", "spectral-cube", "scipy"]
CASES = ["smooth_spectral", "smooth_spatial", "downsample"]
BEAM = (("BMAJ", 4.0e-4), ("BMIN", 3.0e-4), ("BPA", 30.0))


def cube_file() -> str:
    from dfits.demo import make_cube

    nchan = 16 if TINY else 64
    side = 32 if TINY else int(np.sqrt(image_bytes() // 8 // 4 // nchan))
    path = data_dir() / f"smooth-{nchan}x{side}x{side}.fits"
    if not path.exists():
        part = path.with_suffix(".part")
        make_cube(str(part), shape=(nchan, side, side), cards=BEAM)
        part.replace(path)
    return str(path)


def dfits_run(case: str, path: str) -> np.ndarray:
    import xarray as xr

    f = xr.open_dataarray(path, engine="dfits").fits
    if case == "downsample":
        return np.asarray(f.downsample_axis(4).data.compute())
    if case == "smooth_spectral":
        smoothed = f.spectral_smooth(2.0)
    else:  # a Jy/beam cube: smoothing changes the beam, as spectral-cube is told too
        smoothed = f.spatial_smooth(2.0, raise_error_jybm=False)
    return np.asarray(smoothed.fits.moment(0).data.compute())


def spectral_cube_run(case: str, path: str) -> np.ndarray:
    import warnings

    from astropy.convolution import Gaussian1DKernel, Gaussian2DKernel
    from spectral_cube import SpectralCube

    warnings.simplefilter("ignore")
    sc = SpectralCube.read(path)
    if case == "downsample":
        return np.asarray(sc.downsample_axis(4, 0, progressbar=False).filled_data[:].value)
    if case == "smooth_spectral":
        sc = sc.spectral_smooth(Gaussian1DKernel(2.0))
    else:
        sc = sc.spatial_smooth(Gaussian2DKernel(2.0), raise_error_jybm=False)
    return np.asarray(sc.moment0().value)


def scipy_run(case: str, path: str) -> np.ndarray:
    from astropy.io import fits
    from scipy import ndimage

    data = np.nan_to_num(fits.getdata(path).astype(np.float32))  # scipy cannot skip NaN
    if case == "downsample":
        n = data.shape[0] // 4 * 4
        return data[:n].reshape(-1, 4, *data.shape[1:]).mean(axis=1)
    if case == "smooth_spectral":
        data = ndimage.gaussian_filter1d(data, 2.0, axis=0, mode="constant", truncate=4.0)
    else:
        data = ndimage.gaussian_filter(data, (0, 2.0, 2.0), mode="constant", truncate=4.0)
    return data.sum(axis=0)


RUNS = {"dfits": dfits_run, "spectral-cube": spectral_cube_run, "scipy": scipy_run}


class Smoothing:
    params: ClassVar[list] = [CASES, TOOLS]
    param_names: ClassVar[list] = ["case", "tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 5, 120.0)
    warmup_time = 0.0
    timeout = 1800

    def setup_cache(self):
        return cube_file()

    setup_cache.timeout = 900

    def setup(self, path, case, tool):
        if tool == "spectral-cube":
            require("spectral_cube")
        self.run = RUNS[tool]
        if tool == "dfits":
            dfits_run(case, path)  # imports and kernel loading, untimed

    def time_smooth(self, path, case, tool):
        self.run(case, path)

    def peakmem_smooth(self, path, case, tool):
        self.run(case, path)
