"""Counts of float values per 16-bit slice of their order keys: exact medians in a few passes.

A float's *key* is its bit pattern made to sort as the float does (negative values: every bit
flipped; the others: the sign bit set), so ranks among keys are ranks among values. Given the
16 key bits above ``shift`` and the ``prefix`` of bits above them, :func:`key_counts` counts
the valid (non-NaN) values of an array per value of those 16 bits, among the values whose key
starts with a given prefix. One call over every chunk finds which 16-bit slice holds a rank;
``bits // 16`` calls pin its key exactly (2 for float32, 4 for float64), whatever the values
(denormals, infinities, many equal values). With ``centre`` given the values counted are
``|v - centre|`` in the array's own type (numpy's arithmetic for ``abs(x - median)``).

:func:`key_counts_oracle` is the numpy definition; :func:`key_of` and :func:`value_of` turn
floats into keys and back.

Examples
--------
>>> import numpy as np
>>> v = np.array([3.0, -1.0, np.nan, 2.0], np.float32)
>>> counts = key_counts(v, None, 16, np.zeros(1, np.uint32))
>>> int(counts.sum())
3
"""

from __future__ import annotations

import functools

import numpy as np
from numba import types
from numba.extending import intrinsic

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = ["BINS", "key_counts", "key_counts_oracle", "key_of", "value_of"]

#: Bins per pass: the values of 16 key bits.
BINS = 1 << 16
_UINT = {4: np.uint32, 8: np.uint64}


def _bits_of(vtype: types.Float, utype: types.Integer, name: str):
    """An intrinsic ``float -> its bits`` (a register bit cast, no memory)."""

    @intrinsic
    def cast(typingctx, value):
        if value != vtype:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(utype))

        return utype(vtype), codegen

    cast.__name__ = name
    return cast


_BITS = {4: _bits_of(types.float32, types.uint32, "bits_f4"),
         8: _bits_of(types.float64, types.uint64, "bits_f8")}  # fmt: skip


@functools.cache
def _key_counts_kernel(itemsize: int, deviate: bool):
    bits = _BITS[itemsize]
    ut = _UINT[itemsize]
    vt = np.float32 if itemsize == 4 else np.float64
    sign = ut(1 << (8 * itemsize - 1))
    low = ut(BINS - 1)

    @inline
    def kernel(values, centre, shift, prefixes, counts):
        c = vt(centre)
        s = ut(shift)
        k = prefixes.size
        for i in range(values.size):
            v = values[i]
            if deviate:
                v = abs(v - c)
            if v != v:  # NaN: left out, as nanmedian leaves it
                continue
            b = bits(v)
            key = ~b if b & sign else b | sign
            high = key >> s
            top = high >> ut(16)
            for j in range(k):
                if top == prefixes[j]:
                    counts[j, high & low] += 1
                    break
        return 0

    return entry(kernel, itemsize, deviate)


def key_counts(
    values: np.ndarray, centre: float | None, shift: int, prefixes: np.ndarray
) -> np.ndarray:
    """Counts ``(len(prefixes), BINS)`` of the valid values per 16 key bits above ``shift``.

    Parameters
    ----------
    values : numpy.ndarray
        Native float32 or float64 values, any shape (a copy is made only if not contiguous).
    centre : float or None
        When given, the values counted are ``|values - centre|`` (``centre`` cast to the
        values' type first).
    shift : int
        The lowest key bit of the 16 counted: a multiple of 16 below the key width.
    prefixes : numpy.ndarray
        Unsigned ints of the key's width: row ``j`` counts the values whose key bits above
        ``shift + 16`` equal ``prefixes[j]`` (0 when ``shift + 16`` is the width: all).
    """
    itemsize = values.dtype.itemsize
    flat = np.ascontiguousarray(values).reshape(-1)  # a view for the decoded chunks we get
    counts = np.zeros((len(prefixes), BINS), np.int64)
    run = _key_counts_kernel(itemsize, centre is not None)
    run(flat, 0.0 if centre is None else float(centre), shift,
        np.asarray(prefixes, _UINT[itemsize]), counts)  # fmt: skip
    return counts


def key_of(values: np.ndarray) -> np.ndarray:
    """The order keys of float ``values`` (unsigned ints of their width)."""
    v = np.asarray(values)
    bits = v.view(_UINT[v.dtype.itemsize])
    sign = bits.dtype.type(1 << (8 * v.dtype.itemsize - 1))
    return np.where(bits & sign, ~bits, bits | sign)


def value_of(key: int, dtype: np.dtype) -> np.floating:
    """The float of ``dtype`` whose order key is ``key``."""
    ut = _UINT[np.dtype(dtype).itemsize]
    k = np.array([key], ut)
    sign = ut(1 << (8 * k.itemsize - 1))
    bits = np.where(k & sign, k & ~sign, ~k)
    return bits.view(dtype)[0]


def key_counts_oracle(
    values: np.ndarray, centre: float | None, shift: int, prefixes: np.ndarray
) -> np.ndarray:
    """The numpy definition of :func:`key_counts`."""
    v = np.asarray(values).reshape(-1)
    if centre is not None:
        v = np.abs(v - v.dtype.type(centre))
    keys = key_of(v[~np.isnan(v)]).astype(np.uint64)
    counts = np.zeros((len(prefixes), BINS), np.int64)
    high = keys >> np.uint64(shift)
    for j, p in enumerate(np.asarray(prefixes, np.uint64)):
        if p in np.asarray(prefixes, np.uint64)[:j]:
            continue  # a repeated prefix counts in its first row only
        mine = (high >> np.uint64(16)) == p
        counts[j] = np.bincount((high[mine] & np.uint64(BINS - 1)).astype(np.int64), minlength=BINS)
    return counts
