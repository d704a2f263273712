"""The ``fits_header`` attribute: a header readable in xarray's reprs, cards on demand.

The contract: :func:`readable_header` makes the attribute the ``dfits`` engine sets (one card
a line, trailing blanks dropped), :func:`card_text` turns it (or the 80-column layout of
earlier versions) back into cards for :class:`dfits.Header` and WCS parsing. A string, so
that ``to_netcdf``/``to_zarr`` keep it and ``keep_attrs`` carries it.
"""

from __future__ import annotations

__all__ = ["card_text", "readable_header"]


def readable_header(text: str) -> str:
    r"""The ``fits_header`` attribute: one card a line, trailing blanks dropped, no END.

    xarray shows attributes as they are (the HTML repr keeps line breaks), so 80-column
    cards run together would wrap mid-word; :func:`card_text` gives the cards back. Line
    breaks inside a card (never legal FITS) become blanks.

    >>> readable_header("SIMPLE  =                    T" + " " * 50 + "END" + " " * 77)
    'SIMPLE  =                    T'
    """
    cards = [text[i : i + 80] for i in range(0, len(text), 80)]
    lines = [c.replace("\n", " ").replace("\r", " ").rstrip() for c in cards]
    while lines and lines[-1] in ("END", ""):
        lines.pop()
    return "\n".join(lines)


def card_text(attr: str) -> str:
    r"""The 80-column cards of a ``fits_header`` attribute (either layout), END included.

    >>> len(card_text("SIMPLE  =                    T\nNAXIS   =                    0"))
    240
    """
    if "\n" not in attr and not len(attr) % 80:
        return attr  # already cards (files opened by earlier versions, netCDF round trips)
    return "".join(line.ljust(80) for line in [*attr.split("\n"), "END"])
