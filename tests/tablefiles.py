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
