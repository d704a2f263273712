"""Reductions of several columns of one table in one pass over each row span.

The contract: :func:`reduce_columns` takes the :class:`~dfits.tables.columns.ColumnReader` of
each column (all of one HDU) and an entry of :data:`~dfits.array.aggregations.AGGREGATIONS`,
and gives one lazy 0-d dask array per column. The arrays share one graph: one task per span
of rows that maps the span once through the one span route of tables
(:func:`dfits.tables.rowdecode.spans` with ``reduce``) and computes every column's partials
from that one buffer, and one tree of combines. ``dask.compute`` of the results
therefore reads each byte of the table once, where separate ``column(name).sum()`` calls map
and walk the rows once per column.

Within a span, the sums and counts (``sum``, ``mean``, ``count`` and their ``nan`` forms) of
every unscaled one-element B/I/J/K/E/D column without TNULLn, and of every unscaled
one-element B/I column with TNULLn (its other values' exact sum and count: what the float64
sum of the decoded column with NaN gives, bit for bit), come from one kernel pass over the
rows (:mod:`dfits.kernels.fieldsums`); a mean's K columns are totalled in float64 there, as
numpy's mean accumulates them (:func:`dfits.array.steps.mean_chunk`). Other columns and
reductions are reduced block by block (:data:`BLOCK_BYTES` of rows), every column of a block
before the next block, so the second and later columns read rows the first one just brought
into the cache.

Remote files: each span's whole rows come in one ranged request (not only the columns'
bytes, as ``hdu.column`` fetches them), so this suits tables whose requested columns are a
fair share of the row.

Values are exactly those of :meth:`~dfits.tables.columns.ColumnReader.read` (the stored kernel
fields stay stored, others are decoded as ``hdu.column(name)`` decodes them), so each result
equals the same reduction of ``hdu.column(name)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfits._lazy import lazy_module
from dfits.array import steps
from dfits.array.aggregations import AGGREGATIONS, Aggregation
from dfits.stored.stored import StoredChunk
from dfits.tables.columns import ColumnReader
from dfits.tables.fields import kernel_spec, nullable
from dfits.tables.rowdecode import spans as row_spans

if TYPE_CHECKING:
    import dask.array as da

__all__ = ["BLOCK_BYTES", "reduce_columns"]

#: the fused-sums kernel, loaded by the first task that sums: building the graph (a client
#: that only submits it) loads no numba
fieldsums = lazy_module("dfits.kernels.fieldsums")

#: Bytes of rows that every column reduces before the next block: two threads' blocks stay
#: in a 32 MiB L3 cache, and a block is large enough that the kernels' per-call cost (tens
#: of microseconds each) stays small against the block's memory traffic.
BLOCK_BYTES = 8 << 20


def reduce_columns(
    readers: Sequence[ColumnReader],
    how: str,
    rows_per_chunk: int | None = None,
    split_every: int | None = None,
    **options: Any,
) -> dict[str, da.Array]:
    """The reduction ``how`` of each column of ``readers`` over all its values, lazily, from
    one pass over the rows.

    Parameters
    ----------
    readers : sequence of ColumnReader
        Numeric columns of one table HDU.
    how : str
        ``sum``, ``mean``, ``var``, ``std``, ``min``, ``max``, their ``nan`` forms, ``count``.
    rows_per_chunk : int, optional
        Rows per span (one task each); by default about dask's ``array.chunk-size`` of rows.
    split_every : int, optional
        dask's tree-reduction fan-in.
    **options
        ``ddof`` for ``var``/``std``.

    Returns
    -------
    dict of str to dask.array.Array
        Column name to its 0-d result, with numpy's dtype for the reduction.
    """
    import dask
    import dask.array as da
    from dask.base import tokenize
    from dask.utils import parse_bytes

    agg = _aggregation(how)
    if not readers:
        return {}
    _check_numeric(readers, how)
    sizes = [readers[0].nrows * int(np.prod(r.column.shape, dtype=np.int64)) for r in readers]
    if how.removeprefix("nan") in ("min", "max") and 0 in sizes:
        raise ValueError(f"zero-size array to reduction operation {how} which has no identity")
    first = readers[0]
    row_bytes, nrows = first.row_bytes, first.nrows
    step = rows_per_chunk or max(
        int(parse_bytes(dask.config.get("array.chunk-size")) // max(row_bytes, 1)), 1
    )
    if step < 1:
        raise ValueError(f"rows_per_chunk must be positive, not {rows_per_chunk!r}")
    bounds = np.array([(a, min(a + step, nrows)) for a in range(0, nrows, step)] or [(0, 0)])
    token = tokenize(first.source.token, first.offset, row_bytes, bounds.tolist())
    # one task per span of rows: its bounds are all the graph holds of the table
    spans = da.from_array(bounds, chunks=(1, 2), name=f"dfits-spans-{token}")
    block_rows = min(step, max(BLOCK_BYTES // max(row_bytes, 1), 1))
    sums = agg.chunk in (steps.sum_chunk, steps.mean_chunk, steps.count_chunk)
    plan = _Plan(tuple(readers), agg, agg.skipna, block_rows, sums)
    parts = spans.map_blocks(
        _span_partials, plan, dtype=object, chunks=((1,) * len(bounds), (1,)),
        meta=np.empty((0, 0), object),
    )  # fmt: skip
    dtype = np.dtype([(r.column.name, agg.dtype(r.column.dtype)) for r in readers])
    result = da.reduction(
        parts,
        _unwrap,
        functools.partial(_aggregate, plan, sizes, dtype, {**options, "skipna": agg.skipna}),
        combine=functools.partial(_combine, plan),
        axis=(0, 1),
        dtype=dtype,
        split_every=split_every,
        concatenate=False,
        meta=np.empty((), dtype),
        name=f"dfits-columns-{how}",
    )
    return {r.column.name: result[r.column.name] for r in readers}


@dataclass(frozen=True)
class _Plan:
    """What each span task computes: the columns, the reduction and the block size in rows."""

    readers: tuple[ColumnReader, ...]
    agg: Aggregation
    skipna: bool
    block_rows: int
    #: the reduction needs only sums and counts: one-element numeric fields take one
    #: kernel pass over the rows together (:mod:`dfits.kernels.fieldsums`)
    sums: bool


def _aggregation(how: str) -> Aggregation:
    agg = AGGREGATIONS.get(how)
    if agg is None:
        known = ", ".join(sorted(AGGREGATIONS))
        raise ValueError(f"unknown reduction {how!r}; choose from {known}")
    return agg


def _check_numeric(readers: Sequence[ColumnReader], how: str) -> None:
    for r in readers:
        c = r.column
        if c.code in "PQ" or c.dtype.kind not in "biuf":
            raise TypeError(
                f"{r.where}, column {c.number} ({c.name!r}, TFORM{c.number} = {c.tform!r}): "
                f"{how} needs numbers, not {c.dtype} values"
            )
    if len({(r.source.token, r.offset) for r in readers}) > 1:
        raise ValueError("columns reduced together must come from one table HDU")


def _span_partials(bounds: np.ndarray, plan: _Plan) -> np.ndarray:
    """The partials of every column of one span of rows (``bounds``: its first and stop
    row), as a ``(1, 1)`` object array: the span is mapped once by the one span route
    (:func:`dfits.tables.rowdecode.spans`), every column reduced from that map."""
    a, b = bounds.reshape(-1).tolist()
    partials: list[dict] | None = None
    reducer = functools.partial(_rows_partials, plan)
    for span in row_spans(plan.readers, a, b, frame=False, reduce=reducer):
        if partials is None:
            partials = span.parts
        else:  # (one span per task today: reduce_columns sizes its tasks as spans)
            pairs = zip(partials, span.parts, strict=True)
            partials = [plan.agg.combine(p, q) for p, q in pairs]
    out = np.empty((1, 1), object)
    out[0, 0] = partials
    return out


def _rows_partials(plan: _Plan, block: np.ndarray, first: int) -> list[dict]:
    """The partials of every column of ``block``, whole rows from row ``first``."""
    partials: list[dict | None] = [None] * len(plan.readers)
    fused = [k for k, r in enumerate(plan.readers) if plan.sums and _summable(r)]
    if fused and block.shape[0]:
        _fused_sums(block, plan, fused, partials)
    rest = [k for k in range(len(plan.readers)) if partials[k] is None]
    if rest:
        _blocked(block, plan, rest, first, partials)
    return partials  # type: ignore[return-value]


def _summable(reader: ColumnReader) -> bool:
    # the kernel sums stored values as they are (no scaling), or B/I less their TNULLn cells
    c = reader.column
    spec = kernel_spec(c)
    return _null_field(c) or (spec is not None and spec.mode == "raw" and c.shape == ())


def _null_field(c: Any) -> bool:
    """A one-element B or I field with a TNULLn its stored type can hold (unscaled: float64
    with NaN, :func:`~dfits.tables.fields.nullable`). The kernel's exact int64 sum of the
    other values is the decoded route's float64 sum of them: both are exact (under 2**53)."""
    if c.ascii or c.code not in "BI" or c.shape != () or not nullable(c):
        return False
    info = np.iinfo(np.uint8 if c.code == "B" else np.int16)
    return info.min <= c.null <= info.max


