"""Dask arrays over FITS data: the reader seam, chunk plans, stored chunks, the reductions
dfits owns, weighted sums."""

from __future__ import annotations

from dfits.array.aggregations import AGGREGATIONS, Aggregation, reduce
from dfits.array.chunks import file_chunks, normalize
from dfits.array.image import ImageReader
from dfits.array.reader import Reader, dask_array
from dfits.array.recognised import install
from dfits.array.stored import StoredChunk
from dfits.array.weighted import weighted_sums

# the stored chunk's handler tables, filled from the one table of what it recognises
install()

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
