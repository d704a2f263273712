"""Elementwise steps on combine partials, evaluated tile by tile when they are summed.

dask's moment combine (``var``/``std`` along axes) does a chain of elementwise steps on each
partial before it sums them: ``divide(totals, ns) - mu``, ``** 2``, ``ns * ...``. Done eagerly,
every step fills a fresh array as large as the partial (8 MiB per part for a 1024² noise map),
and fresh memory is what costs most on the machines we measure: the combine tasks of
``std(axis=0)`` took longer than reading the cube.

A :class:`LazyPart` records such a step instead. When the parts are summed, each one is
evaluated over tiles of a few hundred KiB that stay in cache, and added into the result tile
at once; the temporaries are tile-sized and reused by the allocator. The same functions run on
the same values in the same order, so the result is bit for bit the one of the eager steps.
Anything that needs a whole part (:func:`materialize`) evaluates it in one go, as before.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = [
    "TILE_ITEMS",
    "AsType",
    "LazyPart",
    "materialize",
    "quiet_divide",
    "reshaped",
    "tile_slices",
    "value_at",
]

#: Items per tile: 256 KiB of float64, a few of which stay in L2 while a tile's steps run.
#: Fewer items mean more Python calls per part (each step is one numpy call per tile).
TILE_ITEMS = 1 << 15


class LazyPart:
    """``func(*args)`` for one part of a stack, not evaluated yet.

    ``args`` are parts of the same stack (arrays or lazy parts, all of ``shape`` or
    broadcasting to it) and operands shared by every part (scalars, or arrays that broadcast
    to ``shape``). ``func`` must be elementwise: its value at an index depends only on the
    arguments at that index.
    """

    __slots__ = ("_dtype", "args", "func", "shape")

    def __init__(self, func: Callable[..., Any], args: list[Any], shape: tuple[int, ...]) -> None:
        self.func = func
        self.args = args
        self.shape = shape
        self._dtype: np.dtype | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        # numpy's dtype rules depend on the argument types, not their values or sizes:
        # one element says what the whole part will be
        if self._dtype is None:
            one = tuple(slice(0, min(n, 1)) for n in self.shape)
            self._dtype = self.evaluate(one).dtype
        return self._dtype

    def evaluate(self, index: tuple[slice, ...] | None = None) -> np.ndarray:
        """The part (``index=None``) or one tile of it, as a plain array."""
        args = [_arg(a, self.shape, index) for a in self.args]
        return np.asarray(self.func(*args))

    def astype(self, dtype: Any, **kwargs: Any) -> LazyPart:
        """The cast as one more recorded step (dask's ``divide(a, b, dtype)`` casts)."""
        return LazyPart(AsType(dtype, kwargs), [self], self.shape)

    def __repr__(self) -> str:
        return f"LazyPart({getattr(self.func, '__name__', self.func)!r}, shape={self.shape})"


class AsType:
    """``part.astype(dtype)`` as a step that can be recognised (a lambda could not)."""

    __slots__ = ("dtype", "kwargs")

    def __init__(self, dtype: Any, kwargs: dict[str, Any]) -> None:
        self.dtype = dtype
        self.kwargs = kwargs

    def __call__(self, part: Any) -> Any:
        return np.asarray(part).astype(self.dtype, **self.kwargs)


def quiet_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` without warnings: dask divides under ``errstate(divide/invalid="ignore")``,
    and a recorded quotient runs later, outside it (empty slices: 0/0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b)


def _arg(arg: Any, shape: tuple[int, ...], index: tuple[slice, ...] | None) -> Any:
    if isinstance(arg, LazyPart):
        if index is None or arg.shape == shape:
            return arg.evaluate(index)
        # an operand of another shape (it broadcasts): whole, then sliced like an array
        arg = arg.evaluate()
    if index is None or np.ndim(arg) == 0:
        # whole parts and scalars go in as they are: the function broadcasts them itself
        return arg
    return np.broadcast_to(arg, shape)[index]


def reshaped(part: LazyPart, shape: tuple[int, ...]) -> LazyPart:
    """The same elementwise step over arguments reshaped to ``shape`` (same size, views)."""
    size = math.prod(shape)
    args = [
        reshaped(a, shape)
        if isinstance(a, LazyPart)
        else (np.reshape(a, shape) if np.ndim(a) and np.size(a) == size else a)
        for a in part.args
    ]
    return LazyPart(part.func, args, tuple(shape))


def materialize(part: Any) -> Any:
    """A part as an array: lazy parts are evaluated whole, anything else is returned."""
    return part.evaluate() if isinstance(part, LazyPart) else part


def value_at(part: Any, index: tuple[slice, ...]) -> np.ndarray:
    """One tile of a part (lazy or not), as a plain array."""
    if isinstance(part, LazyPart):
        return part.evaluate(index)
    return np.asarray(part)[index]


def tile_slices(shape: tuple[int, ...], items: int | None = None) -> Iterator[tuple[slice, ...]]:
    """Index tuples that cover ``shape`` in C order, each ``items`` elements or fewer.

    Tiles run along the outermost axis whose inner block still fits in ``items`` (the last
    axis when none does); every axis before it is taken one index at a time.

    Examples
    --------
    >>> [t[1] for t in tile_slices((1, 5, 4), items=8)]
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    items = TILE_ITEMS if items is None else max(1, int(items))
    if not shape or math.prod(shape) == 0:
        yield tuple(slice(None) for _ in shape)
        return
    axis = len(shape) - 1
    while axis > 0 and math.prod(shape[axis:]) <= items:
        axis -= 1
    inner = math.prod(shape[axis + 1 :])
    step = max(1, items // inner)
    tail = tuple(slice(None) for _ in shape[axis + 1 :])
    for lead in itertools.product(*(range(n) for n in shape[:axis])):
        head = tuple(slice(i, i + 1) for i in lead)
        for start in range(0, shape[axis], step):
            yield (*head, slice(start, min(start + step, shape[axis])), *tail)
