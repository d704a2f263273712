"""Writing FITS: a float64 image written, its checksums verified, and written RICE_1-compressed.

The tools and their code are ``benchmarks/write.py``'s (``--source memory``): the image
(``DFITS_ASV_SIZE`` bytes, default 512 MiB; 256 KiB at ``DFITS_ASV_SCALE=tiny``) is loaded in
``setup`` and every tool writes it to a fresh file, removed after each run.

* ``WriteImage``: ``dfits`` (``dfits.to_fits`` of ``da.from_array``, CHECKSUM/DATASUM and
  fsync on), ``dfits-nosum`` (checksum off), ``astropy-eager`` (``fits.writeto`` of the
  array), ``fitsio`` (``fitsio.write``) and ``numpy-tofile`` (raw bytes, no header: the
  bandwidth limit);
* ``VerifyChecksum``: ``dfits.verify_checksum`` against astropy's ``verify_checksum`` /
  ``verify_datasum`` and write.py's ``LIMIT`` kernel (a Numba ones'-complement sum of the
  file's words, told the layout);
* ``CompressImage``: RICE_1, one image row per tile, floats quantised at level 16: dfits,
  astropy's ``CompImageHDU`` and cfitsio's ``fpack`` (file to file).
"""

from __future__ import annotations

import os
import shutil
from typing import ClassVar

import numpy as np

from . import TINY, bench_script, data_dir, image_bytes, require

write = bench_script("write")
TOOL = {"astropy-eager": "astropy"}  # write.py's name of the tool


def source_files() -> tuple[str, str]:
    """``(npy, fits)`` of the image, written once per data folder."""
    folder = data_dir() / f"write-{image_bytes()}"
    npy, fits_path = folder / "src.npy", folder / "src.fits"
    if not fits_path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        write._prepare(str(folder), image_bytes())
    return str(npy), str(fits_path)


class _Writes:
    tools: ClassVar[list] = []
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 10, 120.0)
    warmup_time = 0.0
    timeout = 900

    def setup_cache(self):
        return source_files()

    setup_cache.timeout = 900

    def setup(self, files, tool):
        import dask.array as da

        if tool == "fitsio":
            require("fitsio")
        if tool == "fpack-rice" and not shutil.which("fpack"):
            raise NotImplementedError("fpack is not installed")
        self.npy, self.src = files
        self.out = str(data_dir() / f"out-{os.getpid()}.fits")
        self.tool = TOOL.get(tool, tool)
        small = np.random.default_rng(1).random((64, 64))
        if tool != "fpack-rice":  # imports and kernels, untimed
            write._write(self.tool, small, da.from_array(small, chunks=(16, 64)), self.out)
        self.a = np.load(self.npy)
        self.x = da.from_array(self.a)

    def teardown(self, files, tool):
        if os.path.exists(self.out):
            os.unlink(self.out)


class WriteImage(_Writes):
    params: ClassVar[list] = [["dfits", "dfits-nosum", "astropy-eager", "fitsio", "numpy-tofile"]]
    param_names: ClassVar[list] = ["tool"]

    def time_write(self, files, tool):
        write._write(self.tool, self.a, self.x, self.out, self.src)


class CompressImage(_Writes):
    params: ClassVar[list] = [["dfits-rice", "astropy-rice", "fpack-rice"]]
    param_names: ClassVar[list] = ["tool"]

    def time_compress(self, files, tool):
        write._write(self.tool, self.a, self.x, self.out, self.src)


class VerifyChecksum:
    params: ClassVar[list] = [["dfits-verify", "astropy-verify", "LIMIT"]]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 10, 120.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        return source_files()

    setup_cache.timeout = 900

    def setup(self, files, tool):
        self.src = files[1]
        self.kernel = write._limit_kernel() if tool == "LIMIT" else None
        write._verify(tool, self.src, self.kernel)  # imports and compilation, untimed

    def time_verify(self, files, tool):
        return write._verify(tool, self.src, self.kernel)
