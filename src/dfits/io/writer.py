"""Write FITS images slab by slab, atomically: a crash never leaves a partial file behind.

:class:`ImageWriter` writes to a temporary file beside the target and renames it into place
only after the last byte and the 2880-byte padding are written, so the target path holds either
the old file or the complete new one.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["ImageWriter", "format_card", "header_bytes"]

_BITPIX = {
    np.dtype(k): v
    for k, v in {">u1": 8, ">i2": 16, ">i4": 32, ">i8": 64, ">f4": -32, ">f8": -64}.items()
}


def format_card(key: str, value: Any = None, comment: str = "") -> bytes:
    """Format one 80-byte card in fixed format.

    Examples
    --------
    >>> format_card("NAXIS", 2)[:30]
    b'NAXIS   =                    2'
    """
    key = key.upper()
    if key in ("COMMENT", "HISTORY", ""):
        text = f"{key:<8}{value or ''}"
    elif key == "END":
        text = "END"
    else:
        if isinstance(value, bool):
            val = f"{'T' if value else 'F':>20}"
        elif isinstance(value, int | np.integer):
            val = f"{int(value):>20}"
        elif isinstance(value, float | np.floating):
            val = f"{float(value):>20.14G}"
            if "." not in val and "E" not in val:
                val = f"{float(value):>20.1f}"
        else:
            s = str(value).replace("'", "''")
            val = f"'{s:<8}'"
        text = f"{key:<8}= {val}"
        if comment:
            text += f" / {comment}"
    if len(text) > 80:
        raise ValueError(f"card {key!r} does not fit in 80 characters")
    if not text.isascii():
        raise ValueError(f"card {key!r} holds non-ASCII text")
    return text.ljust(80).encode("ascii")


def header_bytes(cards: Iterable[tuple[Any, ...]]) -> bytes:
    """Return a padded header block from ``(key, value[, comment])`` tuples plus END."""
    raw = b"".join(format_card(*c) for c in cards) + format_card("END")
    return raw + b" " * (-len(raw) % 2880)


class ImageWriter:
    """Stream a primary image to ``path`` in slabs along the slowest axis.

    Parameters
    ----------
    path : str or os.PathLike
        Target; replaced atomically on success, untouched on failure.
    shape : tuple of int
        Image shape in numpy order.
    dtype : numpy dtype
        Stored type (any byte order; written big-endian).
    cards : iterable of tuple
        Extra ``(key, value[, comment])`` cards after the mandatory ones.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        shape: tuple[int, ...],
        dtype: Any,
        cards: Iterable[tuple[Any, ...]] = (),
    ) -> None:
        self.path = os.fspath(path)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype).newbyteorder(">")
        if self.dtype not in _BITPIX:
            raise ValueError(f"cannot write dtype {np.dtype(dtype)} as a FITS image")
        mandatory = [("SIMPLE", True), ("BITPIX", _BITPIX[self.dtype]), ("NAXIS", len(self.shape))]
        mandatory += [(f"NAXIS{i + 1}", n) for i, n in enumerate(reversed(self.shape))]
        self._header = header_bytes([*mandatory, *cards])
        self._expected = math.prod(self.shape) * self.dtype.itemsize
        self._written = 0
        self._fh: Any = None
        self._tmp = ""

    def __enter__(self) -> ImageWriter:
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, self._tmp = tempfile.mkstemp(prefix=".dfits-", suffix=".part", dir=folder)
        self._fh = os.fdopen(fd, "wb")
        self._fh.write(self._header)
        return self

    def write(self, slab: np.ndarray) -> None:
        """Append the next slab (C-ordered values of the following rows)."""
        data = np.ascontiguousarray(slab, dtype=self.dtype)
        if self._written + data.nbytes > self._expected:
            raise ValueError(f"{self.path!r}: more data than the shape {self.shape} holds")
        data.tofile(self._fh)
        self._written += data.nbytes

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        try:
            if exc_type is None:
                if self._written != self._expected:
                    raise ValueError(
                        f"{self.path!r}: wrote {self._written} of {self._expected} data bytes"
                    )
                self._fh.write(b"\0" * (-self._written % 2880))
                self._fh.flush()
                os.fsync(self._fh.fileno())
            self._fh.close()
            if exc_type is None:
                os.replace(self._tmp, self.path)
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
