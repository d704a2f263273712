"""tables.py's catalogue cases: a 14-column table whose last column holds variable-length
arrays (``1PE``), as survey catalogues carry spectra or light curves.

:func:`write_catalogue` writes ``nrows`` rows of 6 ``E``, 4 ``D`` and 3 ``J`` columns and a
``PE`` column of 0 to 8 float32 elements per row (the heap in row order, as writers lay it
out), block by block. Each tool returns the row count, the sum of ``D0`` and the sum of every
element of ``V``:

* ``vla_pandas``: the whole table to pandas. ``dfits``: ``hdu.to_pandas()``; ``dfits-novla``:
  the 13 other columns only (issue 44's goal: the VLA column at most doubles the time);
  ``astropy-table``: ``Table.read(...).to_pandas()``.
* ``vla_arrow``: the whole table to Arrow (``dfits``: ``hdu.to_arrow()``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tables_files import _card, _write_heads
from tables_ops import Op

SCALARS = [*(f"E{i}" for i in range(6)), *(f"D{i}" for i in range(4))]
SCALARS += [f"J{i}" for i in range(3)]
_FORMS = {"E": (">f4", "E"), "D": (">f8", "D"), "J": (">i4", "J")}
MAX_ELEMENTS = 8


def _row_dtype() -> np.dtype:
    fields = [(n, _FORMS[n[0]][0]) for n in SCALARS]
    return np.dtype([*fields, ("V", ">i4", (2,))])


def write_catalogue(path: Path, nrows: int, block: int = 1 << 16) -> None:
    """The catalogue of ``nrows`` rows (bounded memory: a block of rows at a time)."""
    rng = np.random.default_rng(44)
    counts = rng.integers(0, MAX_ELEMENTS + 1, nrows).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]) * 4
    heap = int(counts.sum()) * 4
    dt = _row_dtype()
    head = [
        _card("XTENSION", "BINTABLE"), _card("BITPIX", 8), _card("NAXIS", 2),
        _card("NAXIS1", dt.itemsize), _card("NAXIS2", nrows), _card("PCOUNT", heap),
        _card("GCOUNT", 1), _card("TFIELDS", len(SCALARS) + 1),
    ]  # fmt: skip
    for i, name in enumerate(SCALARS, 1):
        head += [_card(f"TTYPE{i}", name), _card(f"TFORM{i}", _FORMS[name[0]][1])]
    n = len(SCALARS) + 1
    head += [_card(f"TTYPE{n}", "V"), _card(f"TFORM{n}", f"1PE({MAX_ELEMENTS})")]
    with open(path, "wb") as out:
        _write_heads(out, [*head, b"END".ljust(80)])
        for first in range(0, nrows, block):
            k = min(block, nrows - first)
            rows = np.empty(k, dt)
            for name in SCALARS:
                draw = rng.integers(-1000, 1000, k) if name[0] == "J" else rng.random(k)
                rows[name] = draw
            rows["V"][:, 0] = counts[first : first + k]
            rows["V"][:, 1] = offsets[first : first + k]
            out.write(rows.tobytes())
        done = 0
        while done < counts.sum():
            k = min(1 << 22, int(counts.sum()) - done)
            out.write(rng.standard_normal(k).astype(">f4").tobytes())
            done += k
        out.write(b"\0" * (-(nrows * dt.itemsize + heap) % 2880))


def _check(n: int, d0, cells) -> list[float]:
    total = float(sum(np.sum(c, dtype=np.float64) for c in cells))
    return [float(n), float(np.asarray(d0, np.float64).sum()), total]


def dfits_pandas(path: str, out: str) -> list[float]:
    import dfits

    frame = dfits.open(path)[1].to_pandas()
    return _check(len(frame), frame["D0"], [np.concatenate(frame["V"].to_list())])


def dfits_pandas_novla(path: str, out: str) -> list[float]:
    import dfits

    frame = dfits.open(path)[1].to_pandas(SCALARS)
    return [float(len(frame)), float(frame["D0"].sum())]  # no V: the others' first two


def astropy_pandas(path: str, out: str) -> list[float]:
    from astropy.table import Table

    frame = Table.read(path, hdu=1).to_pandas()
    return _check(len(frame), frame["D0"], [np.concatenate(frame["V"].to_list())])


def dfits_arrow(path: str, out: str) -> list[float]:
    import dfits

    table = dfits.open(path)[1].to_arrow()
    values = table["V"].combine_chunks().values.to_numpy()
    return _check(table.num_rows, table["D0"].to_numpy(), [values])


#: case -> tool -> operation
OPS: dict[str, dict[str, Op]] = {
    "vla_pandas": {
        "dfits": dfits_pandas,
        "dfits-novla": dfits_pandas_novla,
        "astropy-table": astropy_pandas,
    },
    "vla_arrow": {"dfits": dfits_arrow},
}
