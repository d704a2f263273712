"""The stored chunk: what every dfits chunk task returns instead of a decoded numpy array.

A :class:`StoredChunk` holds a zero-copy native unsigned view of the stored big-endian bytes
(an mmap of the file for local files) and the decode spec. It is a NEP-18 duck array:

* numpy reductions that dask calls per chunk (``np.sum``, ``np.nanmax``, ``np.argmin``, ...)
  reach :mod:`dfits.array.dispatch` through ``__array_function__`` and run a fused kernel on
  the stored bits — no native copy of the chunk is ever made;
* basic slicing returns another stored chunk (still no copy), and so does an exact widening
  ``astype`` (``x.astype(np.float64)`` before a reduction), and so does arithmetic with a
  scalar whose numpy result is a new BSCALE/BZERO decoding, value for value (``x * 1e3``,
  ``x - 0.5``, ``-x``; see :mod:`dfits.array.affine`);
* anything else (ufuncs, ``np.asarray``, fancy indexing, ``.copy()``) decodes once with the
  Numba decode kernel and carries on as a plain native ``numpy.ndarray``.

``moment_chunk`` in dask computes ``x - mean`` then ``(x - mean) ** 2``: the subtraction returns
a lazy :class:`Deviation` so the squared sum comes from the fused ``(n, mean, M2)`` kernel.
Likewise ``np.isnan`` returns a lazy mask (:mod:`dfits.array.nanmask`), so that xarray's
skipping ``sum`` and ``count`` (built from ``isnan`` and ``where``) count and add on the stored
bits, and a comparison with a scalar returns a lazy threshold cut (:mod:`dfits.array.cuts`),
so that ``where(x > t, x, nan)`` sums and counts do too. A reduction given ``where=`` or
``initial=`` is numpy's, on the decoded values.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import replace
from typing import Any

import numpy as np

from dfits._lazy import kernels
from dfits.array.tiles import LazyPart, materialize

__all__ = ["Deviation", "LazyValues", "StoredChunk"]


class StoredChunk:
    """Stored values of one chunk plus how to decode them."""

    __slots__ = ("_memo", "_pending", "_u", "spec")
    __array_priority__ = 20

    def __init__(self, u: np.ndarray | None, spec: Any, pending: Any = None) -> None:
        # ``pending``, instead of ``u``: a region not read yet (remote files), with
        # ``.shape``, ``.fetch()`` and ``.narrow(index)``. Slicing narrows it, so that the
        # slice dask applies after the chunk task decides what is fetched, not the chunk.
        self._u = u
        self._pending = pending
        self.spec = spec
        self._memo: dict[Any, Any] = {}

    @property
    def u(self) -> np.ndarray:
        """The native unsigned view of the stored values (read now if still pending)."""
        u = self._u
        if u is None:
            u = self._u = self._pending.fetch()
            self._pending = None
        return u

    # -- array protocol -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._u.shape if self._u is not None else self._pending.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """The physical dtype (what decoding produces)."""
        return self.spec.physical

    @property
    def nbytes(self) -> int:
        return self.size * self.spec.physical.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"StoredChunk(shape={self.shape}, stored={self.spec.stored}, dtype={self.dtype})"

    def decode(self) -> np.ndarray:
        """Return the physical values as a new native C-ordered array."""
        self.spec.check()
        return kernels.decode(self.u, self.spec)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.decode()
        return out if dtype is None else out.astype(dtype, copy=False)

    def copy(self) -> np.ndarray:
        # dask's ``finalize`` calls ``.copy()`` on a single-chunk result: hand back numpy.
        return self.decode()

    def astype(self, dtype: Any, **kwargs: Any) -> Any:
        """A stored chunk with wider physical values, or decoded values cast to ``dtype``.

        ``x.astype(np.float64).sum()`` is a common way to ask for float64 accumulation.
        Where every physical value converts exactly (float32 or an integer of up to 32 bits
        to float64, say) the cast stays a stored chunk, so the reduction after it still
        runs on the stored bytes: kernels compute each value as before and store extrema
        and decoded values in the new dtype.
        """
        target = np.dtype(dtype)
        physical = self.spec.physical
        if target == physical and not kwargs.get("copy", True):
            return self
        if (
            target.kind == "f"
            and target.itemsize in (4, 8)
            and np.can_cast(physical, target, "safe")
            and kwargs.get("order", "K") in ("K", "A", "C")
            and kwargs.get("subok", True)
        ):
            return StoredChunk(self._u, replace(self.spec, physical=target), self._pending)
        return self.decode().astype(dtype, **kwargs)

    def __getitem__(self, index: Any) -> Any:
        if _is_basic(index):
            if self._pending is not None:
                narrowed = self._pending.narrow(index)
                if narrowed is not None:
                    if narrowed.shape == ():
                        return self.decode_scalar(narrowed.fetch())
                    return StoredChunk(None, self.spec, narrowed)
            view = self.u[index]
            if isinstance(view, np.ndarray):
                return StoredChunk(view, self.spec)
            return self.decode_scalar(view)
        return self.decode()[index]

    def decode_scalar(self, raw: Any) -> Any:
        """Decode one stored value."""
        return kernels.decode(np.asarray(raw).reshape(1), self.spec)[0]

    # -- numpy dispatch -------------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        from dfits.array.dispatch import HANDLED

        handler = HANDLED.get(func)
        if handler is not None and _plain(kwargs):
            self.spec.check()
            return handler(*args, **kwargs)
        return func(*_materialize(args), **_materialize(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            lazy = self._affine(ufunc, inputs)
            if lazy is None:
                lazy = self._squared(ufunc, inputs)
            if lazy is not None:
                return lazy
        deviation = deviation_of(self, ufunc, method, inputs, kwargs)
        if deviation is not None:
            return deviation
        if len(inputs) == 2 and method == "__call__" and not kwargs:
            # ``x > t``: a lazy threshold cut (see dfits.array.cuts)
            from dfits.array.cuts import COMPARISONS, cut_of

            if ufunc in COMPARISONS:
                first = inputs[0] is self
                cut = cut_of(ufunc, self, inputs[1 if first else 0], first)
                if cut is not None:
                    return cut
        if ufunc is np.isnan and method == "__call__" and not kwargs and len(inputs) == 1:
            # xarray's skipna sum and count start here (see dfits.array.nanmask)
            from dfits.array.nanmask import NanMask

            return NanMask(self)
        return getattr(ufunc, method)(*_materialize(inputs), **_materialize(kwargs))

    def _affine(self, ufunc: Any, inputs: tuple) -> StoredChunk | None:
        """``x * c``, ``x + c``, ``-x``, ... as this chunk with a new BSCALE/BZERO, or None
        (see :mod:`dfits.array.affine`)."""
        from dfits.array.affine import AFFINE_UFUNCS, affine_spec

        if ufunc is np.negative and len(inputs) == 1:
            spec = affine_spec(self.spec, ufunc, None, True)
        elif ufunc in AFFINE_UFUNCS and len(inputs) == 2:
            first = inputs[0] is self
            if first and ufunc is np.subtract and called_from("moment_chunk", 2, 4):
                return None  # dask's ``A - u``: a Deviation (below), whatever ``u`` is
            spec = affine_spec(self.spec, ufunc, inputs[1 if first else 0], first)
        else:
            return None
        return None if spec is None else StoredChunk(self._u, spec, self._pending)

    def _squared(self, ufunc: Any, inputs: tuple) -> Deviation | None:
        """``x ** 2``, ``x * x``, ``np.square(x)`` of floating values as a lazy
        :class:`Deviation` about 0, or None: sums and means of squares (a noise rms) then
        come from the ``(n, mean, M2)`` kernel as ``M2 + n·mean²``."""
        physical = self.spec.physical
        if physical.kind != "f":
            return None  # integer squares wrap around as numpy's do: decode
        square = (ufunc is np.square and len(inputs) == 1) or (
            ufunc is np.multiply and len(inputs) == 2 and inputs[0] is inputs[1] is self
        )
        if not square and ufunc is np.power and len(inputs) == 2 and inputs[0] is self:
            exp = inputs[1]
            square = (
                isinstance(exp, int | float | np.integer | np.floating)
                and not isinstance(exp, bool | np.bool_)
                and exp == 2
                and np.result_type(physical, exp) == physical
            )
        return Deviation(self, np.zeros((), physical), 2) if square else None

    # arithmetic operators route through __array_ufunc__ like numpy's own
    def __sub__(self, other):
        return self.__array_ufunc__(np.subtract, "__call__", self, other)

    def __rsub__(self, other):
        return self.__array_ufunc__(np.subtract, "__call__", other, self)

    def __add__(self, other):
        return self.__array_ufunc__(np.add, "__call__", self, other)

    def __radd__(self, other):
        return self.__array_ufunc__(np.add, "__call__", other, self)

    def __mul__(self, other):
        return self.__array_ufunc__(np.multiply, "__call__", self, other)

    def __rmul__(self, other):
        return self.__array_ufunc__(np.multiply, "__call__", other, self)

    def __truediv__(self, other):
        return self.__array_ufunc__(np.true_divide, "__call__", self, other)

    def __rtruediv__(self, other):
        return self.__array_ufunc__(np.true_divide, "__call__", other, self)

    def __pow__(self, other):
        return self.__array_ufunc__(np.power, "__call__", self, other)

    def __rpow__(self, other):
        return self.__array_ufunc__(np.power, "__call__", other, self)

    def __neg__(self):
        return self.__array_ufunc__(np.negative, "__call__", self)

    def __abs__(self):
        return np.abs(self.decode())

    def __eq__(self, other):  # type: ignore[override]
        return np.equal(self.decode(), _materialize(other))

    def __ne__(self, other):  # type: ignore[override]
        return np.not_equal(self.decode(), _materialize(other))

    def __lt__(self, other):
        return self.__array_ufunc__(np.less, "__call__", self, other)

    def __le__(self, other):
        return self.__array_ufunc__(np.less_equal, "__call__", self, other)

    def __gt__(self, other):
        return self.__array_ufunc__(np.greater, "__call__", self, other)

    def __ge__(self, other):
        return self.__array_ufunc__(np.greater_equal, "__call__", self, other)

    __hash__ = None  # type: ignore[assignment]

    # -- the rest of ndarray's surface, for functions given to ``map_blocks`` --------------
    @property
    def itemsize(self) -> int:
        return self.spec.physical.itemsize

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """A stored chunk of another shape (dask's ``reshape``, ``ravel`` and masks use it).

        numpy reshapes the stored view in place where it can and copies the stored values
        (not decoded ones) where it cannot.
        """
        if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
            shape = tuple(shape[0])
        if order not in ("C", "A"):
            return self.decode().reshape(shape, order=order)
        return StoredChunk(self.u.reshape(shape), self.spec)

    def ravel(self, order: str = "C") -> Any:
        return self.reshape(-1, order=order)

    def transpose(self, *axes: Any) -> StoredChunk:
        return StoredChunk(self.u.transpose(*axes), self.spec)

    @property
    def T(self) -> StoredChunk:
        return self.transpose()

    def squeeze(self, axis: Any = None) -> StoredChunk:
        return StoredChunk(self.u.squeeze(axis), self.spec)

    def swapaxes(self, axis1: int, axis2: int) -> StoredChunk:
        return StoredChunk(self.u.swapaxes(axis1, axis2), self.spec)

    def __getattr__(self, name: str) -> Any:
        # Reductions go through numpy's functions (fused where dfits has a kernel); the
        # other listed ndarray methods act on the decoded values. Anything else is missing,
        # as before: dask, numpy and pickle probe names (``flags.owndata`` after a slice,
        # ``__array_interface__``) and must neither decode nor find an answer.
        if name in _REDUCTIONS:
            return functools.partial(getattr(np, name), self)
        if name in _DECODED:
            return getattr(self.decode(), name)
        if name in _MUTATORS:
            raise TypeError(
                f"stored chunks are read-only: {name}() would change a decoded copy; "
                "call np.array(chunk) first"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


# ndarray methods that are numpy functions of the same name: they reach the fused kernels
_REDUCTIONS = frozenset(
    {"all", "any", "argmax", "argmin", "cumprod", "cumsum", "max", "mean", "min", "prod"}
    | {"ptp", "std", "sum", "var"}
)
# ndarray methods that act on the decoded values (what functions given to map_blocks use)
_DECODED = frozenset(
    {"argsort", "choose", "clip", "compress", "conj", "conjugate", "diagonal", "dot"}
    | {"flatten", "imag", "item", "nonzero", "real", "repeat", "round", "searchsorted"}
    | {"take", "tobytes", "tolist", "trace"}
)
_MUTATORS = frozenset(
    {"fill", "itemset", "partition", "put", "resize", "setfield", "setflags", "sort"}
)


class LazyValues(np.lib.mixins.NDArrayOperatorsMixin):
    """An array worked out from a stored chunk only when something needs its values.

    Subclasses recognise the few numpy calls that the fused kernels answer from the
    stored bytes; everything else gets :meth:`materialize`, the plain numpy value. Python's
    operators go through ``__array_ufunc__`` as numpy's own do (``a == b`` must not fall
    back to identity).
    """

    __slots__ = ()
    __array_priority__ = 20
    #: the subclass's handler table: a name in :mod:`dfits.array.dispatch`, or "module:NAME"
    handlers = ""

    def materialize(self) -> np.ndarray:
        raise NotImplementedError

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.materialize()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_function__(self, func, types, args, kwargs):
        handler = _table(self.handlers).get(func)
        if handler is not None and _plain(kwargs):
            result = handler(*args, **kwargs)
            if result is not NotImplemented:  # a handler may decline (np.where's other uses)
                return result
        return func(*_materialize(args), **_materialize(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*_materialize(inputs), **_materialize(kwargs))

    def __len__(self) -> int:
        return self.shape[0]  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        # the rest of ndarray's surface (``reshape``, ``ravel``, ``T``, methods that
        # functions given to map_blocks call): numpy's, on the values
        if not name.startswith("_") and hasattr(np.ndarray, name):
            return getattr(self.materialize(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    __hash__ = None  # type: ignore[assignment]


class Deviation(LazyValues):
    """Lazy ``(chunk - centre) ** power`` as built by dask's ``moment_chunk``.

    ``chunk`` is a stored chunk, or the values inside a threshold cut
    (:class:`~dfits.array.cuts.CutValues`, NaN elsewhere): anything with ``shape``,
    ``ndim``, ``dtype`` and ``decode()``.
    """

    __slots__ = ("centre", "chunk", "power")
    handlers = "HANDLED_DEVIATION"

    def __init__(self, chunk: Any, centre: np.ndarray, power: int = 1) -> None:
        self.chunk = chunk
        self.centre = centre
        self.power = power

    shape = property(lambda self: self.chunk.shape)
    ndim = property(lambda self: self.chunk.ndim)
    dtype = property(lambda self: np.result_type(self.chunk.dtype, self.centre.dtype))

    def materialize(self) -> np.ndarray:
        """The deviation as a plain array (the slow path, for anything but a squared sum)."""
        return (self.chunk.decode() - materialize(self.centre)) ** self.power

    def __pow__(self, other: Any):
        if self.power == 1 and isinstance(other, int | np.integer) and other >= 1:
            return Deviation(self.chunk, self.centre, int(other))
        return np.power(self.materialize(), other)

    def decode(self) -> np.ndarray:
        """The values (what a NaN-zeroed square reads from, as a stored chunk decodes)."""
        return self.materialize()

    @property
    def keeps_nan(self) -> bool:
        """True when ``(x - c) ** k`` is NaN exactly where ``x`` is: ``c`` a finite scalar
        (``inf ** k`` is inf, not NaN)."""
        c = self.centre
        return not isinstance(c, LazyPart) and np.ndim(c) == 0 and bool(np.isfinite(c))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # dask's nannumel and xarray's skipping sum of ``x ** 2``: the chunk's NaN mask
        isnan = ufunc is np.isnan and method == "__call__" and not kwargs and len(inputs) == 1
        if isnan and self.keeps_nan:
            from dfits.array.nanmask import NanMask

            return NanMask(self.chunk)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)


def deviation_of(values: Any, ufunc: Any, method: str, inputs: tuple, kwargs: dict):
    """``values - centre`` (dask's ``d = A - u``) as a lazy :class:`Deviation`, or None.

    ``values`` must be the first operand and the centre a plain or lazily added array (a
    scalar too), not stored or lazy values themselves.
    """
    if (
        ufunc is np.subtract
        and method == "__call__"
        and not kwargs
        and len(inputs) == 2
        and inputs[0] is values
        and not isinstance(inputs[1], StoredChunk | LazyValues)
    ):
        centre = inputs[1]
        return Deviation(values, centre if isinstance(centre, LazyPart) else np.asarray(centre))
    return None


def called_from(name: str, start: int, depth: int) -> bool:
    """True when a function ``name`` is among ``depth`` callers, from ``start`` frames up.

    How the handlers recognise dask's chunk functions (``moment_chunk``, ``arg_chunk``,
    ``mean_chunk``) that will ask for more from the same chunk, so that one kernel pass
    answers them all. ``start`` counts this function as frame 0.
    """
    frame = sys._getframe(start)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_code.co_name == name:
            return True
        frame = frame.f_back
    return False


@functools.cache
def _table(name: str) -> dict:
    """A handler table by name: ``"TABLE"`` in :mod:`dfits.array.dispatch`, or
    ``"module:TABLE"``."""
    import importlib

    module, _, table = name.rpartition(":")
    return getattr(importlib.import_module(module or "dfits.array.dispatch"), table)


def _plain(kwargs: dict[str, Any]) -> bool:
    """True unless a reduction is asked for a ``where`` mask or an ``initial`` value.

    The kernels reduce whole slices; numpy answers those two (on the decoded values).
    """
    return kwargs.get("where", True) is True and kwargs.get("initial") is None


def _is_basic(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, slice | int | np.integer) or i is Ellipsis or i is None for i in items)


def _materialize(obj: Any) -> Any:
    """Replace stored chunks (recursively in lists/tuples/dicts) with decoded arrays, and
    lazy values (a lazy quotient of partials too) with theirs."""
    if isinstance(obj, StoredChunk):
        return obj.decode()
    if isinstance(obj, LazyValues | LazyPart):
        return materialize(obj) if isinstance(obj, LazyPart) else obj.materialize()
    if isinstance(obj, list | tuple):
        return type(obj)(_materialize(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _materialize(v) for k, v in obj.items()}
    return obj
