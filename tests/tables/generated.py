"""Binary and ASCII tables holding every column kind, written byte by byte from a seed.

Each kind names its TFORMn, its keywords and how its stored values are drawn, so a test
controls what astropy's writer would not write (TNULLn on scaled and unsigned columns,
NUL logicals, TDIMn on strings and variable-length arrays). Nulls are drawn into the
columns that have a TNULLn (and blanks into ASCII fields) at about a third of the rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.tablefiles import write_table

__all__ = ["ASCII", "BINARY", "write_ascii", "write_binary"]

#: name -> (TFORM, keywords, stored dtype, cell shape); the name's first letters say the kind:
#: n = TNULLn, s = scaled, u = unsigned (TZERO 2**(n-1)), i8 = TZERO -128, d = TDIMn
BINARY: dict[str, tuple[str, dict, str, tuple[int, ...]]] = {
    "B": ("B", {}, ">u1", ()),
    "I": ("I", {}, ">i2", ()),
    "J": ("J", {}, ">i4", ()),
    "K": ("K", {}, ">i8", ()),
    "E": ("E", {}, ">f4", ()),
    "D": ("D", {}, ">f8", ()),
    "nB": ("B", {"TNULL": 3}, ">u1", ()),
    "nI": ("I", {"TNULL": -7}, ">i2", ()),
    "nJ": ("J", {"TNULL": -999}, ">i4", ()),
    "nK": ("K", {"TNULL": 2**62 + 1}, ">i8", ()),
    "sI": ("I", {"TSCAL": 2.5, "TZERO": -1.0, "TNULL": -7}, ">i2", ()),
    "sJ": ("J", {"TSCAL": 0.5, "TZERO": 3.0, "TNULL": -999}, ">i4", ()),
    "sK": ("K", {"TSCAL": 4.0, "TZERO": 0.25}, ">i8", ()),
    "sE": ("E", {"TSCAL": 2.0, "TZERO": 1.0}, ">f4", ()),
    # the unsigned and int8 conventions ignore TNULLn (as astropy does): integers stay
    "uI": ("I", {"TZERO": 32768, "TNULL": 7}, ">i2", ()),
    "uJ": ("J", {"TZERO": 2147483648}, ">i4", ()),
    "uK": ("K", {"TZERO": 9223372036854775808}, ">i8", ()),
    "i8": ("B", {"TZERO": -128}, ">u1", ()),
    "L": ("L", {}, "u1", ()),
    "X": ("11X", {}, "u1", (2,)),
    "A": ("6A", {}, "S6", ()),
    "Ad": ("12A", {"TDIM": "(4,3)"}, "S12", ()),
    "E3": ("3E", {}, ">f4", (3,)),
    "nJd": ("6J", {"TDIM": "(3,2)", "TNULL": -1}, ">i4", (2, 3)),
    "sIa": ("2I", {"TSCAL": 0.5, "TNULL": 0}, ">i2", (2,)),
    "C": ("C", {}, ">c8", ()),
    "M": ("M", {}, ">c16", ()),
    "PJ": ("1PJ(5)", {}, ">i4", (2,)),
    "QD": ("1QD(5)", {}, ">i8", (2,)),
    "PA": ("1PA(7)", {}, ">i4", (2,)),
    "PEd": ("1PE(8)", {"TDIM": "(2,4)"}, ">i4", (2,)),
    "PL": ("1PL(5)", {}, ">i4", (2,)),
}

#: name -> (TFORM, TNULL or None, printf format)
ASCII: dict[str, tuple[str, str | None, str]] = {
    "aI": ("I6", "-99", "{:6d}"),
    "aIb": ("I4", None, "{:4d}"),
    "aK": ("I20", None, "{:20d}"),
    "aF": ("F9.3", None, "{:9.3f}"),
    "aE": ("E12.4", None, "{:12.4E}"),
    "aD": ("D22.14", None, "{:22.14E}"),
    "aA": ("A5", None, "{:>5s}"),
    "saI": ("I6", "-99", "{:6d}"),  # scaled (ASCII_SCALED), with TNULLn
    "saF": ("F9.3", None, "{:9.3f}"),  # scaled (ASCII_SCALED)
}
#: TSCALn, TZEROn of the scaled ASCII kinds (fuzzing found them ignored once)
ASCII_SCALED = {"saI": (2.5, -7.0), "saF": (2.0, 10.0)}


def _values(rng, name: str, n: int) -> np.ndarray:
    _, keys, stored, cell = BINARY[name]
    shape = (n, *cell)
    dt = np.dtype(stored)
    if name == "L":
        return rng.choice(np.array([ord("T"), ord("F"), 0], np.uint8), shape)
    if name == "X":
        return rng.integers(0, 256, shape, dtype=np.uint8)
    if dt.kind == "S":
        pool = ["", "a", "ab c", "xyz  ", "Q" * dt.itemsize, " lead"]
        return np.array([pool[i][: dt.itemsize] for i in rng.integers(0, 6, n)], dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) * 1e3 + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind == "f":
        values = (rng.standard_normal(shape) * 1e3).astype(dt)
        odd = rng.random(shape)
        values[odd < 0.1] = np.nan
        values[(odd > 0.97) & (name == "D")] = np.inf
        return values
    info = np.iinfo(dt)
    values = rng.integers(info.min, info.max, shape, dtype=dt.newbyteorder("="), endpoint=True)
    if "TNULL" in keys:
        values[rng.random(shape) < 0.3] = keys["TNULL"]
    return values.astype(dt)


def _heap_column(rng, name: str, n: int, heap: bytearray) -> np.ndarray:
    """Descriptors of a variable-length column, its arrays appended to ``heap``."""
    desc = np.zeros((n, 2), ">i4" if name[0] == "P" else ">i8")
    for i in range(n):
        count = int(rng.integers(0, 6))
        if name == "PJ":
            blob = rng.integers(-(2**31), 2**31, count).astype(">i4").tobytes()
        elif name == "QD":
            blob = (rng.standard_normal(count) * 1e3).astype(">f8").tobytes()
        elif name == "PA":
            blob = bytes(rng.choice(list(b"abc XYZ"), count).tolist())
        elif name == "PL":  # T, F and NUL (undefined: False, as astropy reads it)
            blob = bytes(rng.choice(list(b"TF\0"), count).tolist())
        else:  # PEd: TDIM (2,4) shapes each array (-1, 2): an even count
            count = 2 * (count // 2)
            blob = (rng.standard_normal(count)).astype(">f4").tobytes()
        desc[i] = (count, len(heap))
        heap += blob
    return desc


def write_binary(path: Path, seed: int, nrows: int, kinds: list[str] | None = None) -> Path:
    """A BINTABLE with one column of every :data:`BINARY` kind (or of ``kinds``), named
    after it; a column's values depend on the seed and its kind only."""
    heap = bytearray()
    kinds = list(BINARY) if kinds is None else kinds
    fields, arrays, keywords = [], {}, [("TFIELDS", len(kinds))]
    for k, name in enumerate(kinds, start=1):
        tform, keys, stored, cell = BINARY[name]
        rng = np.random.default_rng([seed, list(BINARY).index(name)])
        if "(" in tform:  # P/Q: descriptors here, arrays in the heap
            arrays[name] = _heap_column(rng, name, nrows, heap)
            fields.append((name, arrays[name].dtype, (2,)))
        else:
            arrays[name] = _values(rng, name, nrows)
            fields.append((name, np.dtype(stored), cell))
        keywords += [(f"TTYPE{k}", name), (f"TFORM{k}", tform)]
        keywords += [(f"{key}{k}", value) for key, value in keys.items()]
    rows = np.zeros(nrows, np.dtype(fields))
    for name, values in arrays.items():
        rows[name] = values
    data = rows.tobytes() + bytes(heap)
    return write_table(
        path, keywords, data, naxis1=rows.dtype.itemsize, naxis2=nrows, pcount=len(heap)
    )


