"""Build small FITS byte strings for tests: cards, headers, HDUs and whole files.

Everything returns ``bytes``; nothing touches the disk except :func:`write`. Values are
formatted in the FITS fixed format (right-justified in columns 11-30) unless given as
``bytes``, which are copied verbatim into the value field so that tests can write anything:
``card("NAXIS", b"2.5")``, ``card("BSCALE", b"abc")``.

>>> len(header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)]))
2880
>>> image_file((2, 3), bitpix=16)[:30]
b'SIMPLE  =                    T'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

CARD = 80
BLOCK = 2880
STORED = {8: ">u1", 16: ">i2", 32: ">i4", 64: ">i8", -32: ">f4", -64: ">f8"}

#: A card spec: (keyword, value), (keyword, value, comment), or a ready card image.
CardSpec = tuple | bytes | str


def pad(data: bytes, fill: bytes = b"\0") -> bytes:
    """Pad to a whole number of 2880-byte blocks."""
    return data + fill * (-len(data) % BLOCK)


def format_value(value: object) -> str:
    """A value in FITS fixed format (strings quoted, ``''`` escaped, >= 8 characters)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, bool):
        return f"{'T' if value else 'F':>20}"
    if isinstance(value, int):
        return f"{value:>20}"
    if isinstance(value, float):
        return f"{value!r:>20}".upper()
    if isinstance(value, complex):
        return f"({value.real!r}, {value.imag!r})"
    text = str(value).replace("'", "''")
    return f"'{text:<8}'"


def card(keyword: str, value: object = None, comment: str | None = None) -> bytes:
    """One 80-byte card; commentary keywords take their text as ``value``."""
    if keyword in ("COMMENT", "HISTORY", ""):
        return f"{keyword:<8}{value or ''}".ljust(CARD).encode("latin-1")
    head = f"HIERARCH {keyword} = " if len(keyword) > 8 else f"{keyword:<8}= "
    text = head + format_value(value)
    if comment is not None:
        text += f" / {comment}"
    if len(text) > CARD:
        raise ValueError(f"card longer than 80 characters: {text!r}")
    return text.ljust(CARD).encode("latin-1")


def cards(specs: Iterable[CardSpec]) -> bytes:
    """Card images for a list of specs (bytes/str images are padded to 80, not checked)."""
    out = []
    for spec in specs:
        if isinstance(spec, bytes | str):
            image = spec.encode("latin-1") if isinstance(spec, str) else spec
            out.append(image.ljust(-(-len(image) // CARD) * CARD or CARD))
        else:
            out.append(card(*spec))
    return b"".join(out)


def header(specs: Iterable[CardSpec], *, end: bool = True, padded: bool = True) -> bytes:
    """A header: the cards, the END card, blank padding to a whole block."""
    data = cards(specs) + (b"END".ljust(CARD) if end else b"")
    return pad(data, b" ") if padded else data


def image_cards(
    shape: Sequence[int], bitpix: int = 16, *, primary: bool = True, extra: Iterable = ()
) -> list[CardSpec]:
    """Mandatory cards of an image HDU (``shape`` in numpy order), then ``extra``."""
    first = [("SIMPLE", True)] if primary else [("XTENSION", "IMAGE")]
    axes = [(f"NAXIS{i + 1}", n) for i, n in enumerate(reversed(shape))]
    counts = [] if primary else [("PCOUNT", 0), ("GCOUNT", 1)]
    return [*first, ("BITPIX", bitpix), ("NAXIS", len(shape)), *axes, *counts, *extra]


def data_for(shape: Sequence[int], bitpix: int, values: np.ndarray | None = None) -> bytes:
    """Stored (big-endian) bytes of an image; ``arange`` when no values are given."""
    if values is None:
        values = np.arange(math.prod(shape)).reshape(shape)
    return np.asarray(values).astype(STORED[bitpix]).tobytes()


def hdu(specs: Iterable[CardSpec], data: bytes = b"", *, padded: bool = True) -> bytes:
    """Header plus data (zero-padded to a whole block unless ``padded=False``)."""
    return header(specs) + (pad(data) if padded else data)


def image_hdu(
    shape: Sequence[int],
    bitpix: int = 16,
    *,
    primary: bool = True,
    extra: Iterable = (),
    values: np.ndarray | None = None,
) -> bytes:
    """A complete image HDU."""
    specs = image_cards(shape, bitpix, primary=primary, extra=extra)
    return hdu(specs, data_for(shape, bitpix, values) if shape else b"")


def image_file(shape: Sequence[int] = (), bitpix: int = 16, **kwargs: object) -> bytes:
    """A one-HDU file holding an image."""
    return image_hdu(shape, bitpix, **kwargs)  # type: ignore[arg-type]


def fits_file(*hdus: bytes) -> bytes:
    """HDUs concatenated (each already padded)."""
    return b"".join(hdus)


def write(path: Path, blob: bytes) -> Path:
    """Write bytes to ``path`` and return it."""
    path.write_bytes(blob)
    return path
