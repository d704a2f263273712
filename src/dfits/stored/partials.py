"""Large sum partials that dask's combine step adds instead of concatenating.

dask's tree reduction combines partials by concatenating them along the reduced axes and
summing the result. For a moment map of a 1024² cube that is a fresh ``k × 4 MiB`` array per
combine task, and fresh memory is what costs most on the machines we measure (page faults,
~0.6 ms per MiB).

A chunk's keepdims sum that is large enough comes back as a :class:`SumPartial`, a plain
ndarray subclass: every ufunc and numpy function on it gives a plain ndarray. dask picks the
concatenate function by the parts' type through its public ``concatenate_lookup`` registry
(a reduction over a dfits array concatenates parts of one kind; a mix with plain arrays
gets the dense concatenation), so concatenations of partials
reach :func:`concatenate_partials`, which returns a lazy :class:`PartialStack`. A stack answers a
sum over its stacked axes by adding its parts into one array; anything else gets the dense
concatenation, worked out once. So results are numpy's whoever asks, and only the sum that a
reduction's combine step asks for skips the copy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dfits.stored.lazy import LazyValues
from dfits.stored.recognised import count_cast

__all__ = [
    "STACK_MIN_BYTES",
    "PartialStack",
    "SumPartial",
    "as_partial",
    "concatenate_partials",
    "stack_sum",
]

#: Partials smaller than this stay plain: concatenating them costs less than the bookkeeping.
STACK_MIN_BYTES = 1 << 18


class SumPartial(np.ndarray):
    """A chunk's keepdims sum, marked so that dask's combine step adds it in place."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(o) for o in kwargs["out"])
        return getattr(ufunc, method)(*(plain(i) for i in inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain_all(args), **_plain_all(kwargs))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> np.ndarray:  # type: ignore[override]
        # a trick listed in dfits.stored.recognised: dask's moment_chunk casts its count
        cast = count_cast(self, dtype, *args, **kwargs)
        if cast is not None:
            return as_partial(cast)
        return plain(self).astype(dtype, *args, **kwargs)

    def copy(self, order: str = "C") -> np.ndarray:  # type: ignore[override]
        return np.array(plain(self), order=order, copy=True)

    def __reduce__(self):
        # a partial shipped to another worker arrives as a plain array (no stacking there)
        return plain(self).__reduce__()


def as_partial(value: Any) -> Any:
    """``value`` as a :class:`SumPartial` when it is an array large enough to stack."""
    if isinstance(value, np.ndarray) and value.ndim and value.nbytes >= STACK_MIN_BYTES:
        return value.view(SumPartial)
    return value


def plain(a: Any) -> Any:
    """``a`` as a plain ndarray view when it is a partial; anything else unchanged."""
    if isinstance(a, PartialStack):
        return a.values()
    return a.view(np.ndarray) if isinstance(a, SumPartial) else a


def _plain_all(obj: Any) -> Any:
    if isinstance(obj, list | tuple):
        return type(obj)(_plain_all(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _plain_all(v) for k, v in obj.items()}
    return plain(obj)


class PartialStack(LazyValues):
    """Partials concatenated lazily along ``axis``, each one element thick there.

    ``items`` are partials (plain or marked) or stacks along other axes (dask concatenates
    nested lists of partials axis by axis).
    """

    __slots__ = ("axis", "dtype", "items", "leaves", "shape")
    handlers: ClassVar[dict[Any, Any]] = {}

    def __init__(self, items: list[Any], axis: int) -> None:
        self.items = items
        self.axis = axis
        self.leaves = [
            leaf for i in items for leaf in (i.leaves if isinstance(i, PartialStack) else [i])
        ]
        first = items[0]
        shape = list(first.shape)
        shape[axis] = len(items)
        self.shape = tuple(shape)
        self.dtype = np.result_type(*(leaf.dtype for leaf in self.leaves))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    @property
    def stacked(self) -> frozenset[int]:
        """The axes along which parts lie side by side."""
        inner = [i.stacked for i in self.items if isinstance(i, PartialStack)]
        return frozenset({self.axis}).union(*inner)

    def materialize(self) -> np.ndarray:
        parts = [i.values() if isinstance(i, PartialStack) else plain(i) for i in self.items]
        return np.concatenate(parts, axis=self.axis)

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False):
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def total(self, dtype: Any) -> np.ndarray:
        """The elementwise sum of the parts (each one element thick along stacked axes)."""
        leaves = [plain(leaf) for leaf in self.leaves]
        dtype = np.dtype(dtype) if dtype is not None else np.sum(leaves[0][:0]).dtype
        total = np.add(leaves[0], leaves[1], dtype=dtype)
        for leaf in leaves[2:]:
            np.add(total, leaf, out=total, dtype=dtype)
        return total


def stack_sum(s: PartialStack, axis=None, dtype=None, out=None, keepdims=False, **_):
    axes = _axes(axis, s.ndim)
    stacked = s.stacked
    if out is not None or not stacked <= axes:
        return NotImplemented  # numpy's, on the concatenation
    value = s.total(dtype)
    rest = tuple(sorted(axes - stacked))
    if rest:
        value = np.sum(value, axis=rest, keepdims=True)
    if not keepdims:
        return value.squeeze(axis=tuple(sorted(axes)))
    # a combine step's sum: stacked again by the next level instead of concatenated
    return as_partial(value)


def _axes(axis: Any, ndim: int) -> frozenset[int]:
    if axis is None:
        return frozenset(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return frozenset(int(a) % ndim for a in axes)


def concatenate_partials(arrays: Any, axis: int = 0, out: Any = None) -> Any:
    """dask's ``concatenate`` for partials: a :class:`PartialStack` of one-thick parts."""
    arrays = list(arrays)
    axis = int(axis)
    if len(arrays) == 1 and out is None and isinstance(arrays[0], PartialStack | SumPartial):
        return arrays[0]  # the concatenation of one part is that part (nothing writes to it)
    stackable = (
        out is None
        and all(isinstance(a, np.ndarray | PartialStack) for a in arrays)
        and len({a.ndim for a in arrays}) == 1
        and 0 <= axis < arrays[0].ndim
        and all(_thin(a, axis) for a in arrays)
        # parts side by side along the same axes (dask concatenates nested lists level by
        # level), so that every leaf is one element thick along every stacked axis
        and len({a.stacked if isinstance(a, PartialStack) else frozenset() for a in arrays}) == 1
    )
    if stackable:
        shapes = {tuple(n for i, n in enumerate(a.shape) if i != axis) for a in arrays}
        if len(shapes) == 1:
            return PartialStack(arrays, axis)
    return np.concatenate([plain(a) for a in arrays], axis=axis, out=out)


def _thin(a: Any, axis: int) -> bool:
    """True when ``a`` is one element thick along ``axis`` and along any axis it stacks."""
    if isinstance(a, PartialStack):
        return a.shape[axis] == 1 and axis not in a.stacked
    return a.shape[axis] == 1