def _ascii_field(rng, name: str, fmt: str, null: str | None, width: int) -> str:
    draw = rng.random()
    if draw < 0.2:
        return " " * width  # a blank field: null
    if draw < 0.35 and null is not None:
        return null.rjust(width)
    if name == "aA":
        return fmt.format(["", "ab", "x y", "QQQQQ"][rng.integers(0, 4)])
    if name in ("aI", "aIb", "saI"):
        return fmt.format(int(rng.integers(-999, 9999)))
    if name == "aK":
        return fmt.format(int(rng.integers(-(2**62), 2**62)))
    return fmt.format(float(rng.standard_normal() * 1e3)).replace("E", "D" if name == "aD" else "E")


def write_ascii(path: Path, seed: int, nrows: int) -> Path:
    """An ASCII TABLE with one column of every :data:`ASCII` kind, with blank fields."""
    rng = np.random.default_rng(seed)
    keywords, col, widths = [("TFIELDS", len(ASCII))], 1, []
    for k, (name, (tform, null, _)) in enumerate(ASCII.items(), start=1):
        width = int(tform[1:].split(".")[0])
        keywords += [(f"TTYPE{k}", name), (f"TFORM{k}", tform), (f"TBCOL{k}", col)]
        if null is not None:
            keywords.append((f"TNULL{k}", null))
        if name in ASCII_SCALED:
            scale, zero = ASCII_SCALED[name]
            keywords += [(f"TSCAL{k}", scale), (f"TZERO{k}", zero)]
        widths.append(width)
        col += width + 1
    lines = []
    for _ in range(nrows):
        cells = [
            _ascii_field(rng, name, fmt, null, w)
            for (name, (_, null, fmt)), w in zip(ASCII.items(), widths, strict=True)
        ]
        lines.append(" ".join(cells) + " ")
    data = "".join(lines).encode("ascii")
    return write_table(path, keywords, data, xtension="TABLE", naxis1=col - 1, naxis2=nrows)
