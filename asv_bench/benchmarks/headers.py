"""Open a file and walk every header: 1, 100 and 10,000 small image HDUs.

Tools: ``dfits`` (``[h.header for h in dfits.open(path)]``), ``astropy`` (``fits.open`` and
every ``hdu.header``), ``fitsio`` (``read_header`` of every HDU) and ``LIMIT`` (compare.py's
pure-Python block scan that only splits cards into a dict).
"""

from __future__ import annotations

from typing import ClassVar

from . import TINY, compare, data_dir, prewarm, require

TOOLS = ["dfits", "astropy", "fitsio", "LIMIT"]
NHDUS = [1, 3, 20] if TINY else [1, 100, 10_000]
COMPARE_TOOL = {"astropy": "astropy-memmap"}


class OpenWalkHeaders:
    params: ClassVar[list] = [TOOLS, NHDUS]
    param_names: ClassVar[list] = ["tool", "nhdu"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (5, 20, 60.0)
    warmup_time = 0.0
    timeout = 300

    def setup_cache(self):
        out = {}
        for n in [*NHDUS, 2]:
            path = data_dir() / f"headers-{n}.fits"
            if not path.exists():
                part = path.with_suffix(".part")
                compare.write_headers(part, {"nhdu": n})
                part.replace(path)
            out[n] = str(path)
        return out

    setup_cache.timeout = 600

    def setup(self, files, tool, nhdu):
        if tool == "fitsio":
            require("fitsio")
        which = COMPARE_TOOL.get(tool, tool)
        compare.headers_op(which, files[2], {})()  # imports before timing
        self.run = compare.headers_op(which, files[nhdu], {})
        prewarm(files[nhdu])

    def time_open_walk(self, files, tool, nhdu):
        return self.run()
