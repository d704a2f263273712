"""One column of a 30-column BINTABLE summed, and the table's conversion to Parquet.

Tools (``benchmarks/tables.py``'s, which also writes the file): ``dfits``
(``hdu.column("D0").sum()``: the JIT-swap kernel on the strided field), ``astropy``
(``fits.open`` memmap + field + numpy), ``fitsio`` (``read(columns=...)`` + numpy) and
``LIMIT`` (numpy on a strided big-endian view of the mapped field). ``peakmem_parquet``
converts three columns through ``to_dask_dataframe().to_parquet``: its peak must stay bounded
by chunk x threads however large the table (twin: ``astropy-eager``, ``Table.read`` then
pandas' ``to_parquet``). The table is ``DFITS_ASV_SIZE`` bytes (default
512 MiB; a few hundred KiB at ``DFITS_ASV_SCALE=tiny``).

``TableCases`` times the other cases of ``tables.py`` with its tools: ``cols3`` (three of the
30 columns read and summed), ``pandas`` (the whole table to a DataFrame) and ``ascii`` (every
field of a 10-field ASCII TABLE of 10^6 rows parsed; 2,000 at tiny scale). ``TableWhere`` reads
three columns of the rows where ``D0 > 0`` (``hdu.read(..., where=...)``) against
astropy-eager's and fitsio's reads and a numpy mask.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import ClassVar

import numpy as np

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


class TableCases:
    params: ClassVar[list] = [["cols3", "pandas", "ascii"], [*TOOLS, "astropy-table"]]
    param_names: ClassVar[list] = ["case", "tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (5, 10, 120.0)
    warmup_time = 0.0
    timeout = 900

    def setup_cache(self):
        files = tables.table_files(data_dir(), image_bytes(), 2000 if TINY else 10**6)
        return {k: str(v) for k, v in files.items()}

    setup_cache.timeout = 1800

    def setup(self, paths, case, tool):
        if tool not in tables.OPS[case]:
            raise NotImplementedError(f"{tool} has no {case} case")
        if tool == "fitsio":
            require("fitsio")
        self.path = paths["ascii" if case == "ascii" else "binary"]
        tables.run_case(case, tool, self.path, "")  # imports and kernel compilation, untimed
        prewarm(self.path)

    def time_case(self, paths, case, tool):
        return tables.run_case(case, tool, self.path, "")


WHERE_COLUMNS, WHERE = ["E0", "D0", "J0"], "D0 > 0"  # about half the rows


def where_op(tool: str, path: str):
    """Three columns of the rows where ``D0 > 0``, summed (so tools can be compared):
    ``hdu.read(columns, where=...)``, or the table read then a numpy mask."""
    if tool == "dfits":
        import dfits

        def run_dfits():  # opened in the timed call, as the others read theirs
            cols = dfits.open(path)[1].read(WHERE_COLUMNS, where=WHERE)
            return np.array([cols[c].sum() for c in WHERE_COLUMNS])

        return run_dfits
    if tool == "fitsio":
        require("fitsio")
        import fitsio

        def run_fitsio():
            rows = fitsio.read(path, ext=1, columns=WHERE_COLUMNS)
            return np.array([rows[c][rows["D0"] > 0].sum() for c in WHERE_COLUMNS])

        return run_fitsio
    from astropy.io import fits

    def run_astropy():
        rows = fits.getdata(path, 1, memmap=False)
        keep = rows["D0"] > 0
        return np.array([rows[c][keep].sum() for c in WHERE_COLUMNS])

    return run_astropy


class TableWhere:
    """A row filter: ``hdu.read(columns, where="D0 > 0")`` against astropy-eager's and
    fitsio's whole-table reads and a numpy mask."""

    params: ClassVar[list] = [["dfits", "astropy-eager", "fitsio"]]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (5, 10, 120.0)
    warmup_time = 0.0
    timeout = 600

    def setup_cache(self):
        return table_file()

    setup_cache.timeout = 900

    def setup(self, path, tool):
        self.run = where_op(tool, path)
        self.run()  # imports and kernels, untimed
        prewarm(path)

    def time_where(self, path, tool):
        return self.run()


PARQUET_COLUMNS = ["E0", "D0", "J0"]  # tables_ops.dfits_parquet's


def astropy_parquet(path: str, out: str) -> None:
    """The astropy-eager twin of the conversion: ``Table.read`` of the HDU, the same three
    columns to pandas, ``to_parquet``."""
    from astropy.table import Table

    Table.read(path, hdu=1)[PARQUET_COLUMNS].to_pandas().to_parquet(out, index=False)


class ToParquet:
    params: ClassVar[list] = [["dfits", "astropy-eager"]]
    param_names: ClassVar[list] = ["tool"]
    number = 1
    repeat = (1, 1, 1.0) if TINY else (3, 5, 120.0)
    warmup_time = 0.0
    timeout = 900

    def setup_cache(self):
        return table_file()

    setup_cache.timeout = 900

    def setup(self, path, tool):
        require("pyarrow")
        self.out = tempfile.mkdtemp(prefix="dfits-asv-parquet-")
        prewarm(path)

    def teardown(self, path, tool):
        shutil.rmtree(self.out, ignore_errors=True)

    def peakmem_parquet(self, path, tool):
        out = str(Path(self.out) / "t.parquet")
        if tool == "astropy-eager":
            return astropy_parquet(path, out)
        return tables.run_tool("parquet", path, out)
