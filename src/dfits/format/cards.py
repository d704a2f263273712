"""FITS header cards: 80-character images → keyword, value and comment, and back.

The contract: :func:`parse_card` gives, for any card image (or a card followed by its
``CONTINUE`` cards), the keyword, value and comment that ``astropy.io.fits.Card.fromstring``
gives, with three deliberate differences that keep a header readable instead of raising:

* an undefined value (``KEY     =`` with nothing after it) is ``None``, not ``Undefined``;
* a value astropy cannot parse (``KEY     = abc``) is the text before the first ``/``, as
  astropy's own ``verify('fix')`` would set it, and the card is marked ``valid=False``;
* a card with bytes outside printable ASCII (32–126) is kept raw: its value is the text after
  the value indicator, unparsed, and ``valid=False``.

Record-valued keyword cards (``DP1 = 'AXIS.1: 1'``) are plain string cards here: the value is
``'AXIS.1: 1'``, which is what ``astropy.io.fits.Header['DP1']`` returns too. A lower-case
``hierarch`` card is read as HIERARCH (astropy refuses its value).

:func:`format_card` is the one card formatter dfits writes with (the writer, the CLI, the
xarray accessor): fixed format, values that :func:`parse_card` (and astropy) read back equal —
floats to the last bit when 20 columns allow it, as astropy writes them. Keyword indexes of
whole headers live in :mod:`dfits.format.keywords`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Complex, Integral, Real
from typing import Any

__all__ = [
    "BLOCK_SIZE",
    "CARD_SIZE",
    "COMMENTARY_KEYWORDS",
    "END_CARD",
    "Card",
    "Value",
    "find_end",
    "format_card",
    "format_header",
    "format_value",
    "is_printable",
    "parse_card",
    "parse_keyword",
    "parse_value",
]

#: Bytes in one card image.
CARD_SIZE = 80
#: Bytes in one FITS block; headers and data are padded to a multiple of it.
BLOCK_SIZE = 2880
#: The card that ends every header.
END_CARD = b"END" + b" " * 77
#: Keywords whose cards carry free text, not a value; a header may hold many of each.
COMMENTARY_KEYWORDS = frozenset({"", "COMMENT", "HISTORY"})

#: What a card's value may be.
Value = bool | int | float | complex | str | None

_SPECIAL = frozenset({"", "COMMENT", "HISTORY", "END", "CONTINUE"})
_PRINTABLE = bytes(range(32, 127))
# What a keyword may hold in a card dfits writes (FITS standard 4.1.2.1; no HIERARCH).
_WRITABLE_KEYWORD = re.compile(r"[A-Z0-9_-]{0,8}")

# The grammar below is astropy's "non-FITS-standard-compliant" value grammar, which is also
# what astropy parses real files with: lower-case exponents and blanks inside numbers are
# accepted. The string branch is a lazy match that ends at a quote followed by the end, a
# blank or a slash; backtracking lets an unescaped quote inside a string through, as astropy.
_DIGITS = r"(?:\.\d+|\d+(?:\.\d*)?) *(?:[deDE] *[+-]? *\d+)?"
_NUMBER = r"[+-]? *" + _DIGITS
_STRING = r"'(?P<strg>(?:[ -~]+?|''|) *?)'(?=$|/| )"
_COMMENT = r"(?P<sepr>/ *)(?P<comm>(?:.|\n)*)"
_VALUE_RE = re.compile(
    rf" *(?:{_STRING}|(?P<bool>[FT])|(?P<numr>{_NUMBER})|"
    rf"(?P<cplx>\( *(?P<real>{_NUMBER}) *, *(?P<imag>{_NUMBER}) *\)))? *(?:{_COMMENT})?$"
)
_CONTINUED_RE = re.compile(rf"(?:{_STRING})? *(?:{_COMMENT})?$")
_NUMBER_FIX = str.maketrans({"d": "e", "D": "E", " ": None})


@dataclass(frozen=True, slots=True)
class Card:
    """One logical header card.

    Attributes
    ----------
    keyword : str
        Upper-case keyword (``''`` for blank cards); for ``HIERARCH`` cards the name after
        ``HIERARCH`` in its original case, as astropy gives it.
    value : bool, int, float, complex, str or None
        The parsed value; the text for commentary cards; ``None`` when undefined.
    comment : str
        The text after ``/`` (``''`` when absent).
    image : str
        The card as stored (80 characters, or a multiple of 80 when ``CONTINUE`` cards
        follow), bytes decoded as latin-1 so that it round-trips exactly.
    valid : bool
        False when the value could not be parsed and holds raw text instead.

    Examples
    --------
    >>> parse_card("NAXIS1  =                  512 / length of axis 1")
    Card(keyword='NAXIS1', value=512, comment='length of axis 1', ...)
    """

    keyword: str
    value: Value
    comment: str
    image: str
    valid: bool = True

    def __repr__(self) -> str:
        valid = "" if self.valid else ", valid=False"
        return (
            f"Card(keyword={self.keyword!r}, value={self.value!r}, "
            f"comment={self.comment!r}, ...{valid})"
        )


def is_printable(data: bytes) -> bool:
    """True when every byte is printable ASCII (32–126), as FITS headers require.

    Examples
    --------
    >>> is_printable(b"SIMPLE  =  T"), is_printable(b"caf\\xc3\\xa9")
    (True, False)
    """
    return not data.translate(None, _PRINTABLE)


def parse_keyword(image: str) -> str:
    """Return the keyword of a card image, normalised as astropy does.

    Examples
    --------
    >>> parse_keyword("naxis   = 2"), parse_keyword("HIERARCH ESO DET CHIP = 'x'")
    ('NAXIS', 'ESO DET CHIP')
    """
    return _keyword(image)[0]


def _keyword(image: str) -> tuple[str, int]:
    """Keyword and where its value text starts (``-1``: the card carries no value)."""
    head = image[:8].strip()
    upper = head.upper()
    if upper in _SPECIAL:
        return upper, (8 if upper == "CONTINUE" else -1)
    if upper == "HIERARCH" and image[8:9] == " " and "=" in image:
        name, _, _ = image.partition("=")
        return name[9:].strip(), len(name) + 1
    indicator = image.find("= ")
    if 0 <= indicator <= 8:
        keyword = upper[:indicator] if indicator < 8 else upper
        # "COMMENT= x" or "= x" still make commentary cards (no value), as in astropy.
        return keyword, (-1 if keyword in _SPECIAL else indicator + 2)
    # Not a keyword = value card: astropy keeps such a keyword as written.
    return head, -1


def parse_value(text: str) -> tuple[Value, str, bool]:
    """Parse the value-and-comment field of a card (what follows ``= ``).

    Returns
    -------
    value, comment, valid
        ``valid`` is False when the text is not a FITS value; ``value`` is then the text before
        the first ``/``, as astropy's ``verify('fix')`` would make it.

    Examples
    --------
    >>> parse_value("  1.5D+03 / exposure")
    (1500.0, 'exposure', True)
    >>> parse_value("'it''s  '")
    ("it's", '', True)
    >>> parse_value("abc / junk")
    ('abc', 'junk', False)
    """
    text = text.strip()
    # Fast path for the commonest cards (integers such as NAXISn), a tenth of the regex's cost.
    head, slash, comment = text.partition("/")
    head = head.rstrip()
    if head.isdigit() and head.isascii():
        return int(head), comment.strip() if slash else "", True
    match = _VALUE_RE.match(text)
    if match is None:
        if slash:
            return head.strip(), comment.strip(), False
        return text, "", False
    comment = (match["comm"] or "").rstrip()
    if match["bool"] is not None:
        return match["bool"] == "T", comment, True
    if match["strg"] is not None:
        return match["strg"].replace("''", "'").rstrip(), comment, True
    if match["numr"] is not None:
        return _number(match["numr"]), comment, True
    if match["cplx"] is not None:
        return _number(match["real"]) + _number(match["imag"]) * 1j, comment, True
    return None, comment, True


def _number(text: str) -> int | float:
    text = text.translate(_NUMBER_FIX)
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_card(image: str | bytes) -> Card:
    """Parse one card image, or a card followed by its ``CONTINUE`` cards.

    Parameters
    ----------
    image : str or bytes
        80 characters, or a multiple of 80 (shorter images are padded with blanks).

    Examples
    --------
    >>> parse_card("HISTORY reduced with dfits").value
    'reduced with dfits'
    >>> card = parse_card("LONG    = 'abc&'".ljust(80) + "CONTINUE  'def' / note".ljust(80))
    >>> card.value, card.comment
    ('abcdef', 'note')
    """
    text = image.decode("latin-1") if isinstance(image, bytes) else image
    if len(text) % CARD_SIZE or not text:
        text = text.ljust(len(text) + (-len(text)) % CARD_SIZE or CARD_SIZE)
    keyword, start = _keyword(text)
    printable = text.isascii() and text.isprintable()
    if start < 0:
        # Commentary text, or a card without a value indicator: astropy gives the text
        # after column 8 (a CONTINUE card following a COMMENT is part of that text too).
        return Card(keyword, text[8:].rstrip(), "", text, printable and keyword in _SPECIAL)
    if not printable:
        return Card(keyword, text[start:CARD_SIZE].strip(), "", text, False)
    if len(text) > CARD_SIZE:
        return _parse_continued(text, keyword, start)
    value, comment, valid = parse_value(text[start:])
    return Card(keyword, value, comment, text, valid)


def _parse_continued(text: str, keyword: str, start: int) -> Card:
    """A string card followed by ``CONTINUE`` cards, joined as astropy joins them."""
    parts: list[str] = []
    comments: list[str] = []
    for offset in range(0, len(text), CARD_SIZE):
        field = text[offset + (start if offset == 0 else 8) : offset + CARD_SIZE].strip()
        value, _, valid = parse_value(field)
        match = _CONTINUED_RE.match(field)
        if not valid or not isinstance(value, str) or match is None:
            # astropy refuses such a card; keep the first card's own value.
            value, comment, _ = parse_value(text[start:CARD_SIZE])
            return Card(keyword, value, comment, text, False)
        part = (match["strg"] or "").rstrip()
        parts.append(part[:-1] if part.endswith("&") else part)
        if match["comm"]:
            comments.append(match["comm"].rstrip())
    # astropy re-parses the joined string as one value, quirks included (a joined "' /"
    # ends the string early); do the same.
    value, comment, valid = parse_value(f"'{''.join(parts)}' / {' '.join(comments)}")
    return Card(keyword, value, comment, text, valid)


def find_end(buf: bytes, start: int = 0, stop: int | None = None) -> int:
    """Offset in ``buf`` of the first END card on a card boundary counted from ``start``.

    Only the standard's END card counts: END and 77 blanks. A card whose keyword is END but
    whose columns 9-80 hold anything else (``END     = 1000``) does not end the header, as
    in astropy's header parser for ASCII headers (fuzz seeds 6 and 7: such cards before the
    real END). Returns -1 when there is none before ``stop``.

    Examples
    --------
    >>> find_end(b"SIMPLE  =  T".ljust(80) + b"END".ljust(80))
    80
    """
    stop = len(buf) if stop is None else stop
    pos = buf.find(END_CARD, start, stop)
    # A match off a card boundary is text inside some card (e.g. a COMMENT ending in END).
    while pos >= 0 and (pos - start) % CARD_SIZE:
        pos = buf.find(END_CARD, pos + 1, stop)
    return pos


# -- writing --------------------------------------------------------------------------------
def _format_float(value: float) -> str:
    """A float in at most 20 columns: the shortest exact form when it fits (astropy's choice).

    Longer forms (17 digits and a 3-digit exponent) are rounded, not cut, to fit.
    """
    if not math.isfinite(value):
        raise ValueError(f"FITS cards cannot hold {value!r}")
    text = _exponent(repr(value).upper())
    if "." not in text and "E" not in text:
        text += ".0"
    digits = 16
    while len(text) > 20:
        text = _exponent(f"{value:.{digits}E}")
        digits -= 1
    return text


def _exponent(text: str) -> str:
    """``1E+300`` → ``1E+300``; ``1E-5`` → ``1E-05``: a signed exponent of 2 or more digits."""
    mantissa, e, exponent = text.partition("E")
    if not e:
        return text
    sign = "-" if exponent.startswith("-") else "+"
    return f"{mantissa}E{sign}{int(exponent.lstrip('+-')):02d}"


def format_value(value: Value) -> str:
    """The value field of a fixed-format card (what follows ``= ``).

    Logical, integer, real and complex values are right-justified in 20 columns; strings are
    quoted, ``'`` doubled, padded to at least 8 characters; None is an undefined value.

    Examples
    --------
    >>> format_value(True), format_value(-3), format_value(0.1), format_value(1e-300)
    ('                   T', '                  -3', '                 0.1', '              1E-300')
    >>> format_value("it's")
    "'it''s   '"
    >>> parse_value(format_value(2.5e-12))[0]
    2.5e-12
    """
    if value is None:
        return " " * 20
    # numpy's bool is no Python bool (nor an Integral); its dtype says what it is
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        return f"{'T' if value else 'F':>20}"
    if isinstance(value, Integral):
        return f"{int(value):>20}"
    if isinstance(value, Real):
        return f"{_format_float(float(value)):>20}"
    if isinstance(value, Complex):
        z = complex(value)
        pair = f"({_format_float(z.real)}, {_format_float(z.imag)})"
        return f"{pair:>20}"
    if isinstance(value, str):
        text = value.replace("'", "''")
        return f"'{text:<8}'"
    raise TypeError(f"cannot write a {type(value).__name__} ({value!r}) as a FITS card value")


def format_card(keyword: str, value: Value = None, comment: str = "") -> bytes:
    """One 80-byte card in fixed format; commentary keywords take their text as ``value``.

    Raises ``ValueError`` for a keyword that is not 8 characters of ``A-Z 0-9 _ -`` (lower
    case is upper-cased), a card longer than 80 characters, or text outside printable ASCII.

    Examples
    --------
    >>> format_card("NAXIS", 2)[:30]
    b'NAXIS   =                    2'
    >>> parse_card(format_card("OBJECT", "M 1's", "target")).value
    "M 1's"
    """
    key = keyword.upper()
    if not _WRITABLE_KEYWORD.fullmatch(key):
        raise ValueError(f"cannot write keyword {keyword!r}: want up to 8 of A-Z, 0-9, _ and -")
    if key in COMMENTARY_KEYWORDS:
        text = f"{key:<8}{'' if value is None else value}"
    elif key == "END":
        text = "END"
    else:
        text = f"{key:<8}= {format_value(value)}"
        if comment:
            text += f" / {comment}"
    if len(text) > CARD_SIZE:
        raise ValueError(f"card {key!r} does not fit in 80 characters: {text!r}")
    if not (text.isascii() and text.isprintable()):
        raise ValueError(f"card {key!r} holds non-ASCII or unprintable text: {text!r}")
    return text.ljust(CARD_SIZE).encode("ascii")


def format_header(cards: Iterable[tuple[Any, ...]]) -> bytes:
    """A header block from ``(keyword, value[, comment])`` tuples: the cards, END, blank padding.

    Examples
    --------
    >>> block = format_header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)])
    >>> len(block), find_end(block)
    (2880, 240)
    """
    raw = b"".join(format_card(*c) for c in cards) + END_CARD
    return raw + b" " * (-len(raw) % BLOCK_SIZE)
