"""Large partials of dask's arg reductions (argmin/argmax along an axis), combined part by part.

dask's ``arg_chunk`` packs a chunk's extremes and their indices into a fresh structured array
(``[("vals", ...), ("arg", intp)]``); every combine step concatenates ``k`` of them, runs
``argmax`` over the strided ``vals`` field and gathers both fields with fancy indexing. For a
peak-channel map of a 1024² cube that is 12 MiB of fresh structured memory per chunk and
``k × 12 MiB`` per combine, and fresh memory is what costs most on the machines we measure:
``x.argmax(axis=0)`` of a 1 GiB cube took 4–5× ``x.max(axis=0)``, most of it in combines.

Here the chunk's extremes come back as an :class:`ArgValues` (a plain ndarray subclass). dask
asks it for a structured ``empty_like`` and gets an :class:`ArgPair`, which keeps the two maps
it is handed apart, by reference. dask's combine step concatenates pairs through our
``concatenate`` hook, which gives an :class:`ArgStack`; its fields are :class:`FieldStack`
objects, whose ``argmax``/``argmin``/``nanargmax``/``nanargmin`` along the stacked axis pick
the winning part, one Numba pass per part (numpy's rules: the first extreme wins ties; a NaN
wins unless NaNs are skipped), and whose fancy indexing with dask's ``ogrid`` pattern gathers
from the winners. No structured array, concatenation or index map as large as the result is made.

Anything else asked of these objects (another function, another index, pickling) gets what
numpy would give for the structured or concatenated array, so results do not depend on the
path; results returned to users are plain ndarrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dfits.array.partials import plain_nested
from dfits.kernels.argcombine import fold_part, gather_part

__all__ = ["ArgPair", "ArgStack", "ArgValues", "FieldStack", "concatenate_pairs"]

#: Partials below this many bytes (values and indices) stay on dask's structured path.
MIN_BYTES = 1 << 12

_ARGS = {np.argmax: (True, False), np.nanargmax: (True, True)}
_ARGS |= {np.argmin: (False, False), np.nanargmin: (False, True)}


def wants_pair(values: np.ndarray) -> bool:
    """True when an ``arg_chunk`` partial of these values is worth keeping apart."""
    return values.ndim > 0 and values.size * (values.itemsize + 8) >= MIN_BYTES


class ArgValues(np.ndarray):
    """A chunk's extremes, on their way into dask's ``arg_chunk`` result."""

    __array_priority__ = 25.0

    def __array_function__(self, func, types, args, kwargs):
        if func is np.empty_like and _structured(kwargs.get("dtype")):
            shape = kwargs.get("shape")
            return ArgPair(self.shape if shape is None else shape, kwargs["dtype"])
        result = func(*_plain_all(args), **_plain_all(kwargs))
        if func is np.expand_dims and isinstance(result, np.ndarray):
            # arg_combine's keepdims step, before its structured empty_like
            return result.view(ArgValues)
        return result

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return getattr(ufunc, method)(*(_plain(i) for i in inputs), **kwargs)

    def copy(self, order: str = "C") -> np.ndarray:  # type: ignore[override]
        return np.array(self.view(np.ndarray), order=order, copy=True)


class ArgPair:
    """A structured ``(vals, arg)`` array whose fields are two arrays held by reference.

    dask writes each field once (``result["vals"] = vals``) and then hands the pair to its
    combine step; anything that needs the real structured array gets it (``__array__``, and
    pickling, so another process sees plain numpy).
    """

    __array_priority__ = 26.0
    __slots__ = ("dtype", "fields", "shape")

    def __init__(self, shape: Any, dtype: Any) -> None:
        self.shape = tuple(shape) if np.ndim(shape) else (int(shape),)
        self.dtype = np.dtype(dtype)
        self.fields: dict[str, np.ndarray] = {}

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (isinstance(key, str) and key in (self.dtype.names or ())):
            raise TypeError(f"ArgPair only takes whole fields, not {key!r}")
        field = self.dtype.fields[key][0]
        value = np.asarray(_plain(value))
        if value.shape != self.shape or value.dtype != field:
            # what numpy's field assignment would store: broadcast and cast
            value = np.broadcast_to(value, self.shape).astype(field)
        self.fields[key] = value

    def field(self, key: str) -> np.ndarray:
        if key not in self.fields:
            # a field never written holds what np.empty would: anything; zeros here
            self.fields[key] = np.zeros(self.shape, self.dtype.fields[key][0])
        return self.fields[key]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.field(key)
        return self.__array__()[key]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        for name in self.dtype.names or ():
            out[name] = self.field(name)
        return out if dtype is None else out.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain_all(args), **_plain_all(kwargs))

    def __reduce__(self):
        return self.__array__().__reduce__()

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"ArgPair(shape={self.shape}, dtype={self.dtype})"


def concatenate_pairs(arrays, axis: int = 0, out: Any = None):
    """dask's ``concatenate`` for arg partials: an :class:`ArgStack` where one fits."""
    arrays = list(arrays)
    stack = ArgStack.of(arrays, axis) if out is None else None
    if stack is not None:
        return stack
    return np.concatenate([_plain(a) for a in arrays], axis=axis, out=out)


