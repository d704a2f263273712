"""``import dfits`` must stay cheap: numba, dask and astropy load on first use, kernels compile
on first call. ``timeraw_`` benchmarks run in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numba", "dask", "astropy", "xarray", "llvmlite")


def timeraw_import_dfits():
    return "import dfits"


def timeraw_import_numpy():  # the floor: dfits needs numpy anyway
    return "import numpy"


def track_heavy_modules_after_import():
    """How many of numba, dask, astropy, xarray and llvmlite ``import dfits`` loads (want 0)."""
    code = f"import sys, dfits; print(sum(m in sys.modules for m in {HEAVY!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


track_heavy_modules_after_import.unit = "modules"


def timeraw_cold_start_first_sum():
    """Fresh process: import, open, the first reduction (kernels loaded from Numba's cache,
    which the setup code fills; ``dfits warm`` does the same ahead of time)."""
    setup = (
        "import numpy as np, tempfile, os; from astropy.io import fits; "
        "d = tempfile.mkdtemp(); p = os.path.join(d, 'c.fits'); "
        "fits.PrimaryHDU(np.ones((16, 64, 64), np.float32)).writeto(p); "
        "import dfits; dfits.open(p)[0].data.sum(axis=0).compute()"
    )
    return "import dfits; dfits.open(p)[0].data.sum(axis=0).compute()", setup
