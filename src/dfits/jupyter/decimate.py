"""How much of a cube a quick look may read: strides per axis under a byte budget.

A decimated read is ``hdu.section[::s0, ::s1, ::s2]``; these functions estimate the bytes
such a view touches (4 KiB pages locally, whole planes remotely; for a tile-compressed image,
the tiles it decodes, each decoded byte weighted as :data:`DECODE` read ones) and pick the
strides.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["DECODE", "MAX_BYTES", "PAGE", "SHOWN", "decimation", "decoded_bytes",
           "remote_bytes", "touched_bytes"]  # fmt: skip

PAGE = 4096
MAX_BYTES = 256 * 2**20
#: a decoded byte of a compressed tile costs about this many bytes read from a plain file's
#: pages (Rice: ~4 ns per int16 pixel, dequantising floats ~1-2 ns more, against ~0.15 ns
#: per mapped byte summed): with the 256 MiB budget an 8k x 8k int16 image could be read
#: ``::8``, decoding an eighth of its row tiles (:data:`SHOWN` makes it ``::16``)
DECODE = 16
#: samples per image axis a quick-look figure shows at most: its image panel is about 400
#: device pixels wide at 100 dpi, and every sample beyond is read (decoded), colour-mapped
#: and resampled away for nothing, twice per PNG Jupyter makes (the tight bounding box
#: draws the figure once more)
SHOWN = 512


def touched_bytes(
    shape: tuple[int, ...], itemsize: int, steps: tuple[int, ...], page: int = PAGE
) -> int:
    """Bytes of the pages a C-ordered ``array[::steps]`` view touches (an estimate).

    Works outwards from the fastest axis: a run of selected items whose spacing is under a
    page shares pages; once the spacing reaches a page each item costs its own pages.

    >>> touched_bytes((64, 256, 256), 4, (1, 1, 1)) == 64 * 256 * 256 * 4
    True
    >>> touched_bytes((64, 256, 256), 4, (4, 1, 1)) == 16 * 256 * 256 * 4
    True
    """
    pages = 1.0  # pages touched by one selected item of the axis below
    extent = itemsize  # bytes spanned by one item of the axis below
    stride = itemsize  # bytes between consecutive indices of the current axis
    for n, s in zip(reversed(shape), reversed(steps), strict=True):
        count = -(-n // s)
        spacing = s * stride
        if spacing >= page or extent >= page:
            pages = count * pages
        else:
            pages = min(count * pages, math.ceil(((count - 1) * spacing + extent) / page))
        extent = (count - 1) * spacing + extent
        stride *= n
    return int(pages * page) if shape else itemsize


def decoded_bytes(
    shape: tuple[int, ...], itemsize: int, steps: tuple[int, ...], tile: tuple[int, ...]
) -> int:
    """Decoded bytes, weighted by :data:`DECODE`, of the tiles that ``array[::steps]`` of
    a tile-compressed image meets (the compressed reader decodes only those, each once).

    >>> decoded_bytes((1024, 1024), 2, (8, 8), (1, 1024)) == 128 * 1024 * 2 * DECODE
    True
    >>> decoded_bytes((1024, 1024), 2, (8, 8), (16, 16)) == 1024 * 1024 * 2 * DECODE
    True
    """
    pixels = 1
    for n, s, t in zip(shape, steps, tile, strict=True):
        met = -(-n // t) if s <= t else -(-n // s)  # stepping over tiles skips them
        pixels *= min(met * t, n)
    return pixels * itemsize * DECODE


def remote_bytes(shape: tuple[int, ...], itemsize: int, steps: tuple[int, ...]) -> int:
    # remote reads fetch the bounding box of each selected plane of the slowest axis
    if len(shape) < 2:
        return math.prod(shape) * itemsize
    return -(-shape[0] // steps[0]) * math.prod(shape[1:]) * itemsize


def decimation(
    shape: tuple[int, ...],
    itemsize: int,
    max_bytes: int = MAX_BYTES,
    *,
    remote: bool = False,
    keep: tuple[int, ...] | None = None,
    cost: Callable[[tuple[int, ...]], int] | None = None,
    shown: int | None = None,
) -> tuple[int, ...]:
    """Strides per axis such that reading ``array[::s0, ::s1, ...]`` touches ≤ ``max_bytes``
    and, given ``shown``, leaves at most ``shown`` samples on each image axis (the last two).

    Greedy: doubles the stride of the spectral axis, or of both image axes at once (square
    pixels), whichever saves the most bytes, never leaving fewer than ``keep[i]`` samples on
    axis ``i`` (default 8 channels, 32 pixels) unless no other choice remains; once within
    ``max_bytes``, only the image axes' stride doubles, until ``shown`` holds. ``cost``:
    bytes touched by given strides, when ``shape`` is not the file's C-ordered array (a view
    of some of its axes); by default :func:`touched_bytes` or :func:`remote_bytes`.

    >>> decimation((64, 256, 256), 4)
    (1, 1, 1)
    >>> s = decimation((512, 4096, 4096), 4)
    >>> touched_bytes((512, 4096, 4096), 4, s) <= 256 * 2**20
    True
    >>> decimation((16, 2048, 2048), 4), decimation((16, 2048, 2048), 4, shown=512)
    ((1, 1, 1), (1, 4, 4))
    """
    shape = tuple(int(n) for n in shape)
    if keep is None:
        keep = (8,) * (len(shape) - 2) + (32, 32) if len(shape) >= 2 else (32,) * len(shape)

    def default(steps: tuple[int, ...]) -> int:
        if remote:
            return remote_bytes(shape, itemsize, steps)
        return touched_bytes(shape, itemsize, steps)

    cost = cost or default

    # moves: double one leading (spectral) axis, or both image axes together so pixels
    # stay square
    nd = len(shape)
    plane = tuple(range(max(0, nd - 2), nd))
    moves = [(ax,) for ax in range(max(0, nd - 2))] + [plane]
    show = (128,) * max(0, nd - 2) + (SHOWN,) * min(nd, 2)

    def wide(steps: tuple[int, ...]) -> bool:
        return shown is not None and any(-(-shape[ax] // steps[ax]) > shown for ax in plane)

    steps = (1,) * nd
    for strict in (True, False):
        # the display bound never costs an axis its ``keep`` samples (a long thin image
        # stays whole): only the strict pass enforces it
        while (costly := cost(steps) > max_bytes) or (strict and wide(steps)):
            best = None
            for move in moves if costly else [plane]:
                if all(steps[ax] >= shape[ax] for ax in move):
                    continue
                if strict and any(-(-shape[ax] // (steps[ax] * 2)) < keep[ax] for ax in move):
                    continue
                trial = tuple(
                    min(s * 2, max(shape[ax], 1)) if ax in move else s for ax, s in enumerate(steps)
                )
                # ties: the axis furthest above what a figure can show
                over = max(-(-shape[ax] // steps[ax]) / show[ax] for ax in move)
                key = (cost(trial), -over)
                if best is None or key < best[0]:
                    best = (key, trial)
            if best is None:
                break
            steps = best[1]
    return steps