class _Stacked:
    """Parts dask meant to concatenate along ``axis``, each 1 deep there, kept apart."""

    __array_priority__ = 27.0
    __slots__ = ("_dense", "axis", "parts")

    def __init__(self, parts: list[Any], axis: int) -> None:
        self.parts = parts
        self.axis = axis
        self._dense: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        shape = list(self.parts[0].shape)
        shape[self.axis] = len(self.parts)
        return tuple(shape)

    @property
    def ndim(self) -> int:
        return self.parts[0].ndim

    @property
    def dtype(self) -> np.dtype:
        return self.parts[0].dtype

    def dense(self) -> np.ndarray:
        """The concatenation dask asked for (made once, only when something needs it)."""
        if self._dense is None:
            self._dense = np.concatenate([_plain(p) for p in self.parts], axis=self.axis)
        return self._dense

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain_all(args), **_plain_all(kwargs))

    def __getattr__(self, name: str) -> Any:
        # array methods dask or numpy may reach for act on the concatenation; our own
        # (private) names never fall through to it
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.dense(), name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"


class ArgStack(_Stacked):
    """Structured arg partials dask meant to concatenate along ``axis``."""

    __slots__ = ()

    @classmethod
    def of(cls, parts: list[Any], axis: int) -> ArgStack | None:
        """A stack of ``parts``, or None when they are not alike arg partials."""
        first = parts[0]
        names = getattr(first.dtype, "names", None) or ()
        if not {"vals", "arg"} <= set(names) or not 0 <= axis < first.ndim:
            return None
        for p in parts:
            if not isinstance(p, ArgPair | np.ndarray) or p.dtype != first.dtype:
                return None
            if p.shape[axis] != 1 or p.shape != first.shape:
                return None
        return cls(parts, axis)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and key in ("vals", "arg"):
            return FieldStack([_field(p, key) for p in self.parts], self.axis)
        return self.dense()[key]


class FieldStack(_Stacked):
    """One field of an :class:`ArgStack`: its parts, each 1 deep along ``axis``."""

    __slots__ = ("_choice",)

    def __init__(self, parts: list[np.ndarray], axis: int) -> None:
        super().__init__(parts, axis)
        self._choice: tuple[np.ndarray, np.ndarray] | None = None

    def __array_function__(self, func, types, args, kwargs):
        choice = _ARGS.get(func)
        if choice is not None and args and args[0] is self:
            kw = dict(kwargs)
            if len(args) > 1:
                kw.setdefault("axis", args[1])
            axis = kw.pop("axis", None)
            if (
                len(args) <= 2
                and not kw
                and axis is not None
                and np.ndim(axis) == 0
                and int(axis) % self.ndim == self.axis
            ):
                return self._choose(*choice)
        return super().__array_function__(func, types, args, kwargs)

    def _choose(self, want_max: bool, skipna: bool) -> np.ndarray:
        """The index of each element's winning part (what numpy's arg function returns)."""
        values = self._flat_parts()
        shape = self.shape[: self.axis] + self.shape[self.axis + 1 :]
        # dask only indexes with it: the smallest integer type that counts the parts
        winner = np.zeros(values[0].size, np.min_scalar_type(len(values) - 1))
        best = values[0].copy()  # the running best: part 0's values must stay as they are
        for k in range(1, len(values)):
            fold_part(best, winner, values[k], k, want_max=want_max, skipna=skipna)
        winner, best = winner.reshape(shape), best.reshape(shape)
        self._choice = (winner, best)
        return winner

    def _flat_parts(self) -> list[np.ndarray]:
        # each part is 1 deep along the stacked axis: flat views (strided for the fields of
        # a structured part), copied only where numpy cannot flatten without copying
        return [np.asarray(p).reshape(-1) for p in self.parts]

    def __getitem__(self, index: Any) -> Any:
        picked = self._picked(index)
        if picked is None:
            return self.dense()[index]
        if self._choice is not None and picked is self._choice[0]:
            # dask's ``vals[inds]`` right after its argmax: the best values are known
            return self._choice[1].view(ArgValues)
        return self._gather(picked)

    def _picked(self, index: Any) -> np.ndarray | None:
        """The winner map when ``index`` is dask's ``ogrid`` pattern around it, else None."""
        if not isinstance(index, tuple) or len(index) != self.ndim:
            return None
        picked = index[self.axis]
        shape = self.shape[: self.axis] + self.shape[self.axis + 1 :]
        if not (
            isinstance(picked, np.ndarray) and picked.dtype.kind in "iu" and picked.shape == shape
        ):
            return None
        others = index[: self.axis] + index[self.axis + 1 :]
        for dim, (grid, n) in enumerate(zip(others, shape, strict=True)):
            want = (1,) * dim + (n,) + (1,) * (len(shape) - dim - 1)
            if not isinstance(grid, np.ndarray) or grid.shape != want:
                return None
            if not np.array_equal(grid.reshape(-1), np.arange(n)):
                return None
        if picked.size and (picked.min() < 0 or picked.max() >= len(self.parts)):
            return None
        return picked

    def _gather(self, picked: np.ndarray) -> np.ndarray:
        values = self._flat_parts()
        flat = np.ascontiguousarray(picked).reshape(-1)
        out = values[0].copy()  # the result map: the winners' values are written over it
        for k in range(1, len(values)):
            gather_part(out, flat, values[k], k)
        return out.reshape(picked.shape)


def _field(part: Any, name: str) -> np.ndarray:
    if isinstance(part, ArgPair):
        return part.field(name)
    return np.asarray(part)[name]


def _structured(dtype: Any) -> bool:
    try:
        return dtype is not None and np.dtype(dtype).names is not None
    except TypeError:
        return False


def _plain(obj: Any) -> Any:
    if isinstance(obj, ArgValues):
        return obj.view(np.ndarray)
    if isinstance(obj, ArgPair | ArgStack | FieldStack):
        return obj.__array__()
    return obj


def _plain_all(obj: Any) -> Any:
    return plain_nested(obj, _plain)
