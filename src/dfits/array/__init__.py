"""Dask arrays over FITS data: the reader seam, chunk plans, graph construction, the reductions
dfits owns (one table), weighted sums. The chunks' type is :mod:`dfits.stored`'s."""

from __future__ import annotations

from dfits.array.aggregations import AGGREGATIONS, Aggregation, reduce
from dfits.array.chunks import file_chunks, normalize
from dfits.array.image import ImageReader
from dfits.array.reader import Reader, dask_array
from dfits.array.weighted import weighted_sums
from dfits.stored.stored import StoredChunk

__all__ = [
    "AGGREGATIONS",
    "Aggregation",
    "ImageReader",
    "Reader",
    "StoredChunk",
    "dask_array",
    "file_chunks",
    "normalize",
    "reduce",
    "weighted_sums",
]
