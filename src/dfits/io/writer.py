"""Write FITS images slab by slab, atomically: a crash never leaves a partial file behind.

:class:`ImageWriter` writes to a temporary file beside the target and renames it into place
only after the last byte and the 2880-byte padding are written, so the target path holds either
the old file or the complete new one. Cards and BITPIX come from :mod:`dfits.format` (one
formatter for reading and writing).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable
from typing import Any

import numpy as np

from dfits.format.cards import format_card, format_header
from dfits.format.dtypes import BITPIX_TO_STORED

__all__ = ["ImageWriter", "format_card", "header_bytes"]

#: ``(keyword, value[, comment])`` tuples as a padded header block; the format layer's
#: formatter, under the name the writer has always exported.
header_bytes = format_header
#: BITPIX of each stored (big-endian) dtype: the inverse of the format layer's table.
_BITPIX = {dtype: bitpix for bitpix, dtype in BITPIX_TO_STORED.items()}


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
        self._header = format_header([*mandatory, *cards])
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
