"""Per-encoding element loaders: stored unsigned bits → value, inlined into every kernel.

A *kind* is ``(bitpix, mode, has_blank, swap)``; for each kind we build three tiny
``inline="always"`` functions that kernels call on ``u[i]`` (a native unsigned view element):

``valid(x, blank)``
    False for BLANK (integers) or NaN (floats); constant True when nothing can be missing.
``phys(x, scale, zero, blank)``
    The physical value *exactly as astropy computes it*: in float32 arithmetic for BITPIX 8/16
    scaled data, float64 for 32/64, the unsigned/int8 offset as a bit flip, NaN for BLANK.
``f64(x, scale, zero, blank)``
    The value in float64 for accumulation (sum, mean, variance), NaN for BLANK.

and, for reductions that skip values, ``keep`` (:func:`keeper`): valid, or inside a band.

Because the swap happens on a register value, the vectoriser sees a load, a shuffle and the
arithmetic: the big-endian → native conversion costs no extra memory pass. ``swap`` is False
for values already in native order (decoded tiles): the loaders then only reinterpret bits.
Raw comparisons (``x != blank``) need BLANK's bit pattern in the same order as the values:
the caller passes it so (``api``).
"""

from __future__ import annotations

import functools
import sys
from typing import NamedTuple

import numpy as np
from numba import njit

from dfits.kernels._swap import NATIVE, SWAPPED, load_i1, swap_bits

__all__ = ["Kind", "Loaders", "is_swapped", "keeper", "kind_of", "loaders"]
_TOPBIT = {
    8: np.uint8(0x80),
    16: np.uint16(0x8000),
    32: np.uint32(0x80000000),
    64: np.uint64(0x8000000000000000),
}
_UNSIGNED_VIEW = {
    8: np.uint8,
    16: np.uint16,
    32: np.uint32,
    64: np.uint64,
    -32: np.uint32,
    -64: np.uint64,
}


class Kind(NamedTuple):
    """Compile-time description of an encoding (runtime numbers are passed separately)."""

    bitpix: int
    mode: str  # "raw" | "offset" | "scaled"
    has_blank: bool
    swap: bool  # stored in the other byte order than this machine's: bswap each value

    @property
    def view_dtype(self) -> np.dtype:
        """Native unsigned dtype that kernels read the stored bytes as."""
        return np.dtype(_UNSIGNED_VIEW[self.bitpix])

    @property
    def is_float(self) -> bool:
        """True for IEEE-float stored values."""
        return self.bitpix < 0

    @property
    def can_be_missing(self) -> bool:
        """True when some physical values may be NaN."""
        return self.is_float or (self.mode == "scaled" and self.has_blank)


def kind_of(spec) -> Kind:
    """Return the :class:`Kind` of any object with ``bitpix``, ``mode``, ``blank`` and
    ``byteorder`` (``">"`` big-endian, ``"="`` native)."""
    has_blank = spec.mode == "scaled" and spec.blank is not None and spec.bitpix > 0
    # a single byte has no order: both orders share one compiled kernel
    swap = is_swapped(spec.byteorder) and spec.bitpix != 8
    return Kind(int(spec.bitpix), str(spec.mode), bool(has_blank), swap)


def is_swapped(byteorder: str) -> bool:
    """Whether values stored in ``byteorder`` must be byte-swapped on this machine."""
    if byteorder not in (">", "="):
        raise ValueError(f"stored byte order must be '>' or '=', not {byteorder!r}")
    return byteorder == ">" and sys.byteorder == "little"


class Loaders(NamedTuple):
    valid: object
    phys: object
    f64: object


_inline = njit(inline="always", nogil=True)


@functools.cache
def loaders(kind: Kind) -> Loaders:
    """Build (and cache) the inlined loader functions for one kind."""
    signed = (SWAPPED if kind.swap else NATIVE)[kind.bitpix]
    phys = _phys(kind, signed)
    return Loaders(_valid(kind, signed), phys, _f64(kind, signed, phys))


def _valid(kind: Kind, signed):
    """``valid(x, blank)``: False for NaN (floats) or BLANK (compared as raw bits)."""
    if kind.is_float:

        @_inline
        def valid(x, blank):
            v = signed(x)
            return v == v
    elif kind.has_blank:

        @_inline
        def valid(x, blank):
            return x != blank
    else:

        @_inline
        def valid(x, blank):
            return True

    return valid


def _phys(kind: Kind, signed):
    """``phys(x, scale, zero, blank)``: the physical value exactly as astropy computes it."""
    if kind.mode == "offset":
        return _offset(kind)
    if kind.mode == "raw":

        @_inline
        def phys(x, scale, zero, blank):
            return signed(x)
    elif kind.bitpix in (8, 16, -32):
        has_blank = kind.has_blank

        @_inline
        def phys(x, scale, zero, blank):
            # float32 arithmetic, two rounded steps, exactly as astropy's in-place ops.
            # Compute first, select after: a branch here stops LLVM vectorising the loop.
            v = np.float32(signed(x)) * np.float32(scale)
            v = v + np.float32(zero)
            return np.float32(np.nan) if has_blank and x == blank else v
    else:
        has_blank = kind.has_blank

        @_inline
        def phys(x, scale, zero, blank):
            v = np.float64(signed(x)) * scale
            v = v + zero
            return np.nan if has_blank and x == blank else v

    return phys


def _offset(kind: Kind):
    """``phys`` of offset integers (unsigned via BZERO, or int8): the value's top bit flipped."""
    top = _TOPBIT[kind.bitpix]
    utype = _UNSIGNED_VIEW[kind.bitpix]
    # numba widens ``^`` on small ints: cast back before reinterpreting
    if kind.bitpix == 8:

        @_inline
        def phys(x, scale, zero, blank):
            return load_i1(utype(x ^ top))
    elif kind.swap:

        @_inline
        def phys(x, scale, zero, blank):
            # the top bit of the value, not of the stored bytes: swap first
            return utype(swap_bits(x) ^ top)
    else:

        @_inline
        def phys(x, scale, zero, blank):
            return utype(x ^ top)

    return phys


def _f64(kind: Kind, signed, phys):
    """``f64(x, scale, zero, blank)``: the value in float64 for sums (scaled: unrounded)."""
    if kind.mode == "scaled":
        has_blank = kind.has_blank

        @_inline
        def f64(x, scale, zero, blank):
            v = np.float64(signed(x)) * scale + zero
            return np.nan if has_blank and x == blank else v
    else:

        @_inline
        def f64(x, scale, zero, blank):
            return np.float64(phys(x, scale, zero, blank))

    return f64


@functools.cache
def keeper(kind: Kind, banded: bool):
    """``keep(x, scale, zero, blank, lo, hi)``: whether a stored value takes part.

    Valid values (not NaN or BLANK), or with ``banded`` the physical values inside
    ``[lo, hi]`` compared as :mod:`dfits.kernels.bands` compares them (NaN and BLANK are
    never inside): the masked variance of ``where(x > t)``.
    """
    ld = loaders(kind)
    valid, phys = ld.valid, ld.phys
    if banded:

        @_inline
        def keep(x, scale, zero, blank, lo, hi):
            p = np.float64(phys(x, scale, zero, blank))
            return (p >= lo) & (p <= hi)
    else:

        @_inline
        def keep(x, scale, zero, blank, lo, hi):
            return valid(x, blank)

    return keep
