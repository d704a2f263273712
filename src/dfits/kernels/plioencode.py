"""PLIO_1 encoding: integers to IRAF's pixel line lists (the inverse of :mod:`dfits.kernels.plio`).

The contract: :func:`plio_encode` takes one tile's integers (each in 0 .. 2**24 - 1, the
range a PLIO line list can hold) and returns the line list as native int16 words: the new
form's seven-word header (its length in words 4-5, instructions from word 7), then per run of
equal values either zero runs (opcode 0, at most 4095 pixels each) or, for a non-zero value, a
change of the high value (opcode 2/3 adding or subtracting up to 4095, else opcode 1 setting
it in two words) followed by runs of it (opcode 4). IRAF's encoder also folds a single pixel
into the preceding instruction (opcodes 5-7); this one does not, so its lists are at most a
few words longer, and every reader (cfitsio, astropy, dfits) decodes both. The writer stores
the words big-endian in a ``1PI`` column. :func:`plio_encode_oracle` is the same in plain
Python, and the decoder is the round trip.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = ["MAX_VALUE", "plio_encode", "plio_encode_oracle"]

#: The largest value a line list holds (opcode 1 sets 12 + 12 bits).
MAX_VALUE = 2**24 - 1
_HEADER = 7


@inline
def _p2l_body(px, out):
    n = px.shape[0]
    op = 7
    hi = np.int64(1)  # the high value every line list starts with
    i = 0
    while i < n:
        v = np.int64(px[i])
        j = i + 1
        while j < n and px[j] == px[i]:
            j += 1
        run = j - i
        code = 0
        if v != 0:
            code = 16384  # opcode 4: run of the high value
            dv = v - hi
            if dv > 4095 or dv < -4095:
                out[op] = (v & 4095) + 4096  # opcode 1, then the high 12 bits
                out[op + 1] = v >> 12
                op += 2
            elif dv > 0:
                out[op] = 8192 + dv  # opcode 2: add
                op += 1
            elif dv < 0:
                out[op] = 12288 - dv  # opcode 3: subtract
                op += 1
            hi = v
        while run > 0:
            k = min(run, 4095)
            out[op] = code + k
            op += 1
            run -= k
        i = j
    out[0] = 0
    out[1] = _HEADER
    out[2] = -100  # marks the new header form
    out[3] = op % 32768
    out[4] = op // 32768
    out[5] = 0
    out[6] = 0
    return op


_p2l = entry(_p2l_body)


def _check(values: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(values).reshape(-1)
    if v.dtype.kind not in "iu" or v.dtype.itemsize > 8:
        raise ValueError(f"PLIO_1 codes integers, not {v.dtype}")
    if v.size and (int(v.min()) < 0 or int(v.max()) > MAX_VALUE):
        raise ValueError(
            f"PLIO_1 holds values 0..{MAX_VALUE}; this tile spans {int(v.min())}..{int(v.max())}"
        )
    return v.astype(np.int32, copy=False)


def plio_encode(values: np.ndarray) -> np.ndarray:
    """The line list (native int16 words) of one tile's integers.

    Raises
    ------
    ValueError
        A value outside 0 .. :data:`MAX_VALUE`, or values that are not integers.

    Examples
    --------
    >>> from dfits.kernels.plio import plio_decode
    >>> words = plio_encode(np.array([0, 0, 5, 5, 5, 70000, 0], np.int32))
    >>> plio_decode(words, 7).tolist()
    [0, 0, 5, 5, 5, 70000, 0]
    """
    v = _check(values)
    out = np.empty(_HEADER + 3 * v.size, np.int16)
    return out[: _p2l(v, out)]


def plio_encode_oracle(values: np.ndarray) -> np.ndarray:
    """:func:`plio_encode` in plain Python (the definition the kernel is tested against)."""
    v = [int(x) for x in _check(values)]
    words, hi, i = [0] * _HEADER, 1, 0
    while i < len(v):
        j = i
        while j < len(v) and v[j] == v[i]:
            j += 1
        run, code = j - i, 0
        if v[i]:
            code, dv = 16384, v[i] - hi
            if abs(dv) > 4095:
                words += [(v[i] & 4095) + 4096, v[i] >> 12]
            elif dv:
                words.append(8192 + dv if dv > 0 else 12288 - dv)
            hi = v[i]
        while run > 0:
            words.append(code + min(run, 4095))
            run -= min(run, 4095)
        i = j
    words[1:5] = [_HEADER, -100, len(words) % 32768, len(words) // 32768]
    return np.array(words, np.int16)
