"""Cut-outs: 1000 random 32x32 stamps (fixed seed) from a 4000x4000 float32 image.

Every tool opens the file inside the timed region, as a cut-out service would. Tools:
``dfits`` (``hdu.section``), ``fitsio`` (``FITS(path)[0][y:y+32, x:x+32]``), ``astropy-section``
(``fits.open(path)[0].section``), ``LIMIT`` (``np.memmap('>f4')`` slice, ``astype`` native) and
``numpy-native`` (slice copies of an in-memory array loaded in ``setup``).
"""

from __future__ import annotations

from typing import ClassVar

from . import TINY, compare, image_file, prewarm, require

TOOLS = ["dfits", "fitsio", "astropy-section", "LIMIT", "numpy-native"]
COMPARE_TOOL = {"astropy-section": "astropy-memmap"}


class Stamps:
    params: ClassVar[list] = [TOOLS]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (5, 20, 60.0)
    warmup_time = 0.0
    timeout = 300

    def setup_cache(self):
        full = {"shape": [256, 256] if TINY else [4000, 4000], "bitpix": -32}
        warm = {"shape": [64, 64], "bitpix": -32}
        path, meta = image_file("stamps-data", "stamps", full)
        wpath, wmeta = image_file("stamps-warm", "stamps", warm)
        meta["nstamps"], wmeta["nstamps"] = (10 if TINY else 1000), 4
        return path, meta, wpath, wmeta

    setup_cache.timeout = 600

    def setup(self, files, tool):
        path, meta, warm, warm_meta = files
        if tool == "fitsio":
            require("fitsio")
        which = COMPARE_TOOL.get(tool, tool)
        compare.stamps_op(which, warm, warm_meta)()
        self.run = compare.stamps_op(which, path, meta)
        prewarm(path)

    def time_stamps(self, files, tool):
        return self.run()
