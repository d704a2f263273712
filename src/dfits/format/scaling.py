"""The scaling keywords of an image header (BSCALE, BZERO, BLANK), each read once.

The contract: :func:`scaling_values` returns the three values :func:`parse_decode_spec` takes.
The FITS standard lets a keyword appear only once; a header that repeats one of these is
ambiguous, so the rule is stated, not left to whichever card a lookup meets first: the
*last* card applies, as astropy's data does (its ``hdu.header[key]`` shows the first), and a
note names every value so that the choice is never silent. A ``HIERARCH BSCALE = ...`` card
is not the reserved keyword (HIERARCH is the convention for *other* keywords), so it scales
nothing, as in astropy's data, though ``header["BSCALE"]`` finds it. A keyword spelled in
lower case (``BLaNK``) is the keyword itself, as astropy (which upper-cases keywords) reads it.

A card present without a value (``BSCALE  =`` and nothing after it) is
:data:`~dfits.format.dtypes.UNDEFINED`, not None (absent): :func:`parse_decode_spec` makes an
undefined BSCALE or BZERO an error at data access naming the card, as it does a string or a
logical, and ignores an undefined BLANK with a warning.
"""

from __future__ import annotations

from dfits.format.cards import CARD_SIZE
from dfits.format.dtypes import UNDEFINED
from dfits.format.header import Header

__all__ = ["SCALING", "scaling_values"]

SCALING = ("BSCALE", "BZERO", "BLANK")


def scaling_values(header: Header, where: str, notes: list[str]) -> tuple[object, ...]:
    """``(BSCALE, BZERO, BLANK)`` of ``header``, None where absent, :data:`UNDEFINED` where
    the card has no value; the last of repeated cards.

    Examples
    --------
    >>> h = Header(b"".join(c.ljust(80) for c in [b"BSCALE  = 2", b"BSCALE  = 3"]))
    >>> notes = []
    >>> scaling_values(h, "x.fits, HDU 0", notes)
    (3, None, None)
    >>> notes
    ['x.fits, HDU 0: BSCALE appears 2 times (2, 3); the last, 3, applies as in astropy']
    >>> scaling_values(Header(b"HIERARCH BSCALE = 2".ljust(80)), "x", [])
    (None, None, None)
    >>> scaling_values(Header(b"BZERO   =".ljust(80)), "x", [])
    (None, UNDEFINED, None)
    """
    values: list[object] = []
    raw = header.tostring()
    for key in SCALING:
        n = header.count(key)
        image = key.ljust(8).encode()
        every = [
            UNDEFINED if (value := header[key, i]) is None else value
            for i in range(n)
            if raw[(p := header.locate(key, i) * CARD_SIZE) : p + 8].upper() == image
        ]
        if len(every) > 1:
            listed = ", ".join(repr(v) for v in every)
            notes.append(
                f"{where}: {key} appears {len(every)} times ({listed}); the last, "
                f"{every[-1]!r}, applies as in astropy"
            )
        values.append(every[-1] if every else None)
    return tuple(values)
