"""Tile-compressed images (issue 30): sums, moment-0 and a stamp, dfits against its peers.

The cases and tools are those of ``benchmarks/tiles.py`` (loaded from the repository): a
RICE_1 int16 cube, a SUBTRACTIVE_DITHER_2 float32 image and a 64 x 64 stamp from a RICE_1
image (tiles.py's ``full`` files, or its ``small`` ones when ``DFITS_ASV_SIZE`` is under
512 MiB). ``astropy-eager`` is astropy's ``.data`` (its ``.section`` for the stamp).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import ClassVar

from . import TINY, data_dir, image_bytes, prewarm, require

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tiles.py"


def _load():
    name = "dfits_bench_tiles"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


tiles = _load()
TOOLS = ["dfits", "astropy-eager", "fitsio", "funpack+dfits", "LIMIT"]
FILE_OF = {"cube": "cube", "dither2": "image", "stamp": "big"}
#: tiles.py's scale: "full" (a 1 GiB cube) at the default DFITS_ASV_SIZE, "small" below 512 MiB
SCALE = "tiny" if TINY else "full" if image_bytes() >= 512 << 20 else "small"


class CompressedImages:
    # tiles.py's stamp loops time each stamp themselves; asv repeats the plain stamp instead
    params: ClassVar[list] = [TOOLS, [c for c in tiles.CASES if c not in tiles.LOOPS]]
    param_names: ClassVar[list] = ["tool", "case"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (5, 10, 120.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        paths = tiles.write_files(data_dir() / f"tiles-{SCALE}", SCALE)
        return {k: str(v) for k, v in paths.items()}

    setup_cache.timeout = 1800

    def setup(self, paths, tool, case):
        if tool == "fitsio":
            require("fitsio")
        if tool == "funpack+dfits" and not shutil.which("funpack"):
            raise NotImplementedError("funpack is not installed")
        path = Path(paths[FILE_OF[case.split("-")[0]]])
        self.run = tiles.operation("astropy" if tool == "astropy-eager" else tool, case, path)
        if self.run is None:
            raise NotImplementedError(f"{tool} has no {case}")
        self.run()  # compiles kernels, fills caches
        prewarm(str(path))

    def time_case(self, paths, tool, case):
        return self.run()
