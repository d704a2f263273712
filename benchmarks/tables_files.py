"""tables.py's files: a 30-column BINTABLE and a 10-field ASCII TABLE, written block by block.

Both are written once (bounded memory) and reused from ``--tmpdir``; the binary one has 10
columns each of E, D and J (160-byte rows), the ASCII one 4 integer (``I11``), 3 fixed
(``F14.6``) and 3 exponent (``E15.7``) fields (134-byte rows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

NCOLS = 10  # of each of E, D, J
COLUMN = "D0"
#: the 3 of 30 columns the ``cols3`` case reads and reduces: one each of E, D, J
THREE = ("E0", "D0", "J0")
#: ASCII fields: (name, TFORM, printf format, width with its leading blank)
ASCII_FIELDS = (
    *((f"I{i}", "I10", "%11d", 11) for i in range(4)),
    *((f"F{i}", "F13.6", "%14.6f", 14) for i in range(3)),
    *((f"E{i}", "E15.7", "%16.7E", 16) for i in range(3)),
)


def row_dtype() -> np.dtype:
    names = [f"{c}{i}" for c in "EDJ" for i in range(NCOLS)]
    types = [">f4"] * NCOLS + [">f8"] * NCOLS + [">i4"] * NCOLS
    return np.dtype(list(zip(names, types, strict=True)))


def _card(key: str, value: object) -> bytes:
    text = f"'{value:<8}'" if isinstance(value, str) else str(value)
    return f"{key:<8}= {text:>20}".ljust(80).encode()


_PRIMARY = [b"SIMPLE  =                    T".ljust(80), _card("BITPIX", 8), _card("NAXIS", 0),
            b"END".ljust(80)]  # fmt: skip


def _head(xtension: str, naxis1: int, nrows: int, fields: list[list[bytes]]) -> list[bytes]:
    head = [
        _card("XTENSION", xtension), _card("BITPIX", 8), _card("NAXIS", 2),
        _card("NAXIS1", naxis1), _card("NAXIS2", nrows), _card("PCOUNT", 0),
        _card("GCOUNT", 1), _card("TFIELDS", len(fields)),
    ]  # fmt: skip
    for cards in fields:
        head += cards
    return [*head, b"END".ljust(80)]


def _write_heads(out, head: list[bytes]) -> None:
    for blob in (b"".join(_PRIMARY), b"".join(head)):
        out.write(blob + b" " * (-len(blob) % 2880))


def write_table(path: Path, nrows: int, block: int = 1 << 16) -> None:
    """A 30-column BINTABLE of ``nrows`` rows, written block by block (bounded memory)."""
    dt = row_dtype()
    fmt = {">f4": "E", ">f8": "D", ">i4": "J"}
    fields = [[_card(f"TTYPE{i}", name), _card(f"TFORM{i}", fmt[dt[name].str])]
              for i, name in enumerate(dt.names, 1)]  # fmt: skip
    rng = np.random.default_rng(7)
    with open(path, "wb") as out:
        _write_heads(out, _head("BINTABLE", dt.itemsize, nrows, fields))
        for first in range(0, nrows, block):
            n = min(block, nrows - first)
            rows = np.empty(n, dt)
            for name in dt.names:
                kind = dt[name].str
                rows[name] = rng.integers(-1000, 1000, n) if kind == ">i4" else rng.random(n)
            out.write(rows.tobytes())
        out.write(b"\0" * (-nrows * dt.itemsize % 2880))


def data_offset() -> int:
    """Where :func:`write_table`'s rows start: a one-block primary, then the table header."""
    ncards = 8 + 2 * len(row_dtype().names) + 1
    return 2880 + -(-ncards * 80 // 2880) * 2880


def ascii_row_bytes() -> int:
    return sum(w for *_, w in ASCII_FIELDS)


def write_ascii_table(path: Path, nrows: int, block: int = 1 << 16) -> None:
    """An ASCII TABLE of ``nrows`` rows of :data:`ASCII_FIELDS`, block by block."""
    fields, col = [], 1
    for i, (name, tform, _, width) in enumerate(ASCII_FIELDS, 1):
        fields.append([_card(f"TTYPE{i}", name), _card(f"TFORM{i}", tform),
                       _card(f"TBCOL{i}", col + 1)])  # fmt: skip
        col += width
    row = ascii_row_bytes()
    rng = np.random.default_rng(11)
    with open(path, "wb") as out:
        _write_heads(out, _head("TABLE", row, nrows, fields))
        for first in range(0, nrows, block):
            n = min(block, nrows - first)
            rows = np.empty((n, row), np.uint8)
            at = 0
            for name, _, fmt, width in ASCII_FIELDS:
                kind = name[0]
                values = (rng.integers(-10**9, 10**9, n) if kind == "I"
                          else rng.normal(size=n) * (1e3 if kind == "F" else 1e-5))  # fmt: skip
                text = np.char.mod(fmt, values).astype(f"S{width}")
                rows[:, at : at + width] = text.view(np.uint8).reshape(n, width)
                at += width
            out.write(rows.tobytes())
        out.write(b" " * (-nrows * row % 2880))


def ensure(path: Path, write, nrows: int) -> Path:
    """``path`` written by ``write(part, nrows)`` unless it is there already."""
    if not path.exists():
        part = path.with_suffix(".part")
        write(part, nrows)
        part.replace(path)
    return path