def _fused_sums(block: np.ndarray, plan: _Plan, fused: list[int], partials: list) -> None:
    """Sums and counts of the ``fused`` columns from one kernel pass over the rows."""
    readers = [plan.readers[k] for k in fused]
    offsets = np.array([r.column.offset for r in readers], np.int64)
    # a mean's int64 totals are float64 sums, as mean_chunk's (an int64 total would wrap)
    floats = plan.agg.chunk is steps.mean_chunk
    kinds = np.array([_kind(r.column, floats) for r in readers], np.int64)
    nulls = np.array([r.column.null if _null_field(r.column) else 0 for r in readers], np.int64)
    counts, fsums, isums = fieldsums.field_sums(block, offsets, kinds, plan.skipna, nulls)
    for j, (k, r) in enumerate(zip(fused, readers, strict=True)):
        kind = r.column.dtype.kind
        if _null_field(r.column):
            partials[k] = _null_partials(counts[j], isums[j], block.shape[0], plan.skipna)
            continue
        total = (
            fsums[j : j + 1]
            if kind == "f" or kinds[j] == fieldsums.K_AS_FLOAT
            else isums[j : j + 1]
        )
        if kind == "u":
            total = total.astype(np.uint64)  # numpy sums unsigned bytes in uint64
        if floats:  # a mean's totals add across spans in float64 (as mean_chunk's)
            total = total.astype(np.float64)
        partials[k] = {"n": counts[j : j + 1].copy(), "total": total.copy()}


