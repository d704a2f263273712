"""The scaling keywords of an image header (BSCALE, BZERO, BLANK), each read once.

The contract: :func:`scaling_values` returns the three values :func:`parse_decode_spec` takes.
The FITS standard lets a keyword appear only once; a header that repeats one of these is
ambiguous, so the rule is stated, not left to whichever card a lookup meets first: the
*last* card applies, as astropy's data does (its ``hdu.header[key]`` shows the first), and a
note names every value so that the choice is never silent.
"""

from __future__ import annotations

from dfits.format.header import Header

__all__ = ["SCALING", "scaling_values"]

SCALING = ("BSCALE", "BZERO", "BLANK")


def scaling_values(header: Header, where: str, notes: list[str]) -> tuple[object, ...]:
    """``(BSCALE, BZERO, BLANK)`` of ``header``, None where absent; the last of repeated cards.

    Examples
    --------
    >>> h = Header(b"".join(c.ljust(80) for c in [b"BSCALE  = 2", b"BSCALE  = 3"]))
    >>> notes = []
    >>> scaling_values(h, "x.fits, HDU 0", notes)
    (3, None, None)
    >>> notes
    ['x.fits, HDU 0: BSCALE appears 2 times (2, 3); the last, 3, applies as in astropy']
    """
    values: list[object] = []
    for key in SCALING:
        value = header.get(key)
        if value is not None and (n := header.count(key)) > 1:
            every = [header[key, i] for i in range(n)]
            value = every[-1]
            listed = ", ".join(repr(v) for v in every)
            notes.append(
                f"{where}: {key} appears {n} times ({listed}); the last, {value!r}, "
                "applies as in astropy"
            )
        values.append(value)
    return tuple(values)
