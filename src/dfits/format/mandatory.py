"""The mandatory keywords of a header: where an HDU's data are and how big, or why not.

The contract: :func:`check_mandatory` reads SIMPLE/XTENSION, BITPIX, NAXIS, NAXISn, PCOUNT and
GCOUNT from a :class:`~dfits.format.header.Header` and returns the geometry they fix, or raises
:class:`~dfits.errors.HeaderError` naming the file, the HDU, the byte offset of the card and
its value when one is missing, duplicated, illegal or holds bytes outside printable ASCII.
Recoverable oddities (``SIMPLE = F``, keywords out of order, PCOUNT/GCOUNT missing from an
extension, other cards with bad bytes) are appended to ``notes`` as messages, never raised:
the layout scan turns them into warnings.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dfits.errors import HeaderError
from dfits.format.cards import CARD_SIZE
from dfits.format.dtypes import BITPIX_TO_STORED

if TYPE_CHECKING:
    from dfits.format.header import Header

__all__ = ["MANDATORY", "check_mandatory"]


#: Keywords whose cards fix where the data are and how big; see :func:`check_mandatory`.
MANDATORY = re.compile(r"SIMPLE|XTENSION|BITPIX|NAXIS\d*|PCOUNT|GCOUNT")


def check_mandatory(
    header: Header, primary: bool, offset: int, where: str, notes: list[str]
) -> tuple[int, list[int], int, int]:
    """Check the mandatory keywords of a primary or extension header.

    Returns BITPIX, NAXISn (FITS order), PCOUNT and GCOUNT; raises
    :class:`~dfits.errors.HeaderError` (message prefixed by ``where``, naming the byte offset
    of the card given the header's ``offset``) when a mandatory keyword is missing, duplicated
    or illegal, or holds bytes outside printable ASCII. Appends to ``notes`` one message per
    recoverable oddity: other cards with such bytes, ``SIMPLE = F``, keywords out of order,
    PCOUNT/GCOUNT missing from an extension (astropy assumes 0 and 1, and so do we).

    Examples
    --------
    >>> from dfits.format.header import Header
    >>> h = Header(b"".join(c.ljust(80) for c in [b"SIMPLE  = T", b"BITPIX  = 16",
    ...     b"NAXIS   = 2", b"NAXIS1  = 3", b"NAXIS2  = 4"]))
    >>> check_mandatory(h, True, 0, "x", [])
    (16, [3, 4], 0, 1)
    """
    check = _Mandatory(header, offset, where)
    check.printable(notes)
    order = ["SIMPLE" if primary else "XTENSION", "BITPIX", "NAXIS"]
    first, bitpix, naxis = (check.once(key) for key in order)
    if primary and first is not True:
        notes.append(
            f"{where}: SIMPLE = {first!r}: the file does not claim to conform to the "
            "FITS standard; reading it as its header describes"
        )
    if not _is_int(bitpix) or bitpix not in BITPIX_TO_STORED:
        check.fail("BITPIX", bitpix, "must be one of 8, 16, 32, 64, -32, -64")
    if not _is_int(naxis) or not 0 <= naxis <= 999:  # type: ignore[operator]
        check.fail("NAXIS", naxis, "must be an integer from 0 to 999")
    axes = [f"NAXIS{i}" for i in range(1, naxis + 1)]  # type: ignore[operator]
    naxes = [check.count(key) for key in axes]
    order += axes
    counts = {"PCOUNT": 0, "GCOUNT": 1}
    # astropy sizes a primary HDU with PCOUNT/GCOUNT too when present (random groups), and
    # reads extensions without them (astrogo's IMAGE extensions) as PCOUNT = 0, GCOUNT = 1.
    present = [key for key in counts if key in header]
    counts.update((key, check.count(key)) for key in present)
    if not primary:
        order += present
        if len(present) < 2:
            missing = " and ".join(key for key in counts if key not in present)
            notes.append(
                f"{where}: mandatory {missing} missing from the header at offset "
                f"{offset}; assuming PCOUNT = 0, GCOUNT = 1 as astropy does"
            )
    misplaced = [
        f"{key} at card {header.locate(key)}"
        for i, key in enumerate(order)
        if header.locate(key) != i
    ]
    if misplaced:
        notes.append(
            f"{where}: mandatory keywords out of order ({', '.join(misplaced)}; "
            f"expected {', '.join(order)}); values are unambiguous, reading anyway"
        )
    return bitpix, naxes, counts["PCOUNT"], counts["GCOUNT"]  # type: ignore[return-value]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Mandatory:
    """Checks of single mandatory cards, with messages naming the card's byte offset."""

    def __init__(self, header: Header, offset: int, where: str) -> None:
        self.header, self.offset, self.where = header, offset, where

    def fail(self, key: str, value: object, why: str) -> None:
        at = self.offset + self.header.locate(key) * CARD_SIZE
        raise HeaderError(f"{self.where}: {key} = {value!r} at offset {at}: {why}")

    def once(self, key: str) -> Any:
        """The value of a keyword that must appear exactly once."""
        header, where = self.header, self.where
        count = header.count(key)
        if count == 0:
            raise HeaderError(
                f"{where}: mandatory keyword {key} missing from the header at offset {self.offset}"
            )
        if count > 1:
            offsets = [self.offset + header.locate(key, n) * CARD_SIZE for n in range(count)]
            values = [header[key, n] for n in range(count)]
            raise HeaderError(
                f"{where}: mandatory keyword {key} appears {count} times "
                f"(offsets {offsets}, values {values!r}): ambiguous"
            )
        return header[key]

    def count(self, key: str) -> int:
        value = self.once(key)
        if not _is_int(value) or value < 0:
            self.fail(key, value, "must be a non-negative integer")
        return value

    def printable(self, notes: list[str]) -> None:
        bad = self.header.bad_cards
        if not bad:
            return
        raw = self.header.tostring()
        images = {i: raw[i * CARD_SIZE : (i + 1) * CARD_SIZE] for i in bad}
        for i, image in images.items():
            keyword = image[:8].decode("latin-1").strip().upper()
            if MANDATORY.fullmatch(keyword):
                raise HeaderError(
                    f"{self.where}: mandatory card {keyword} at offset "
                    f"{self.offset + i * CARD_SIZE} holds bytes outside "
                    f"printable ASCII: {image.rstrip()!r}"
                )
        listing = "; ".join(
            f"card {i} at offset {self.offset + i * CARD_SIZE}: {image.rstrip()!r}"
            for i, image in images.items()
        )
        notes.append(
            f"{self.where}: {len(bad)} card(s) hold bytes outside printable ASCII; "
            f"their values are kept as raw text: {listing}"
        )