def _kind(c: Any, floats: bool) -> int:
    if _null_field(c):
        return fieldsums.NULL_KINDS[c.code]
    return fieldsums.K_AS_FLOAT if floats and c.code == "K" else fieldsums.KINDS[c.code]


def _null_partials(count: int, total: int, rows: int, skipna: bool) -> dict:
    """A TNULLn field's partials as :func:`dfits.array.steps.sum_chunk` gives them for its
    decoded float64 values: skipping NaN, the others' count and sum; else every row counts,
    and a null makes the total NaN."""
    n = count if skipna else rows
    value = float(total) if skipna or count == rows else np.nan
    return {"n": np.array([n], np.int64), "total": np.array([value], np.float64)}


def _blocked(block: np.ndarray, plan: _Plan, rest: list[int], first: int, partials: list):
    """Partials of the ``rest`` columns, one column at a time within each block of rows."""
    n, row_bytes = block.shape
    flat = block.reshape(-1)
    # every column of a block before the next block: the later columns find the rows cached
    for a in range(0, max(n, 1), plan.block_rows):
        m = min(plan.block_rows, n - a)
        for k in rest:
            r = plan.readers[k]
            values, _ = r.values_at(flat, a * row_bytes + r.column.offset, row_bytes, m,
                                    first + a)  # fmt: skip
            if isinstance(values, StoredChunk) and not values.decoded:
                values.spec.check()
            axes = tuple(range(np.ndim(values)))
            part = plan.agg.chunk(values, axes, plan.skipna, None)
            partials[k] = part if partials[k] is None else plan.agg.combine(partials[k], part)


def _unwrap(block: np.ndarray, axis: Any, keepdims: bool, computing_meta: bool = False, **_):
    return block if computing_meta else block[0, 0]


def _flat(parts: Any) -> list[list[dict]]:
    if isinstance(parts, list) and parts and isinstance(parts[0], dict):
        return [parts]
    return [p for item in parts for p in _flat(item)]


def _merge_all(plan: _Plan, lists: list[list[dict]]) -> list[dict]:
    out = list(lists[0])
    for other in lists[1:]:
        out = [plan.agg.combine(a, b) for a, b in zip(out, other, strict=True)]
    return out


def _combine(plan: _Plan, parts, axis, keepdims, computing_meta=False, **_):
    return _merge_all(plan, _flat(parts))


def _aggregate(plan, sizes, out_dtype, options, parts, axis, keepdims, computing_meta=False, **_):
    if computing_meta:
        return parts
    merged = _merge_all(plan, _flat(parts))
    out = np.zeros((), out_dtype)
    for r, p, size in zip(plan.readers, merged, sizes, strict=True):
        value = plan.agg.finalize(p, size, **options)
        out[r.column.name] = np.asarray(value).reshape(())
    return out
