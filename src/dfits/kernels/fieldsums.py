"""Sums of several big-endian fields of a block of table rows, in one pass over the rows.

The contract: :func:`field_sums` takes ``rows``, a ``(n, row_bytes)`` ``uint8`` array of whole
table rows (an mmap of the stored bytes, read-only is fine), each field's byte offset in the
row and its :data:`KINDS` code, and returns per field the number of values taken and their
sum: exact ``int64`` for integers (wrapping as numpy's does), compensated ``float64`` for
floats (NaN or inf propagate; with ``skipna`` NaN values are left out of sum and count).
Code :data:`K_AS_FLOAT` sums a K field's int64 values in float64 instead, as numpy's mean
accumulates them (their int64 total wraps past 2**63). Codes :data:`NULL_KINDS` (a B or I
field with TNULLn) leave out the values equal to the field's ``nulls`` entry: their count is
that of the other values, their exact int64 sum theirs (the caller makes NaN of it).

Every row is read once for all the fields: a table with 160-byte rows brings whole rows into
the cache whichever field is read, so reducing k fields one at a time costs k passes over
the memory and this kernel one. Values are swapped in registers (bytes gathered into a
one unaligned load, LLVM ``bswap``, bit cast): nothing is copied out of the rows. Only unscaled
fields of one element qualify (and B/I with TNULLn); the caller reduces the others field
by field.

The numpy oracle is ``rows[:, o:o + w].copy().view(">f8").sum()`` per field (see the tests).
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["KINDS", "K_AS_FLOAT", "NULL_KINDS", "field_sums"]

#: TFORM letter (unscaled, one element) -> kind code understood by the kernel
KINDS = {"B": 0, "I": 1, "J": 2, "K": 3, "E": 4, "D": 5}
#: kind code of a K field summed in float64 (into ``float_sums``): a mean's total
K_AS_FLOAT = 6
#: TFORM letter of a one-element B or I field with TNULLn (unscaled) -> kind code
NULL_KINDS = {"B": 7, "I": 8}
#: bytes of a field of each kind code
_WIDTHS = np.array([1, 2, 4, 8, 4, 8, 8, 1, 2])

#: rows summed into a plain partial before the compensated add (as the image kernels' BLOCK)
_BLOCK = 2048
#: bytes of rows per block at most: the block stays in a core's L2 cache between fields
_CACHE = 1 << 15


def field_sums(
    rows: np.ndarray,
    offsets: np.ndarray,
    kinds: np.ndarray,
    skipna: bool,
    nulls: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(counts, float_sums, int_sums)`` per field of ``rows`` (see the module docstring).

    ``float_sums[j]`` holds the sum of a float field (E, D) or of a :data:`K_AS_FLOAT` field,
    ``int_sums[j]`` that of an integer field (B, I, J, K, :data:`NULL_KINDS`); the other entry
    of each field is 0. ``nulls[j]``: the TNULLn of a :data:`NULL_KINDS` field (else unused).
    """
    k = len(offsets)
    counts = np.zeros(k, np.int64)
    fsums = np.zeros(k, np.float64)
    isums = np.zeros(k, np.int64)
    offs = np.ascontiguousarray(offsets, np.int64)
    codes = np.ascontiguousarray(kinds, np.int64)
    nul = np.zeros(k, np.int64) if nulls is None else np.ascontiguousarray(nulls, np.int64)
    n, width = rows.shape
    ends = offs + _WIDTHS[codes] if k else offs
    if k and (offs.min() < 0 or ends.max() > width):
        # the kernel's loads are unchecked: a field must lie inside its row
        raise ValueError(f"a field lies past the {width}-byte row: offsets {offs.tolist()}")
    if n and k:
        # one flat buffer: the kernel indexes bytes (a strided block of rows is copied)
        flat = np.ascontiguousarray(rows).reshape(-1)
        _kernel()(flat, width, n, offs, codes, nul, skipna, counts, fsums, isums)
    return counts, fsums, isums


@functools.cache
def _kernel():
    """Compiled (or loaded from dfits' on-disk cache, :mod:`dfits.kernels._cache`) on first
    use, never at import."""

    from dfits.kernels._cache import entry
    from dfits.kernels._compile import compensated, inline, neumaier
    from dfits.kernels._swap import load_f4, load_f8, load_i2, load_i4, load_i8
    from dfits.kernels._swap import raw_u2_at as u2
    from dfits.kernels._swap import raw_u4_at as u4
    from dfits.kernels._swap import raw_u8_at as u8

    @inline
    def f4(b, i):
        return np.float64(load_f4(u4(b, i)))

    @inline
    def f8(b, i):
        return load_f8(u8(b, i))

    @inline
    def k8(b, i):
        return np.float64(load_i8(u8(b, i)))

    @inline
    def float_loop(load, b, width, a0, a1, o, skipna):
        part = 0.0
        skipped = 0
        if skipna:  # two loops: the common one has no test in it
            for i in range(a0, a1):
                v = load(b, i * width + o)
                if v != v:
                    skipped += 1
                else:
                    part += v
        else:
            for i in range(a0, a1):
                part += load(b, i * width + o)
        return part, skipped

    @inline
    def float_part(b, width, a0, a1, o, c, skipna):
        if c == 4:
            return float_loop(f4, b, width, a0, a1, o, skipna)
        if c == 6:  # K_AS_FLOAT: integers hold no NaN, so nothing is skipped
            return float_loop(k8, b, width, a0, a1, o, False)
        return float_loop(f8, b, width, a0, a1, o, skipna)

    @inline
    def int_part(b, width, a0, a1, o, c):
        t = 0
        if c == 0:
            for i in range(a0, a1):
                t += np.int64(b[i * width + o])
        elif c == 1:
            for i in range(a0, a1):
                t += np.int64(load_i2(u2(b, i * width + o)))
        elif c == 2:
            for i in range(a0, a1):
                t += np.int64(load_i4(u4(b, i * width + o)))
        else:
            for i in range(a0, a1):
                t += load_i8(u8(b, i * width + o))
        return t

    @inline
    def null_part(b, width, a0, a1, o, c, null):
        # B (7) or I (8) with TNULLn: the other values' exact sum and count
        t = 0
        m = 0
        for i in range(a0, a1):
            v = np.int64(b[i * width + o]) if c == 7 else np.int64(load_i2(u2(b, i * width + o)))
            if v != null:
                t += v
                m += 1
        return t, m

    @inline
    def sums(b, width, n, offs, codes, nulls, skipna, counts, fsums, isums):
        k = offs.shape[0]
        comp = np.zeros(k)
        # Rows are taken a block at a time, every field of the block before the next block:
        # the first field brings the block's rows into the L2 cache, the others read them
        # there, and each field's loop is a tight one with its kind decided outside it.
        step = max(64, min(_BLOCK, _CACHE // max(width, 1)))
        for a0 in range(0, n, step):
            a1 = min(a0 + step, n)
            for j in range(k):
                if codes[j] < 4:
                    isums[j] += int_part(b, width, a0, a1, offs[j], codes[j])
                    counts[j] += a1 - a0
                elif codes[j] > 6:
                    t, m = null_part(b, width, a0, a1, offs[j], codes[j], nulls[j])
                    isums[j] += t
                    counts[j] += m
                else:
                    part, skipped = float_part(b, width, a0, a1, offs[j], codes[j], skipna)
                    counts[j] += a1 - a0 - skipped
                    fsums[j], comp[j] = neumaier(fsums[j], comp[j], part)
        for j in range(k):
            fsums[j] = compensated(fsums[j], comp[j])

    return entry(sums, "fieldsums")
