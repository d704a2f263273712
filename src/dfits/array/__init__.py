"""Dask arrays over FITS data: the reader seam, chunk plans, graph construction, the reductions
dfits owns (one table), weighted sums. The chunks' type is :mod:`dfits.stored`'s.

The names below load with their module on first use (PEP 562), so that ``dfits.open``, which
needs only the chunk plans, the image reader and :func:`dask_array`, never imports the
reduction table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: where each public name lives
_HOMES = {
    "AGGREGATIONS": "dfits.array.aggregations",
    "Aggregation": "dfits.array.aggregations",
    "reduce": "dfits.array.aggregations",
    "file_chunks": "dfits.array.chunks",
    "normalize": "dfits.array.chunks",
    "ImageReader": "dfits.array.image",
    "Reader": "dfits.array.reader",
    "dask_array": "dfits.array.reader",
    "weighted_sums": "dfits.array.weighted",
    "StoredChunk": "dfits.stored.stored",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dfits.array' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(home), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
