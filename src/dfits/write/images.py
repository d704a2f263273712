"""Dask and numpy arrays to FITS: one task per chunk writes its own bytes of one file.

The contract: :func:`write_images` lays out image HDUs (:mod:`dfits.format.imagehdu`), and
builds a graph of plain delayed calls — create the pre-sized temporary file with its headers,
one :func:`~dfits.write.fitswriter.write_block` per chunk (a dask array's chunks, a numpy
array's slabs: :mod:`dfits.write.blocks`; each task holds the plan, the chunk's start and its
values, returns a 32-bit sum), one finalize that combines the sums into
DATASUM/CHECKSUM and renames the file into place. Memory stays at the chunks in flight plus
one bounded encode buffer per task. It runs on any scheduler whose workers share the
filesystem (threads, processes, ``dask.distributed``). ``compute=False`` returns the
``Delayed`` (whose result is the path); computing it later writes the file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dfits.errors import where
from dfits.format.imagehdu import UserCard, image_header, parse_quantized, parse_storage
from dfits.write import fitswriter
from dfits.write.appender import Append
from dfits.write.blocks import as_blocks
from dfits.write.fitswriter import WritePlan

__all__ = ["ImageItem", "append_images", "write_images"]


@dataclass
class ImageItem:
    """One image HDU to write: its values (dask, numpy or array-like), cards and EXTNAME."""

    data: Any
    cards: list[UserCard] = field(default_factory=list)
    extname: str | None = None


def _headers(
    items: Sequence[ImageItem], path: str, primary: bool, checksum: bool, first: int | None,
    quantize: dict[str, Any] | None = None,
):  # fmt: skip
    """Header blocks and arrays of the HDUs; ``first``: the index of the first item's HDU
    after an empty primary made here when 0, or None when appending (index unknown)."""
    out, arrays = [], []
    if not primary and first == 0:
        empty = parse_storage("uint8", where(path, 0))
        head = image_header((), empty, primary=True, extend=True, checksum=checksum)
        out.append((head, (), empty, checksum))
        arrays.append(None)
        first = 1
    for i, item in enumerate(items):
        if first is None:
            name = f" ({item.extname!r})" if item.extname else ""
            what = f"{where(path)}, appended HDU {i}{name}"
        else:
            what = where(path, first + i, item.extname)
        x = as_blocks(item.data, what)
        if quantize is None:
            storage = parse_storage(x.dtype, what)
        else:
            storage = parse_quantized(x.dtype, what, **quantize)
        head = image_header(
            x.shape, storage, primary=primary and i == 0, cards=item.cards,
            extname=item.extname, extend=primary and i == 0 and len(items) > 1,
            checksum=checksum, what=what,
        )  # fmt: skip
        out.append((head, x.shape, storage, checksum))
        arrays.append(x)
    return out, arrays


def _write(p: WritePlan, hdu: int, values: Any, starts: tuple[int, ...], _ready: bool) -> int:
    return fitswriter.write_block(p, hdu, values, starts)


def _block_sums(p: WritePlan, arrays: list[Any], ready: Any) -> list[list[Any]]:
    """One delayed block write per chunk (after ``ready``), grouped by HDU."""
    from dask import delayed

    sums: list[list[Any]] = []
    for i, x in enumerate(arrays):
        if x is None or x.size == 0:
            sums.append([])
            continue
        # a retried task writes the same bytes: names follow the plan and the block
        sums.append([
            delayed(_write, pure=True)(p, i, block, starts, ready)
            for block, starts in x.tasks()
        ])  # fmt: skip
    return sums


def write_images(
    items: Sequence[ImageItem],
    path: str | os.PathLike[str],
    *,
    primary: bool,
    overwrite: bool = False,
    checksum: bool = True,
    compute: bool = True,
    fsync: bool = True,
    quantize: dict[str, Any] | None = None,
) -> Any:
    """Write image HDUs to ``path``: the first as the primary HDU when ``primary`` (the rest
    as IMAGE extensions after it), else all as IMAGE extensions after an empty primary.
    ``quantize``: the keywords of :func:`~dfits.format.imagehdu.parse_quantized`
    (``bitpix``, ``bscale``, ``bzero``, ``blank``) to store floats as scaled integers.
    Returns the path, or a ``Delayed``."""
    from dask import delayed

    target = os.fspath(path)
    headers, arrays = _headers(items, target, primary, checksum, 0, quantize)
    p = fitswriter.plan(target, headers, overwrite=overwrite, fsync=fsync)
    if not compute:
        ready = delayed(fitswriter.create, pure=False)(p)
        return delayed(fitswriter.finalize, pure=True)(p, _block_sums(p, arrays, ready))
    # computed here: the file is made before any task runs, so a task that fails cannot
    # leave a create still running past the cleanup (it would make the file again after it)
    try:
        fitswriter.create(p)
    except BaseException:
        fitswriter.abort(p)
        raise
    return run(delayed(fitswriter.finalize, pure=True)(p, _block_sums(p, arrays, True)), p)


def run(graph: Any, p: WritePlan) -> str:
    """Compute a write graph; on any failure remove the temporary file and re-raise."""
    from dfits.array.scheduler import compute

    try:
        return str(compute(graph)[0])
    except BaseException:
        fitswriter.abort(p)
        raise


def append_images(
    items: Sequence[ImageItem],
    path: str | os.PathLike[str],
    *,
    checksum: bool = True,
    fsync: bool = True,
    quantize: dict[str, Any] | None = None,
    wait: float = 60.0,
) -> str:
    """Append image extensions to the FITS file ``path`` in place (see
    :mod:`dfits.write.appender`): the data written by the chunk tasks of the current scheduler,
    then the headers; on failure the file is cut back to its old size. Returns the path."""
    from dfits.array.scheduler import compute

    target = os.fspath(path)
    # checked before the file is touched: a dtype or card that cannot be written raises here
    headers, arrays = _headers(items, target, False, checksum, None, quantize)
    with Append(target, fsync=fsync, wait=wait) as session:
        p = session.extend(headers)
        (sums,) = compute(_block_sums(p, arrays, True))
        session.commit(p, sums)
    return target
