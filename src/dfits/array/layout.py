"""The layout a decoded chunk has: a fresh C-ordered array owning its memory.

A stored chunk answers ``flags``, ``strides`` and ``base`` as its decoded values will have
them, without decoding (dask's ``getitem`` asks ``flags.owndata`` of every chunk slice).
"""

from __future__ import annotations

__all__ = ["FRESH_FLAGS", "c_strides"]


class _Flags(dict):
    """``ndarray.flags`` of a fresh C-ordered array, by attribute or by key."""

    __getattr__ = dict.__getitem__


FRESH_FLAGS = _Flags(
    {"c_contiguous": True, "f_contiguous": False, "owndata": True, "writeable": True}
    | {"aligned": True, "writebackifcopy": False, "forc": True, "fnc": False, "behaved": True}
    | {"carray": True, "farray": False}
)
FRESH_FLAGS.update({k.upper(): v for k, v in list(FRESH_FLAGS.items())})
FRESH_FLAGS.update({"C": True, "F": False, "O": True, "W": True, "A": True, "X": False})


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))
