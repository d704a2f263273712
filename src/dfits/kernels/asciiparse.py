"""Numbers of an ASCII TABLE field, parsed straight from the stored bytes.

The contract: :func:`parse_floats` and :func:`parse_ints` read one fixed-width field per row
(``n`` rows, the field at ``buf[start + i * stride : ... + width]``) into ``out`` and write a
status per row into ``status``:

* ``OK``: ``out[i]`` holds the value;
* ``NULL``: the field is blank or equals the TNULL bytes (``out[i]`` is NaN, or 0 for integers,
  as astropy fills them);
* ``SLOW`` (floats only): a valid-looking field the fast path cannot round exactly (more than
  15 significant digits, a large exponent, ``nan``/``inf`` words): the caller parses those
  few with Python's ``float()``;
* ``BAD``: not a number (or an integer beyond int64): the caller raises.

Floats are exact to the last bit against ``float()``: the fast path is Clinger's, a decimal
significand below 2**53 times or divided by an exact power of ten up to 10**22, which is one
correctly rounded IEEE operation; everything else goes to ``float()``. Fortran's ``D``
exponent letter is read like ``E``. No Python string is made on this path.

The parsers are top-level bodies (no factories) compiled through
:func:`dfits.kernels._cache.entry` into Numba's on-disk cache, without fast-math (the one
multiplication or division of the fast path must stay correctly rounded).
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = ["BAD", "NULL", "OK", "SLOW", "parse_floats", "parse_ints"]

OK, NULL, SLOW, BAD = 0, 1, 2, 3

_POW10 = np.array([10.0**k for k in range(23)])
_LIMIT = 2**53


@inline
def _trim(buf, p, width):
    """First and past-last non-blank byte of the field at ``p``."""
    a = p
    b = p + width
    while a < b and buf[a] == 32:
        a += 1
    while b > a and (buf[b - 1] == 32 or buf[b - 1] == 0):
        b -= 1
    return a, b


@inline
def _is_null(buf, a, b, null, has_null):
    if a == b:
        return True
    if not has_null or b - a != len(null):
        return False
    for k in range(b - a):  # noqa: SIM110 (Numba compiles no generator into all())
        if buf[a + k] != null[k]:
            return False
    return True


@inline
def _digits(buf, a, b):
    """Significand digits from ``a``: (value, digits kept, digits dropped nonzero, exponent
    shift from a decimal point, position after the digits, any digit seen)."""
    w = np.uint64(0)
    kept = 0
    lost = False
    shift = 0
    seen = False
    dot = False
    while a < b:
        c = buf[a]
        if c == 46 and not dot:  # '.'
            dot = True
        elif 48 <= c <= 57:
            seen = True
            if kept < 19:
                if w != 0 or c != 48:
                    kept += 1
                w = w * np.uint64(10) + np.uint64(c - 48)
                if dot:
                    shift -= 1
            else:
                lost = lost or c != 48
                if not dot:
                    shift += 1
        else:
            break
        a += 1
    return w, kept, lost, shift, a, seen


@inline
def _exponent(buf, a, b):
    """The exponent after ``E``/``D`` at ``a``: (value, ok)."""
    if a == b:
        return 0, True
    c = buf[a]
    if c not in (69, 101, 68, 100):  # E e D d
        return 0, False
    a += 1
    sign = 1
    if a < b and (buf[a] == 43 or buf[a] == 45):
        sign = -1 if buf[a] == 45 else 1
        a += 1
    if a == b:
        return 0, False
    e = 0
    while a < b:
        c = buf[a]
        if not 48 <= c <= 57:
            return 0, False
        if e < 100000:
            e = e * 10 + (c - 48)
        a += 1
    return sign * e, True


@inline
def _parse_float(buf, a, b):
    """(value, status) of the trimmed field ``buf[a:b]``."""
    neg = False
    if buf[a] == 43 or buf[a] == 45:
        neg = buf[a] == 45
        a += 1
    w, kept, lost, shift, a, seen = _digits(buf, a, b)
    if not seen:
        return np.nan, SLOW  # words like nan/inf: float() decides
    e, ok = _exponent(buf, a, b)
    if not ok:
        return np.nan, BAD
    e += shift
    if w == 0:
        return -0.0 if neg else 0.0, OK
    if lost or kept > 15 or w >= _LIMIT or e < -22 or e > 22:
        return np.nan, SLOW
    v = float(w)
    v = v * _POW10[e] if e >= 0 else v / _POW10[-e]
    return -v if neg else v, OK


@inline
def _parse_floats(buf, start, stride, n, width, null, has_null, out, status):
    """Parse ``n`` float fields into ``out`` (float64), a status per row into ``status``."""
    for i in range(n):
        a, b = _trim(buf, start + i * stride, width)
        if _is_null(buf, a, b, null, has_null):
            out[i] = np.nan
            status[i] = NULL
            continue
        out[i], status[i] = _parse_float(buf, a, b)


@inline
def _parse_int(buf, a, b):
    neg = False
    if buf[a] == 43 or buf[a] == 45:
        neg = buf[a] == 45
        a += 1
    if a == b:
        return 0, BAD
    # accumulate negatively: int64's minimum has no positive counterpart
    v = 0
    for k in range(a, b):
        c = buf[k]
        if not 48 <= c <= 57:
            return 0, BAD
        d = c - 48
        if v < (-9223372036854775807 - 1 + d) // 10:
            return 0, BAD
        v = v * 10 - d
    if not neg:
        if v == -9223372036854775807 - 1:
            return 0, BAD
        v = -v
    return v, OK


@inline
def _parse_ints(buf, start, stride, n, width, null, has_null, out, status):
    """Parse ``n`` integer fields into ``out`` (int64), a status per row into ``status``."""
    for i in range(n):
        a, b = _trim(buf, start + i * stride, width)
        if _is_null(buf, a, b, null, has_null):
            out[i] = 0
            status[i] = NULL
            continue
        out[i], status[i] = _parse_int(buf, a, b)


parse_floats = entry(_parse_floats, fastmath=False)
parse_ints = entry(_parse_ints, fastmath=False)
