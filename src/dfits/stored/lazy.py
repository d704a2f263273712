"""Lazy values of stored chunks: arrays worked out only when something needs their values.

A stored chunk (:mod:`dfits.stored.stored`) answers some numpy calls with a lazy value instead
of decoding: ``x - m`` and ``x ** 2`` give a :class:`Deviation` whose squared sum the moments
kernel answers, comparisons give threshold cuts (:mod:`dfits.stored.cuts`), ``isnan`` gives a
NaN mask (:mod:`dfits.stored.nanmask`). Each is a :class:`LazyValues`: the few numpy functions
in its class's ``handlers`` table (filled from :mod:`dfits.stored.recognised`) run a fused
kernel; anything else works out numpy's own
result once, and from then on that plain array *is* the value (attributes, methods, ``out=``
and ``__setitem__`` act on it, as on an ndarray).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = [
    "RULES",
    "Deviation",
    "Lazy",
    "LazyValues",
    "OfChunk",
    "deviation_of",
    "materialize",
]

#: ufunc -> rules ``(lazy, inputs) -> lazy result or None`` for ``ufunc(*inputs)`` calls on
#: stored chunks and lazy values, filled from :data:`dfits.stored.recognised.UFUNC_RULES`
RULES: dict[Any, list[Callable[..., Any]]] = {}


class Lazy(NDArrayOperatorsMixin):
    """Base of stored chunks and lazy values: :meth:`values` gives the plain array."""

    __slots__ = ()
    #: numpy function -> handler with numpy's signature, answered without decoding; each
    #: class has its own, filled by :func:`dfits.stored.recognised.install` and nothing else
    handlers: ClassVar[dict[Callable[..., Any], Callable[..., Any]]] = {}

    def values(self) -> np.ndarray:
        raise NotImplementedError

    def own(self) -> np.ndarray:
        """The values as the object's own writable array (what writing to it does)."""
        raise NotImplementedError


