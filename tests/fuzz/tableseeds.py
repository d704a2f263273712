"""Table seed files for the fuzz campaign's table cases (issue 44): every column kind.

Binary tables are written byte by byte by :func:`tests.tables.generated.write_binary` (the
generator of the table route tests, so the fuzz seeds hold exactly the kinds those tests
compare): scalars of every TFORM (L, X bits, B, I, J, K, E, D, C, M, A), fixed arrays with
TDIMn, TNULLn nulls, TSCALn/TZEROn scaling (unsigned and int8 via TZEROn too), and
variable-length P and Q columns of several element types (J, D, A, E with TDIMn, L). The
kinds are split over a few small tables (a case costs a few milliseconds per column), each
of :data:`ROWS` rows. Then the ASCII table of every ASCII kind, and tile-compressed tables
(ZTABLE) of each group, compressed by :func:`tests.tables.test_tiled.compress_table` (the
convention as cfitsio lays it out) with every algorithm, mixed per column, in tiles of 3
rows, with 64-bit (``1QB``) and 32-bit (``1PB``) cells. Everything is generated in code:
the same bytes on every machine, so table case ``k`` of seed ``S`` is the same file
everywhere.
"""

from __future__ import annotations

import functools
import tempfile
import warnings
from pathlib import Path

__all__ = ["GROUPS", "ROWS", "table_seeds"]

#: rows of every seed table: more than one tile of 3, few enough to stay fast
ROWS = 7
#: the binary kinds of :data:`tests.tables.generated.BINARY`, in small tables
GROUPS: dict[str, list[str]] = {
    "scalars": ["L", "B", "I", "J", "K", "E", "D", "A"],
    "nulls": ["nB", "nI", "nJ", "nK", "sI", "sJ"],
    "scaled": ["sK", "sE", "uI", "uJ", "uK", "i8"],
    "cells": ["X", "Ad", "E3", "nJd", "sIa", "C", "M"],
    "varlen": ["PJ", "QD", "PA", "PEd", "PL"],
}
_ALGORITHMS = ("GZIP_1", "GZIP_2", "RICE_1", "NOCOMPRESS")


def _binary(folder: Path) -> dict[str, bytes]:
    from tests.tables.generated import write_binary

    out = {}
    for k, (group, kinds) in enumerate(GROUPS.items()):
        path = write_binary(folder / f"{group}.fits", 44 + k, ROWS, kinds)
        out[f"table-{group}"] = path.read_bytes()
    return out


def _tiled(folder: Path) -> dict[str, bytes]:
    from tests.tables.test_tiled import compress_table

    out = {}
    for k, group in enumerate(GROUPS):
        src = folder / f"{group}.fits"
        # each column its own algorithm (RICE_1 falls back to GZIP_1 where it cannot code)
        chosen = {name: _ALGORITHMS[(k + i) % 4] for i, name in enumerate(GROUPS[group])}
        word = "P" if k % 2 else "Q"
        dst = compress_table(src, folder / f"{group}.fz", 3, chosen, word=word)
        out[f"ztable-{group}"] = dst.read_bytes()
    return out


@functools.cache
def table_seeds() -> tuple[tuple[str, bytes], ...]:
    """Every table seed as ``(name, bytes)``, in a fixed order: the binary tables, the ASCII
    table, then the tile-compressed tables."""
    from tests.tables.generated import write_ascii

    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")
        folder = Path(tmp)
        found = _binary(folder)
        found["table-ascii"] = write_ascii(folder / "ascii.fits", 44, ROWS).read_bytes()
        found.update(_tiled(folder))
    return tuple(found.items())
