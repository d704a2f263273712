"""dfits' registrations in dask's public dispatch registries (``dask.array.dispatch``).

The only module of dfits that touches dask's registries. It registers stored chunks for the
counts dask's mean and variance steps ask for (``numel``/``nannumel``), for concatenation
(decoded, but a single block stays stored), quantiles and ``to_numpy`` (decoded), and sum
partials for concatenation (a lazy stack that a combine step's sum adds up; see
:mod:`dfits.array.partials`). Importing the handler modules fills the tables the stored
chunk and its lazy values answer from.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dfits.array import cut_handlers, handlers, nanmask  # noqa: F401  (fill the tables)
from dfits.array.partials import PartialStack, SumPartial, concatenate_partials
from dfits.array.stored import StoredChunk

__all__ = ["register"]


@functools.cache
def register() -> None:
    """Register stored chunks and partials with dask's dispatch tables (once)."""
    from dask.array.dispatch import (
        concatenate_lookup,
        nannumel_lookup,
        numel_lookup,
        percentile_lookup,
        to_numpy_dispatch,
    )

    def numel(x: StoredChunk, **kwargs: Any):
        if x.decoded:
            return numel_lookup(x.decode(), **kwargs)
        return handlers.count(x, False, **kwargs)

    def nannumel(x: StoredChunk, **kwargs: Any):
        if x.decoded:
            return nannumel_lookup(x.decode(), **kwargs)
        return handlers.count(x, True, **kwargs)

    numel_lookup.register(StoredChunk, numel)
    nannumel_lookup.register(StoredChunk, nannumel)
    concatenate_lookup.register(StoredChunk, _concatenate_chunks)
    # quantiles need the values sorted: numpy's, on the decoded chunk
    percentile_lookup.register(
        StoredChunk, lambda a, q, *args, **kw: percentile_lookup(a.decode(), q, *args, **kw)
    )
    to_numpy_dispatch.register(StoredChunk, lambda x, **kw: x.copy())
    concatenate_lookup.register(SumPartial, concatenate_partials)
    concatenate_lookup.register(PartialStack, concatenate_partials)


def _concatenate_chunks(arrays: Any, axis: int = 0, out: Any = None) -> Any:
    arrays = list(arrays)
    if len(arrays) == 1 and out is None and isinstance(arrays[0], StoredChunk):
        # one block (map_blocks with drop_axis "concatenates" single blocks): keep it stored
        return arrays[0]
    # numpy dispatches to the stored chunks' handler, which decodes each piece into place
    return np.concatenate(arrays, axis=axis, out=out)
