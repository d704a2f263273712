"""Runs of alike HDUs: many extensions checked against one template in a few numpy passes.

The contract: :func:`alike_run` looks at the headers that would start at ``start``,
``start + stride``, ... of a file held whole in memory (an mmap) and returns the longest
prefix of them that the layout scan would describe exactly like ``template`` — same keywords,
same bytes in every card that decides the HDU's kind, shape, size and scaling, END in the same
place, every byte printable — with the raw header and EXTVER of each. The scan then builds
those HDUs without looking at their cards one by one: a file of 10,000 alike extensions (a
mosaic camera, a time series of stamps) costs a few array comparisons per thousand headers
instead of a parse each.

Anything the template does not predict stops the run, and the scan goes on header by header
from there: a different keyword or mandatory value, a byte outside printable ASCII, an EXTVER
that is not a plain integer of at most 18 digits, or the last HDU of the file (whose extent
the scan checks against the file size).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dfits.format.cards import CARD_SIZE

__all__ = ["alike_run", "fixed_mask"]

# Values of at most 18 digits fit int64 whatever they are.
_DIGITS = 18
_BLANK, _SLASH, _ZERO = 32, 47, 48


def fixed_mask(ncards: int, ranges: Sequence[slice], template: bytes) -> np.ndarray:
    """Which bytes of a header of ``ncards`` cards (plus END) must equal the template's.

    The keyword columns of every card and the whole END card (they fix the keyword index and
    where END is), the byte ``ranges`` the scan reads to describe an HDU, and any earlier card
    with the keyword END (whose blanks would otherwise make it the END card).
    """
    size = (ncards + 1) * CARD_SIZE
    mask = np.zeros(size, dtype=bool)
    mask.reshape(ncards + 1, CARD_SIZE)[:, :8] = True
    mask[ncards * CARD_SIZE :] = True
    for r in ranges:
        mask[r] = True
    for i in range(ncards):
        if template[i * CARD_SIZE : i * CARD_SIZE + 8] == b"END     ":
            mask[i * CARD_SIZE : (i + 1) * CARD_SIZE] = True
    return mask


def alike_run(
    whole: bytes | memoryview | object,
    start: int,
    stride: int,
    count: int,
    template: bytes,
    fixed: np.ndarray,
    extver_card: int,
) -> tuple[list[bytes], list[int]]:
    """Raw headers and EXTVERs of the alike HDUs at ``start + k * stride``, ``k < count``.

    Parameters
    ----------
    whole : buffer
        The whole file (bytes or a read-only mmap); every header asked for must lie inside.
    start, stride, count : int
        Where the first candidate starts, the distance between candidates, how many to check.
    template : bytes
        The raw header (through END) of an HDU the scan has described.
    fixed : numpy.ndarray of bool
        :func:`fixed_mask` of the template.
    extver_card : int
        Index of the EXTVER card, -1 when the template has none (EXTVER is then 1).

    Returns
    -------
    raws, vers : list of bytes, list of int
        One entry per HDU of the matching prefix (possibly none).

    Examples
    --------
    >>> cards = [b"XTENSION= 'IMAGE   '", b"NAXIS   =                    0",
    ...          b"EXTVER  =                    7", b"END"]
    >>> head = b"".join(c.ljust(80) for c in cards)
    >>> other = head.replace(b"7", b"8").ljust(2880)
    >>> mask = fixed_mask(3, [slice(0, 160)], head)
    >>> raws, vers = alike_run(head.ljust(2880) + other, 0, 2880, 2, head, mask, 2)
    >>> vers, raws[1] == other[:320]
    ([7, 8], True)
    """
    size = len(template)
    if start < 0 or count < 1 or stride < size or start + (count - 1) * stride + size > len(whole):  # type: ignore[arg-type]
        raise ValueError(f"headers at {start} + k * {stride}, k < {count}, leave the buffer")
    rows = _headers(whole, start, stride, count, size)
    # Headers are whole cards, so rows split into 8-byte words: compare masked words.
    diff = np.bitwise_xor(rows, np.frombuffer(template, dtype=np.uint8))
    diff &= fixed.view(np.uint8) * np.uint8(255)
    bad = diff.view(np.uint64).any(axis=1)
    # Printable ASCII (32-126) is where b - 32 wraps to at most 94.
    np.subtract(rows, np.uint8(_BLANK), out=diff)
    bad |= (diff > 126 - _BLANK).any(axis=1)
    del diff
    vers = _plain_ints(rows, extver_card, bad)
    n = int(np.argmax(bad)) if bad.any() else count
    blob = rows[:n].tobytes()
    raws = [blob[k : k + size] for k in range(0, n * size, size)]
    return raws, vers[:n].tolist()


def _headers(whole: object, start: int, stride: int, count: int, size: int) -> np.ndarray:
    """The ``count`` candidate headers as the rows of one ``uint8`` array (a copy)."""
    buf = np.frombuffer(whole, dtype=np.uint8)  # type: ignore[call-overload]
    try:
        # One copy of just the headers; no view into the mmap outlives this call, so that
        # the caller can close it.
        return np.array(
            np.lib.stride_tricks.as_strided(
                buf[start:], shape=(count, size), strides=(stride, 1), writeable=False
            )
        )
    finally:
        del buf


def _plain_ints(rows: np.ndarray, card: int, bad: np.ndarray) -> np.ndarray:
    """The integer value of card ``card`` of each row; rows with anything else marked bad.

    "Plain" is what most writers produce: ``= `` in columns 9-10, at most 18 digits ending
    at column 30 behind blanks (fixed format), then blanks or a ``/`` comment. Free-format
    or signed values are legal FITS but go through the scan's full card parser instead.
    """
    if card < 0:
        return np.ones(len(rows), dtype=np.int64)
    field = rows[:, card * CARD_SIZE : (card + 1) * CARD_SIZE]
    digits = field[:, 30 - _DIGITS : 30].astype(np.int64) - _ZERO
    is_digit = (digits >= 0) & (digits <= 9)
    # Blanks then digits, at least one: a digit never followed by a blank within the field.
    ok = (field[:, 8] == ord("=")) & (field[:, 9] == _BLANK)
    ok &= (field[:, 10 : 30 - _DIGITS] == _BLANK).all(axis=1) & is_digit[:, -1]
    ok &= (is_digit | (digits == _BLANK - _ZERO)).all(axis=1)
    ok &= (np.diff(is_digit.astype(np.int8), axis=1) >= 0).all(axis=1)
    tail = field[:, 30:]
    nonblank = tail != _BLANK
    first = np.argmax(nonblank, axis=1)
    ok &= ~nonblank.any(axis=1) | (tail[np.arange(len(rows)), first] == _SLASH)
    bad |= ~ok
    powers = 10 ** np.arange(_DIGITS - 1, -1, -1, dtype=np.int64)
    return (np.where(is_digit, digits, 0) * powers).sum(axis=1)
