"""PLIO_1 decoding: IRAF's pixel line lists back to integers, with every read bounds-checked.

No maintained Python package decodes PLIO (imagecodecs has no PLIO codec), so this is a
Numba loop written from the line-list format of the tiled image convention (section 6.3)
and IRAF's ``pll2p``: a header (old 3-word form, or new form with its length in words 4-5),
then 16-bit instructions whose top 4 bits are the opcode and low 12 bits the data:

====== ==========================================================================
opcode meaning
====== ==========================================================================
0      ``data`` zeros
1      set the high value to ``(next word << 12) + data`` (two words)
2, 3   add / subtract ``data`` to the high value
4      ``data`` pixels of the high value
5      ``data - 1`` zeros, then one pixel of the high value
6, 7   add / subtract ``data``, then one pixel of the high value
====== ==========================================================================

A list that ends early leaves zeros (as IRAF); one that claims more words than it holds, or
an instruction cut in half, is an error rather than a read past the buffer.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = ["plio_decode"]


@inline
def _pll2p_body(src, out):
    """Decode ``src`` (native int16 words) into ``out`` (int32); 0, or -1 on a bad list."""
    npix = out.shape[0]
    out[:] = 0
    if src.shape[0] < 3:
        return -1
    if src[2] > 0:
        length = np.int64(src[2])
        ip = 3
    else:
        if src.shape[0] < 5:
            return -1
        length = (np.int64(src[4]) << 15) + np.int64(src[3])
        ip = np.int64(src[1])
    if length > src.shape[0] or ip < 0:
        return -1
    x = 0  # next pixel (0-based)
    pv = np.int64(1)
    while ip < length and x < npix:
        word = np.int64(src[ip]) & 0xFFFF
        op = word >> 12
        data = word & 4095
        ip += 1
        if op == 0 or op == 4 or op == 5:
            stop = min(x + data, npix)
            if op == 4:
                for i in range(x, stop):
                    out[i] = pv
            elif op == 5 and stop == x + data and data > 0:
                out[stop - 1] = pv
            x += data
        elif op == 1:
            if ip >= length:
                return -1
            pv = (np.int64(src[ip]) << 12) + data
            ip += 1
        elif op == 2:
            pv += data
        elif op == 3:
            pv -= data
        elif op == 6 or op == 7:
            pv = pv + data if op == 6 else pv - data
            out[x] = pv
            x += 1
    return 0


_pll2p = entry(_pll2p_body)


def plio_decode(words: np.ndarray, npix: int) -> np.ndarray | None:
    """The ``npix`` int32 values of the line list ``words`` (native int16); None if invalid."""
    out = np.empty(npix, np.int32)
    if _pll2p(np.ascontiguousarray(words, dtype=np.int16), out) != 0:
        return None
    return out
