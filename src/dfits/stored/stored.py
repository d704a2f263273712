"""The stored chunk: what every dfits chunk task hands dask instead of a decoded array.

A :class:`StoredChunk` holds a zero-copy native unsigned view of a chunk's stored values (an
mmap of the file for local files) and their decode spec. It is a NEP-18 duck array whose
contract is simple:

* the numpy functions in :attr:`StoredChunk.handlers` (sums, means, variances, extrema and
  their indices; :mod:`dfits.stored.handlers`, listed in :mod:`dfits.stored.recognised`) run a
  fused kernel on the stored bits; each kernel
  pass is memoised on the chunk, so related requests (a count, then a sum) cost one pass;
* basic slicing, reshapes, an exact widening ``astype`` and arithmetic with a scalar that
  FITS scaling expresses value for value (:mod:`dfits.stored.affine`) stay stored;
* a few ufuncs return lazy values that the fused kernels answer when reduced next and that
  compute numpy's own result for anything else (``x - m`` and ``x ** 2``: a
  :class:`Deviation`; comparisons and ``isnan``: the rules in
  :data:`dfits.stored.recognised.UFUNC_RULES`);
* **anything else decodes once**, into a read-only native array (the chunk is a read-only
  view of a file, like ``np.memmap(mode="r")``) kept on the chunk: every ndarray attribute,
  method and protocol is that array's, and the handlers still answer from the stored bytes
  (the same values, so results never depend on which task decoded a shared chunk first);
* **writing to it** (``__setitem__``, ``out=``, ``+=``, ``sort()``, ``fill()``, ...) makes
  the decoded array the chunk's own, writable value: from then on everything is numpy's
  on it, as on an ndarray.

Nothing here looks at who is calling: what is answered lazily is recognised from the values
and the function asked for, and every lazy answer equals numpy's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from dfits._lazy import kernels
from dfits.stored.affine import AFFINE_UFUNCS, affine_spec
from dfits.stored.lazy import (
    RULES,
    Deviation,
    Lazy,
    _is_basic,
    _plain,
    deviation_of,
    materialize,
)
from dfits.stored.recognised import ChunkFlags, c_strides

__all__ = ["StoredChunk"]


class StoredChunk(Lazy):
    """Stored values of one chunk plus how to decode them."""

    __slots__ = ("_base", "_memo", "_owned", "_pending", "_u", "_values", "spec")
    handlers: ClassVar[dict[Callable[..., Any], Callable[..., Any]]] = {}

    def __init__(
        self, u: np.ndarray | None, spec: Any, pending: Any = None, base: Any = None
    ) -> None:
        # ``pending``, instead of ``u``: a region not read yet, the reader contract's
        # :class:`~dfits.array.reader.PendingRegion`. Slicing narrows it, so that the slice
        # dask applies after the chunk task decides what is fetched, not the chunk.
        # ``base``: for a view cut from another chunk, the stored values it was cut from.
        self._u = u
        self._base = base
        self._pending = pending
        self._values: np.ndarray | None = None
        self._owned = False
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

    @property
    def unread(self) -> Any:
        """The pending region (remote range, quantised tiles) while unread, else None."""
        return self._pending if self._u is None else None

    @property
    def decoded(self) -> bool:
        """True once written to: its values are then its own decoded array, not kernels'."""
        return self._owned

    # -- array attributes -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        if self._owned:
            return self._values.shape
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
        return self._values.dtype if self._owned else self.spec.physical

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    # The layout attributes describe the array the chunk stands for (its decoded values, a
    # fresh read-only C-ordered array of its own), so they are answered without decoding:
    # dask's ``getitem`` asks ``flags.owndata`` of every chunk slice (a trick listed in
    # :mod:`dfits.stored.recognised`).
    @property
    def flags(self) -> Any:
        return self._values.flags if self._owned else ChunkFlags(self)

    @property
    def strides(self) -> tuple[int, ...]:
        if self._owned:
            return self._values.strides
        return c_strides(self.shape, self.itemsize)

    @property
    def base(self) -> Any:
        """None for a chunk task's own chunk; for a view of one, the values it was cut from.

        distributed's P2P rechunk copies each shard whose ``base`` is set into a plain array,
        which it needs (a ``memoryview``; Python < 3.12 gives Python classes no buffer).
        ``flags.owndata`` stays True, or dask's ``getitem`` would copy (decode) every slice.
        """
        return self._values.base if self._owned else self._base

    def _cut(self) -> Any:
        """The ``base`` of views of this chunk: where its stored values come from."""
        if self._base is not None:
            return self._base
        return self._u if self._u is not None else self._pending

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        state = "decoded" if self.decoded else f"stored={self.spec.stored}"
        return f"StoredChunk(shape={self.shape}, {state}, dtype={self.dtype})"

    # -- decoding -------------------------------------------------------------------------
    def decode(self) -> np.ndarray:
        """The physical values, decoded once into an array kept on the chunk.

        Read-only until the chunk is written to (see :meth:`own`); the stored view stays,
        so the handlers still answer from the stored bytes.
        """
        if self._values is None:
            values = self._fresh()
            values.flags.writeable = False
            self._values = values
        return self._values

    values = decode

    def own(self) -> np.ndarray:
        """The decoded values as the chunk's own writable array (what writing to it does):
        from then on the chunk is that array, and lazy values made from it before still
        reduce the values it had then, as numpy's eager ones would."""
        values = self.decode()
        if not self._owned:
            values.flags.writeable = True  # our own fresh array: nothing else writes it
            self._owned = True
        return values

    def _fresh(self) -> np.ndarray:
        """A new native C-ordered array of the physical values (the chunk stays stored)."""
        if self._owned:
            return self._values.copy()
        self.spec.check()
        return kernels.decode(self.u, self.spec)

    def decode_scalar(self, raw: Any) -> Any:
        """Decode one stored value."""
        self.spec.check()
        return kernels.decode(np.asarray(raw).reshape(1), self.spec)[0]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self._fresh() if copy else self.decode()
        return out if dtype is None else out.astype(dtype, copy=False)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self.decode().__array_interface__

    def __buffer__(self, flags: int) -> memoryview:  # Python >= 3.12 (PEP 688)
        return memoryview(self.decode())

    def __reduce__(self):
        # shipped to another worker: the stored values and spec (kernels still apply there),
        # or the decoded values once decoded
        if self._owned:
            return (np.asarray, (self._values,))
        return (StoredChunk, (np.ascontiguousarray(self.u), self.spec))

    def copy(self, order: str = "K") -> np.ndarray:
        """A new plain ndarray of the values (dask's ``finalize`` of one chunk calls it)."""
        if self._values is not None or order not in ("K", "C", "A"):
            return self.decode().copy(order)
        return self._fresh()

    # -- stored views ---------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Any:
        if self._owned:
            return self._values[index]
        if not _is_basic(index):
            return self.decode()[index]
        if self._pending is not None:
            narrowed = self._pending.narrow(index)
            if narrowed is not None:
                if narrowed.shape == ():
                    return self.decode_scalar(narrowed.fetch())
                return StoredChunk(None, self.spec, narrowed, self._cut())
        view = self.u[index]
        if isinstance(view, np.ndarray):
            return StoredChunk(view, self.spec, base=self._cut())
        return self.decode_scalar(view)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.own()[index] = materialize(value)

    def __iter__(self):
        return iter(self.decode())

    def __bool__(self) -> bool:
        return bool(self.decode())

    def __float__(self) -> float:
        return float(self.decode())

    def __int__(self) -> int:
        return int(self.decode())

    def __index__(self) -> int:
        return self.decode().__index__()

    def __complex__(self) -> complex:
        return complex(self.decode())

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", **kwargs: Any):
        """A stored chunk with wider physical values, or decoded values cast to ``dtype``.

        ``x.astype(np.float64).sum()`` is a common way to ask for float64 accumulation.
        Where every physical value converts exactly (float32 or an integer of up to 32 bits
        to float64, say) the cast stays a stored chunk, so the reduction after it still runs
        on the stored bytes: kernels compute each value as before and keep it in the new
        dtype.
        """
        target = np.dtype(dtype)
        if (
            not self._owned
            and target.kind == "f"
            and target.itemsize in (4, 8)
            and np.can_cast(self.spec.physical, target, "safe")
            and order in ("K", "A", "C")
            and kwargs.get("subok", True)
        ):
            if target == self.spec.physical and not kwargs.get("copy", True):
                return self
            spec = replace(self.spec, physical=target)
            return StoredChunk(self._u, spec, self._pending, self._base)
        return self.decode().astype(dtype, order, casting, **kwargs)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """A stored chunk of another shape (numpy reshapes the stored view in place where it
        can and copies the stored values, not decoded ones, where it cannot)."""
        if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
            shape = tuple(shape[0])
        if self._owned or order not in ("C", "A"):
            return self.decode().reshape(shape, order=order)
        return StoredChunk(self.u.reshape(shape), self.spec, base=self._cut())

    def ravel(self, order: str = "C") -> Any:
        return self.reshape(-1, order=order)

    def transpose(self, *axes: Any) -> Any:
        return self._view(lambda a: a.transpose(*axes))

    @property
    def T(self) -> Any:
        return self.transpose()

    def squeeze(self, axis: Any = None) -> Any:
        return self._view(lambda a: a.squeeze(axis))

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        return self._view(lambda a: a.swapaxes(axis1, axis2))

    def _view(self, how: Callable[[np.ndarray], np.ndarray]) -> Any:
        if self._owned:
            return how(self._values)
        return StoredChunk(how(self.u), self.spec, base=self._cut())

    # -- numpy dispatch -------------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        handler = self.handlers.get(func) if not self._owned else None
        if handler is not None and _plain(kwargs) and kwargs.get("out") is None:
            result = handler(*args, **kwargs)
            if result is not NotImplemented:  # a handler may decline (np.where's other uses)
                return result
        return func(*materialize(args), **materialize(kwargs, writing=True))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not self._owned and method == "__call__" and not kwargs:
            lazy = self._affine(ufunc, inputs)
            if lazy is None:
                lazy = _squared(self, ufunc, inputs)
            if lazy is None:
                lazy = deviation_of(self, ufunc, inputs)
            rules = iter(RULES.get(ufunc, ()))
            while lazy is None and (rule := next(rules, None)) is not None:
                lazy = rule(self, inputs)
            if lazy is not None:
                return lazy
        return getattr(ufunc, method)(*materialize(inputs), **materialize(kwargs, writing=True))

    def _affine(self, ufunc: Any, inputs: tuple) -> StoredChunk | None:
        """``x * c``, ``x + c``, ``-x``, ... as this chunk with a new BSCALE/BZERO, or None."""
        if ufunc is np.negative and len(inputs) == 1:
            spec = affine_spec(self.spec, ufunc, None, True)
        elif ufunc in AFFINE_UFUNCS and len(inputs) == 2:
            first = inputs[0] is self
            spec = affine_spec(self.spec, ufunc, inputs[1 if first else 0], first)
        else:
            return None
        return None if spec is None else StoredChunk(self._u, spec, self._pending, self._base)

    def __getattr__(self, name: str) -> Any:
        # ndarray's reductions go through numpy's functions (fused where a handler exists);
        # every other public ndarray attribute is the decoded array's. Private and dunder
        # names are missing, as on ndarray: dask, numpy and pickle probe them.
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name in _REDUCTIONS and not self._owned:
            return functools.partial(getattr(np, name), self)
        if name in _MUTATORS:
            return getattr(self.own(), name)
        if name == "byteswap":
            return functools.partial(_byteswap, self)
        if hasattr(np.ndarray, name):
            return getattr(self.decode(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    __hash__ = None  # type: ignore[assignment]


# ndarray methods that are numpy functions of the same name: they reach the fused kernels
_REDUCTIONS = frozenset(
    {"all", "any", "argmax", "argmin", "max", "mean", "min", "prod", "std", "sum", "var"}
)
# ndarray methods that write into the array: they act on the chunk's own decoded values
_MUTATORS = frozenset(
    {"fill", "itemset", "partition", "put", "resize", "setfield", "setflags", "sort"}
)


def _byteswap(chunk: StoredChunk, inplace: bool = False) -> np.ndarray:
    return chunk.own().byteswap(True) if inplace else chunk.decode().byteswap()


def _squared(chunk: StoredChunk, ufunc: Any, inputs: tuple) -> Deviation | None:
    """``x ** 2``, ``x * x``, ``np.square(x)`` of floating values as a lazy
    :class:`Deviation` about 0, or None: sums and means of squares (a noise rms) then come
    from the ``(n, mean, M2)`` kernel as ``M2 + n·mean²``."""
    physical = chunk.spec.physical
    if physical.kind != "f":
        return None  # integer squares wrap around as numpy's do: decode
    square = (ufunc is np.square and len(inputs) == 1) or (
        ufunc is np.multiply and len(inputs) == 2 and inputs[0] is inputs[1] is chunk
    )
    if not square and ufunc is np.power and len(inputs) == 2 and inputs[0] is chunk:
        exp = inputs[1]
        square = (
            isinstance(exp, int | float | np.integer | np.floating)
            and not isinstance(exp, bool | np.bool_)
            and exp == 2
            and np.result_type(physical, exp) == physical
        )
    return Deviation(chunk, np.zeros((), physical), 2) if square else None
