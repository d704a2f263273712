"""The cube explorer's plane change (issue 47), next to the same read by its peers.

One move of the channel slider reads one plane of the visible window, strided to the view's
512 screen pixels, as float32: ``ExploreModel.plane(k)`` (``section[k, ::d, ::d]``, no dask
graph) against astropy's memory map (``data[k, ::d, ::d]`` copied to float32) and fitsio
(``FITS[0][k:k+1, ::d, ::d]``, which reads the rows it strides over). The cube is float32,
``DFITS_ASV_SIZE`` bytes of 4096 x 4096 planes (8 at the default 512 MiB); each timed call
moves to the next channel, so no plane is read twice in a row.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import TINY, image_bytes, image_file, require

TOOLS = ["dfits", "astropy", "fitsio"]
VIEW = 512


def cube_file() -> tuple[str, int]:
    side = 64 if TINY else 4096
    nchan = max(2, image_bytes() // (4 * side * side))
    path, _ = image_file("explore", "cube", {"shape": [nchan, side, side], "bitpix": -32})
    return path, nchan


def reader(tool: str, path: str, nchan: int):
    """A function of the channel that reads its strided plane, as the tool would."""
    if tool == "dfits":
        from dfits.jupyter.explore_model import ExploreModel

        model = ExploreModel(path, view=(VIEW, VIEW))
        return lambda k: model.plane(k).data
    if tool == "astropy":
        from astropy.io import fits

        data = fits.open(path, memmap=True)[0].data
        step = max(1, data.shape[1] // VIEW)
        return lambda k: np.asarray(data[k, ::step, ::step], np.float32)
    import fitsio

    hdu = fitsio.FITS(path)[0]
    step = max(1, hdu.get_dims()[1] // VIEW)
    return lambda k: np.asarray(hdu[k : k + 1, ::step, ::step][0], np.float32)


class ExplorePlane:
    params: ClassVar[list] = [TOOLS]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (10, 20, 30.0)
    warmup_time = 0.0

    def setup_cache(self):
        return cube_file()

    setup_cache.timeout = 900

    def setup(self, files, tool):
        if tool == "fitsio":
            require("fitsio")
        path, nchan = files
        self.read, self.nchan, self.k = reader(tool, path, nchan), nchan, 0
        self.read(0)  # imports and the first-call dispatch, untimed

    def time_plane_change(self, files, tool):
        self.k = (self.k + 1) % self.nchan
        self.read(self.k)
