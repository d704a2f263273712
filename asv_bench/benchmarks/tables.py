"""One column of a 30-column BINTABLE summed, and the table's conversion to Parquet.

Tools (``benchmarks/tables.py``'s, which also writes the file): ``dfits``
(``hdu.column("D0").sum()``: the JIT-swap kernel on the strided field), ``astropy``
(``fits.open`` memmap + field + numpy), ``fitsio`` (``read(columns=...)`` + numpy) and
``LIMIT`` (numpy on a strided big-endian view of the mapped field). ``peakmem_parquet``
converts three columns through ``to_dask_dataframe().to_parquet``: its peak must stay bounded
by chunk x threads however large the table. The table is ``DFITS_ASV_SIZE`` bytes (default
512 MiB; a few hundred KiB at ``DFITS_ASV_SCALE=tiny``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import ClassVar

from . import TINY, bench_script, data_dir, image_bytes, prewarm, require

tables = bench_script("tables")
TOOLS = ["dfits", "astropy", "fitsio", "LIMIT"]


def table_file() -> str:
    nrows = max(image_bytes() // tables.row_dtype().itemsize, 1)
    path = data_dir() / f"table-{nrows}.fits"
    if not path.exists():
        part = path.with_suffix(".part")
        tables.write_table(part, nrows)
        part.replace(path)
    return str(path)


class ColumnSum:
    params: ClassVar[list] = [TOOLS]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (5, 10, 60.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        return table_file()

    setup_cache.timeout = 900

    def setup(self, path, tool):
        if tool == "fitsio":
            require("fitsio")
        tables.run_tool(tool, path, "")  # imports and kernel compilation, untimed
        prewarm(path)

    def time_column_sum(self, path, tool):
        return tables.run_tool(tool, path, "")


class ToParquet:
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 5, 120.0)
    warmup_time = 0.0
    timeout = 900

    def setup_cache(self):
        return table_file()

    setup_cache.timeout = 900

    def setup(self, path):
        require("pyarrow")
        self.out = tempfile.mkdtemp(prefix="dfits-asv-parquet-")
        prewarm(path)

    def teardown(self, path):
        shutil.rmtree(self.out, ignore_errors=True)

    def peakmem_parquet(self, path):
        tables.run_tool("parquet", path, str(Path(self.out) / "t.parquet"))
