"""Pure Numba kernels over native unsigned views of stored FITS values.

Nothing here imports dask, xarray or anything that touches files; kernels compile lazily on
first use, or ahead of time with :func:`warm`, into Numba's on-disk cache
(:mod:`dfits.kernels._cache`). Values are big-endian as FITS stores them, or native (decoded
tiles): the decode spec says which. See :mod:`dfits.kernels.api` for the N-d entry points and
:mod:`dfits.kernels.oracle` for the numpy definitions they are tested against.
"""

from __future__ import annotations

from dfits.kernels.api import (
    band_moments,
    band_sum_count,
    decode,
    decode_rows,
    extrema,
    integer_sum,
    is_integer_kind,
    moments,
    normalize_axis,
    sum_count,
    weighted_sums,
)
from dfits.kernels.warm import warm

__all__ = [
    "band_moments",
    "band_sum_count",
    "decode",
    "decode_rows",
    "extrema",
    "integer_sum",
    "is_integer_kind",
    "moments",
    "normalize_axis",
    "sum_count",
    "warm",
    "weighted_sums",
]
