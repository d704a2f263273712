"""The FITS format itself: cards, headers, BITPIX ↔ dtype, and the HDU layout scan.

Pure functions on bytes: nothing here imports dask, xarray or numba, or opens a file.
"""

from __future__ import annotations

from dfits.format.cards import Card, parse_card
from dfits.format.dtypes import DecodeSpec, parse_bitpix, parse_decode_spec
from dfits.format.header import Header
from dfits.format.layout import FileLayout, HDULayout, scan

__all__ = [
    "Card",
    "DecodeSpec",
    "FileLayout",
    "HDULayout",
    "Header",
    "parse_bitpix",
    "parse_card",
    "parse_decode_spec",
    "scan",
]
