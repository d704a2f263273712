"""Write small FITS tables byte by byte, so that tests control every keyword and byte."""

from __future__ import annotations

from pathlib import Path


def card(key: str, value: object) -> bytes:
    if isinstance(value, bool):
        text = "T" if value else "F"
        return f"{key:<8}= {text:>20}".ljust(80).encode()
    if isinstance(value, str):
        quoted = "'" + value.replace("'", "''").ljust(8) + "'"
        return f"{key:<8}= {quoted:<20}".ljust(80).encode()
    return f"{key:<8}= {value!r:>20}".ljust(80).encode()


def pad(blob: bytes, fill: bytes = b"\0") -> bytes:
    return blob + fill * (-len(blob) % 2880)


def write_table(
    path: Path,
    keywords: list[tuple[str, object]],
    data: bytes,
    *,
    xtension: str = "BINTABLE",
    naxis1: int,
    naxis2: int,
    pcount: int = 0,
) -> Path:
    """A primary HDU without data and one table extension with ``keywords`` and ``data``."""
    primary = [card("SIMPLE", True), card("BITPIX", 8), card("NAXIS", 0), b"END".ljust(80)]
    head = [
        card("XTENSION", xtension), card("BITPIX", 8), card("NAXIS", 2),
        card("NAXIS1", naxis1), card("NAXIS2", naxis2), card("PCOUNT", pcount),
        card("GCOUNT", 1),
    ]  # fmt: skip
    head += [card(k, v) for k, v in keywords] + [b"END".ljust(80)]
    fill = b" " if xtension == "TABLE" else b"\0"
    path.write_bytes(pad(b"".join(primary), b" ") + pad(b"".join(head), b" ") + pad(data, fill))
    return path


def astropy_decoded(data, column):
    """astropy's ``data[name]`` (a FITS_rec's column) under dfits' one decode: a column that
    may hold nulls (TNULLn on B/I/J/K, blank or TNULLn fields of an ASCII integer column)
    is float64 with NaN for them, where astropy's ``hdu.data`` keeps the stored integer (or
    0 for an ASCII null) and its ``Table`` masks the cells of unscaled columns."""
    import numpy as np

    raw = np.asarray(data.base[column.name])  # numpy's view of the stored fields
    try:
        values = np.array(data[column.name])
    except UnboundLocalError:
        # astropy 7/8 cannot scale a K column by a TZEROn that is not 2**63 (its bzero64 is
        # unset): the standard's stored * TSCALn + TZEROn, in float64 as astropy would
        values = raw.astype(np.float64) * column.scale + column.zero
    if column.dtype.kind != "f" or column.code not in "BIJK":
        return values
    if column.ascii:
        text = np.char.strip(raw.astype("S"))
        nulls = text == b""
        if column.null:
            nulls |= text == str(column.null).strip().encode()
    elif isinstance(column.null, int):
        nulls = raw == column.null
    else:
        return values
    return np.where(nulls, np.nan, values.astype(np.float64))