class LazyValues(Lazy):
    """An array worked out from a stored chunk only when something needs its values.

    Subclasses recognise the few numpy calls that the fused kernels answer from the stored
    bytes (their class's :attr:`handlers`); everything else gets :meth:`values`, the plain
    numpy result, worked out once: from then on it *is* the object's value, so changes made
    to it are seen afterwards, as with an ndarray.
    """

    __slots__ = ("_values",)

    def materialize(self) -> np.ndarray:
        """Work out numpy's result (a new array)."""
        raise NotImplementedError

    def values(self) -> np.ndarray:
        """The value as a plain array, worked out once; once handed out it is the object's
        value (it may be written to), and the fused handlers no longer apply."""
        values = getattr(self, "_values", None)
        if values is None:
            values = self._values = self.materialize()
        return values

    own = values

    @property
    def lazy(self) -> bool:
        """True until the value has been worked out."""
        return getattr(self, "_values", None) is None

    @property
    def base(self) -> Any:
        """While lazy, the ``base`` of the stored chunk it reads: set when that chunk is a
        view of another (a slice of a mask or cut is a mask or cut of the slice), so code
        that copies views to free their parent (distributed's P2P rechunk) copies it too and
        gets a plain array."""
        if not self.lazy:
            return self._values.base
        chunk = getattr(self, "chunk", None)
        return chunk.base if isinstance(chunk, Lazy) else None

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.values().copy() if copy else self.values()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_function__(self, func, types, args, kwargs):
        handler = type(self).handlers.get(func) if self.lazy else None
        if handler is not None and _plain(kwargs):
            result = handler(*args, **kwargs)
            if result is not NotImplemented:  # a handler may decline (np.where's other uses)
                return result
        return func(*materialize(args), **materialize(kwargs, writing=True))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if self.lazy and method == "__call__" and not kwargs:
            for rule in RULES.get(ufunc, ()):
                lazy = rule(self, inputs)
                if lazy is not None:
                    return lazy
        return getattr(ufunc, method)(*materialize(inputs), **materialize(kwargs, writing=True))

    def __len__(self) -> int:
        return self.shape[0]  # type: ignore[attr-defined]

    def __getitem__(self, index: Any) -> Any:
        return self.values()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self.values()[index] = materialize(value)

    def __iter__(self):
        return iter(self.values())

    def __bool__(self) -> bool:
        return bool(self.values())

    def __reduce__(self):
        return (np.asarray, (self.values(),))

    def copy(self, order: str = "K") -> np.ndarray:
        return self.values().copy(order)

    def __getattr__(self, name: str) -> Any:
        # the rest of ndarray's public surface is numpy's, on the values
        if not name.startswith("_") and hasattr(np.ndarray, name):
            return getattr(self.values(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    __hash__ = None  # type: ignore[assignment]


class OfChunk(LazyValues):
    """A lazy value worked out from one chunk (``self.chunk``), with the chunk's shape."""

    __slots__ = ()
    shape = property(lambda self: self.chunk.shape)
    ndim = property(lambda self: self.chunk.ndim)
    size = property(lambda self: self.chunk.size)


class Deviation(OfChunk):
    """Lazy ``(chunk - centre) ** power``: dask's ``moment_chunk`` builds ``(x - mean) ** 2``,
    and ``x ** 2`` is a deviation about 0.

    ``chunk`` is a stored chunk, or the values inside a threshold cut
    (:class:`~dfits.stored.cuts.CutValues`, NaN or 0 elsewhere): anything with ``shape``,
    ``ndim``, ``dtype`` and ``decode()``. ``centre`` is a scalar or an array that
    broadcasts against the chunk.
    """

    __slots__ = ("centre", "chunk", "power")
    handlers: ClassVar[dict[Callable[..., Any], Callable[..., Any]]] = {}

    def __init__(self, chunk: Any, centre: np.ndarray, power: int = 1) -> None:
        self.chunk = chunk
        self.centre = centre
        self.power = power

    dtype = property(lambda self: np.result_type(self.chunk.dtype, self.centre.dtype))

    def __repr__(self) -> str:
        return f"Deviation(power={self.power}, shape={self.shape}, dtype={self.dtype})"

    def materialize(self) -> np.ndarray:
        """``(x - c) ** k`` as numpy computes it."""
        return (self.chunk.decode() - self.centre) ** self.power

    def decode(self) -> np.ndarray:
        """The values (what a NaN-zeroed square reads from, as a stored chunk decodes)."""
        return self.values()

    @property
    def keeps_nan(self) -> bool:
        """True when ``(x - c) ** k`` is NaN exactly where ``x`` is: ``c`` a finite scalar
        (``inf ** k`` is inf, not NaN)."""
        c = self.centre
        return np.ndim(c) == 0 and bool(np.isfinite(c))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if (
            self.lazy
            and method == "__call__"
            and not kwargs
            and (
                self.power == 1
                and ufunc in (np.power, np.square)
                and inputs[0] is self
                and (ufunc is np.square or _small_int(inputs[1]))
            )
        ):
            return Deviation(self.chunk, self.centre, 2 if ufunc is np.square else inputs[1])
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)


def _small_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and 1 <= value <= 8


def deviation_of(values: Any, ufunc: Any, inputs: tuple) -> Deviation | None:
    """``values - centre`` as a lazy :class:`Deviation`, or None.

    ``values`` must be the first operand and the centre a plain array (or scalar) of a
    floating dtype that broadcasts to no more than the values' shape.
    """
    if ufunc is not np.subtract or len(inputs) != 2 or inputs[0] is not values:
        return None
    centre = inputs[1]
    if isinstance(centre, bool | np.bool_) or not isinstance(
        centre, np.ndarray | np.generic | float | int
    ):
        return None
    # numpy's result dtype (a Python scalar is weak, a numpy one is not), in which the
    # centre is then held: the lazy value's dtype is numpy's
    dtype = np.result_type(values.dtype, centre)
    if dtype.kind != "f":
        return None
    centre = np.asarray(centre, dtype=dtype)
    try:
        if np.broadcast_shapes(centre.shape, values.shape) != tuple(values.shape):
            return None
    except ValueError:
        return None
    return Deviation(values, centre)


def _plain(kwargs: dict[str, Any]) -> bool:
    """True unless a reduction is asked for a ``where`` mask or an ``initial`` value.

    The kernels reduce whole slices; numpy answers those two (on the decoded values).
    """
    return kwargs.get("where", True) is True and kwargs.get("initial") is None


def _is_basic(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, slice | int | np.integer) or i is Ellipsis or i is None for i in items)


def materialize(obj: Any, writing: bool = False) -> Any:
    """Replace stored chunks and lazy values (recursively in lists, tuples and dicts) with
    their plain arrays; with ``writing``, an ``out=`` array among them becomes writable
    (see :meth:`Lazy.own`)."""
    if isinstance(obj, Lazy):
        return obj.values()
    if isinstance(obj, list | tuple):
        return type(obj)(materialize(o) for o in obj)
    if isinstance(obj, dict):
        out = {k: materialize(v) for k, v in obj.items()}
        if writing and "out" in obj:
            target = obj["out"]
            targets = target if isinstance(target, tuple) else (target,)
            owned = tuple(t.own() if isinstance(t, Lazy) else t for t in targets)
            out["out"] = owned if isinstance(target, tuple) else owned[0]
        return out
    return obj
