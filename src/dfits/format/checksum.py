"""The FITS checksum convention: 32-bit ones'-complement sums and their 16-character encoding.

The contract (FITS standard 4.0, appendix J; cfitsio's ``ffcsum``/``ffesum``): the sum of an
HDU is the 32-bit ones'-complement sum of its bytes read as big-endian 32-bit words.
``DATASUM`` is the sum of the data blocks as a decimal string; ``CHECKSUM`` is the complement
of the header-plus-data sum encoded as 16 ASCII characters, chosen so that the whole HDU then
sums to ``0xFFFFFFFF`` (negative zero).

Ones'-complement addition is addition modulo ``2**32 - 1``, so a byte ``b`` at offset ``p``
contributes ``b · 2**(8·(3 - p mod 4))``: a sum computed over bytes as if they started on a
word boundary is moved to its real offset by a rotation (:func:`place`). That is what lets
chunks of any byte alignment be summed independently and combined (:func:`combine`) — no
extra pass over the data. Nothing here reads files or needs numba.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CHECKSUM_ZERO",
    "HDU_OK",
    "add",
    "checksum_card",
    "combine",
    "decode_datasum",
    "encode_checksum",
    "place",
]

_MASK = 0xFFFFFFFF
#: The whole-HDU sum of an HDU whose CHECKSUM is right (ones'-complement negative zero).
HDU_OK = _MASK
#: The CHECKSUM value a header is summed with before its real value is known.
CHECKSUM_ZERO = "0" * 16
# Punctuation the encoding steps around (``:;<=>?@[\\]^_```), as cfitsio's ffesum.
_EXCLUDE = tuple(b":;<=>?@[\\]^_`")


def add(a: int, b: int) -> int:
    """Ones'-complement sum of two 32-bit sums (end-around carry).

    Examples
    --------
    >>> hex(add(0xFFFFFFFF, 1)), add(2, 3)
    ('0x1', 5)
    """
    s = a + b
    while s > _MASK:
        s = (s & _MASK) + (s >> 32)
    return s


def place(partial: int, offset: int) -> int:
    """Move a sum computed as if its bytes began on a word boundary to byte ``offset``.

    A shift by one byte divides the sum by 256 modulo ``2**32 - 1``: a right rotation by 8.

    Examples
    --------
    >>> hex(place(0x01000000, 1)), hex(place(0x000000FF, 1))
    ('0x10000', '0xff000000')
    """
    r = 8 * (offset % 4)
    partial &= _MASK
    if not r:
        return partial
    return ((partial >> r) | (partial << (32 - r))) & _MASK


def combine(partials: Iterable[tuple[int, int]]) -> int:
    """The sum of byte runs from ``(partial, byte offset)`` pairs, offsets relative to a word.

    Examples
    --------
    >>> combine([(0x01020000, 0), (0x03040000, 2)]) == 0x01020304
    True
    """
    total = 0
    for partial, offset in partials:
        total = add(total, place(partial, offset))
    return total


def encode_checksum(total: int) -> str:
    """The 16-character CHECKSUM value that brings an HDU summing to ``total`` to ``-0``.

    ``total`` is the sum of the HDU with ``CHECKSUM = '0000000000000000'`` in its header.
    Each byte of the complement is spread over four characters from ``'0'`` and the result
    rotated by one character (cfitsio's ``ffesum``), avoiding punctuation.

    Examples
    --------
    >>> encode_checksum(0)
    'orrrrooooooooooo'
    """
    value = _MASK - (total & _MASK)
    chars = [0] * 16
    for i in range(4):
        byte = (value >> (24 - 8 * i)) & 0xFF
        quotient, remainder = divmod(byte, 4)
        ch = [quotient + 0x30] * 4
        ch[0] += remainder
        stepped = True
        while stepped:
            stepped = False
            for bad in _EXCLUDE:
                for j in (0, 2):
                    if bad in (ch[j], ch[j + 1]):
                        ch[j] += 1
                        ch[j + 1] -= 1
                        stepped = True
        for j in range(4):
            chars[4 * j + i] = ch[j]
    return bytes(chars[(k + 15) % 16] for k in range(16)).decode("ascii")


def decode_datasum(value: object) -> int | None:
    """The integer a DATASUM card holds (a decimal string, or a bare integer); None if none.

    Examples
    --------
    >>> decode_datasum("1234"), decode_datasum(" 7 "), decode_datasum("x"), decode_datasum("")
    (1234, 7, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= _MASK else None
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
        return number if number <= _MASK else None
    return None


def checksum_card(keyword: str, value: str, comment: str) -> bytes:
    """A DATASUM or CHECKSUM card laid out as astropy lays it out (the quoted value in 20
    columns), so that astropy, which re-renders the card to verify it, sums the same bytes.

    Examples
    --------
    >>> checksum_card("DATASUM", "0", "data unit checksum")[:40]
    b"DATASUM = '0'                  / data un"
    """
    quoted = f"'{value}'"
    return f"{keyword:<8}= {quoted:<20} / {comment}".ljust(80).encode("ascii")
