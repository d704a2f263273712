"""Dask arrays over FITS data blocks: chunk plans, stored chunks, the reduction table, weighted
sums."""

from __future__ import annotations

from dfits.array.build import ImageBlock, dask_array
from dfits.array.chunks import file_chunks, normalize
from dfits.array.stored import StoredChunk
from dfits.array.weighted import weighted_sums

__all__ = ["ImageBlock", "StoredChunk", "dask_array", "file_chunks", "normalize", "weighted_sums"]
