"""Full reductions (sum, mean, std, nanmax) of 2-D images, dfits next to every other way.

Three images of the same byte size: float64, float32 and BITPIX=16 with BSCALE=0.5, BZERO=10
and BLANK=-32768 on ~1% of pixels. BLANK pixels are NaN in physical values, so on the int16
image every reduction is the NaN-skipping one (``nansum``, ``nanmean``, ``nanstd``, ``nanmax``).

Tools (``tool`` parameter), all timed in the same class so their ratios come from one run:

* ``dfits``: ``dfits.open(path)[0].data`` and the dask reduction, ``.compute()``;
* ``LIMIT``: hand-written Numba swap-in-loop kernel on a native unsigned ``np.memmap``;
* ``numpy-native``: numpy on an in-memory native array loaded in ``setup`` (a reference);
* ``numpy-rawint``: hand-tuned numpy on the stored integers (``compare.rawint_nanmean``):
  the nanmean of the int16 image only, the baseline the kernel issue's goal names;
* ``astropy-eager``: ``fits.getdata(memmap=False)`` then numpy;
* ``astropy-memmap``: ``fits.open(path)[0].data`` (memory-mapped where astropy can) then numpy;
* ``fitsio``: ``fitsio.read`` then numpy (BLANK turned into NaN by hand);
* ``dask-from-array``: ``da.from_array`` over astropy's memmap, ``chunks="auto"``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from . import TINY, compare, image_bytes, image_file, prewarm, require
from ._limit import limit_reduction

TOOLS = [
    "dfits",
    "LIMIT",
    "numpy-native",
    "numpy-rawint",
    "astropy-eager",
    "astropy-memmap",
    "fitsio",
    "dask-from-array",
]
OPS = ["sum", "mean", "std", "nanmax"]
SCALED = {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768}
IMAGES = {  # name: (compare's generator kind, BITPIX, extra cards)
    "f8": ("f8img", -64, {}),
    "f4": ("f4img", -32, {}),
    "i2": ("i2img", 16, SCALED),
}
WIDTH = 4096


def make_images() -> dict:
    """``{name: (path, meta, warm_path, warm_meta)}`` for the three images."""
    out = {}
    for name, (kind, bitpix, cards) in IMAGES.items():
        rows = max(1, image_bytes() // (abs(bitpix) // 8 * WIDTH))
        files = [
            image_file(
                f"reduce-{name}-{tag}", kind, {"shape": [n, WIDTH], "bitpix": bitpix, **cards}
            )
            for tag, n in (("data", rows), ("warm", 4))
        ]
        out[name] = (*files[0], *files[1])
    return out


def func_name(op: str, nan: bool) -> str:
    return op if op == "nanmax" or not nan else f"nan{op}"


def build(tool: str, op: str, path: str, meta: dict):
    """A zero-argument callable doing the timed work; its setup is done here, untimed."""
    nan = "BLANK" in meta
    name = func_name(op, nan)
    np_func = getattr(np, name)
    if tool == "LIMIT":
        kernel = limit_reduction(meta["bitpix"], op)
        udt = {-64: np.uint64, -32: np.uint32, 16: np.uint16}[meta["bitpix"]]
        size = math.prod(meta["shape"])
        return lambda: kernel(np.memmap(path, udt, "r", meta["offset"], (size,)), meta)
    if tool == "numpy-native":
        a = compare.native(path, meta)
        return lambda: np_func(a)
    if tool == "numpy-rawint":
        if name != "nanmean":
            raise NotImplementedError("the raw-integer idiom is a nanmean of scaled integers")
        return lambda: compare.rawint_nanmean(path, meta)
    if tool == "fitsio":
        require("fitsio")
        return lambda: np_func(compare.fitsio_read(path, meta))
    import dask.array as da

    if tool == "dfits":
        import dfits

        return lambda: getattr(da, name)(dfits.open(path)[0].data).compute()
    from astropy.io import fits

    if tool == "astropy-eager":
        return lambda: np_func(fits.getdata(path, memmap=False))

    def run():
        with fits.open(path) as hl:
            if tool == "astropy-memmap":
                return np_func(hl[0].data)
            return getattr(da, name)(da.from_array(hl[0].data, chunks="auto")).compute()

    return run


class _Reduce:
    """Base class; subclasses pick the image with ``image``."""

    image = "f8"
    params: ClassVar[list] = [TOOLS, OPS]
    param_names: ClassVar[list] = ["tool", "op"]
    number = 1
    repeat = (3, 10, 60.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):  # one key for every subclass: the three images are written once
        return make_images()

    setup_cache.timeout = 1200

    def setup(self, files, tool, op):
        path, meta, warm, warm_meta = files[self.image]
        build(tool, op, warm, warm_meta)()  # imports, Numba compilation, dask start-up
        self.run = build(tool, op, path, meta)
        prewarm(path)

    def time_reduce(self, files, tool, op):
        return self.run()

    def peakmem_reduce(self, files, tool, op):
        return self.run()


class ReduceFloat64(_Reduce):
    image = "f8"


class ReduceFloat32(_Reduce):
    image = "f4"


class ReduceScaledInt16(_Reduce):
    image = "i2"


if TINY:  # a smoke run: one repeat is plenty
    _Reduce.repeat = (1, 1, 1.0)
