"""FITS header cards: 80-character images → keyword, value and comment; keyword indexes.

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

:func:`index_keywords` lists the keywords of a header's cards; headers with the same keywords
share one :class:`KeywordIndex`, which is what makes 10,000 alike headers cheap to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "BLOCK_SIZE",
    "CARD_SIZE",
    "COMMENTARY_KEYWORDS",
    "END_CARD",
    "Card",
    "KeywordIndex",
    "Value",
    "find_end",
    "index_keywords",
    "is_printable",
    "normalize_keyword",
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
_CACHE_LIMIT = 1 << 14
_INDEX_LIMIT = 1 << 10
_SHARED_CARDS = 1000
# Shared caches, cleared when full so that memory stays bounded whatever the input.
_INDEXES: dict[tuple[bytes, ...], KeywordIndex] = {}
_NAMES: dict[str, str] = {}

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

    Returns -1 when there is none before ``stop``.

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


def normalize_keyword(key: str) -> str:
    """The form of a keyword that lookups compare: stripped, upper case, no ``HIERARCH``.

    Examples
    --------
    >>> normalize_keyword(" hierarch ESO det "), normalize_keyword("naxis1")
    ('ESO DET', 'NAXIS1')
    """
    name = _NAMES.get(key)
    if name is None:
        name = key.strip().upper()
        if name.startswith("HIERARCH "):
            name = name[9:].strip()
        if len(_NAMES) >= _CACHE_LIMIT:
            _NAMES.clear()
        _NAMES[key] = name
    return name


class KeywordIndex:
    """Keywords of a run of cards, in order, grouped into logical cards (``CONTINUE`` joined).

    Shared by every header whose keyword columns (1–8) are identical, which makes it a key
    for caches of structural facts. Attributes: ``keywords`` (as astropy gives them),
    ``names`` (normalised), ``starts`` (first 80-byte card of each logical card, or None when
    there are no ``CONTINUE`` cards), ``first`` (normalised name → first logical card).
    """

    __slots__ = ("first", "keywords", "names", "shared", "starts")

    def __init__(self, keywords: list[str], starts: list[int] | None) -> None:
        #: True once the index sits in the shared cache (only then is it worth keying on).
        self.shared = False
        # Tuples: the index is shared between headers, nobody may change it.
        self.keywords = tuple(keywords)
        self.names = names = tuple(normalize_keyword(k) for k in keywords)
        self.starts = None if starts is None else tuple(starts)
        # Built back to front so that the first occurrence of a duplicated keyword wins.
        self.first = dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))


def index_keywords(raw: bytes, ncards: int) -> KeywordIndex:
    """The :class:`KeywordIndex` of the first ``ncards`` cards of ``raw``, shared if seen before.

    Examples
    --------
    >>> raw = b"".join(c.ljust(80) for c in [b"A       = 1", b"B       = 2", b"A       = 3"])
    >>> index = index_keywords(raw, 3)
    >>> index.first["A"], index is index_keywords(raw.replace(b"= 1", b"= 9"), 3)
    (0, True)
    """
    size = ncards * CARD_SIZE
    # The keyword columns (1-8) of every card, as 8 strided slices: the cache key.
    columns = (
        raw[0:size:80], raw[1:size:80], raw[2:size:80], raw[3:size:80],
        raw[4:size:80], raw[5:size:80], raw[6:size:80], raw[7:size:80],
    )  # fmt: skip
    found = _INDEXES.get(columns)
    if found is not None:
        return found
    if ncards > _SHARED_CARDS:
        return _own_index(raw, ncards)  # rare giants would crowd the cache out
    joined = b"".join(columns)
    if (
        b"=" in joined
        or joined.upper() != joined
        or joined.translate(None, _PRINTABLE)
        or b"HIERARCH" in (keys := [raw[i : i + 8] for i in range(0, size, CARD_SIZE)])
    ):
        # Such keywords depend on more than columns 1-8 (HIERARCH names, a value indicator
        # before column 9, keywords astropy keeps in lower case): index this header alone.
        return _own_index(raw, ncards)
    keywords: list[str] = []
    starts: list[int] = []
    for i, key in enumerate(keys):
        # astropy joins any card starting with CONTINUE to the card before it.
        if key == b"CONTINUE" and starts:
            continue
        keywords.append(key.decode("ascii").strip())
        starts.append(i)
    found = KeywordIndex(keywords, None if len(starts) == ncards else starts)
    if len(_INDEXES) >= _INDEX_LIMIT:
        _INDEXES.clear()
    _INDEXES[columns] = found
    found.shared = True
    return found


def _own_index(raw: bytes, ncards: int) -> KeywordIndex:
    keywords: list[str] = []
    starts: list[int] = []
    for i in range(ncards):
        image = raw[i * CARD_SIZE : (i + 1) * CARD_SIZE]
        if image[:8] == b"CONTINUE" and starts:
            continue
        keywords.append(_keyword(image.decode("latin-1"))[0])
        starts.append(i)
    return KeywordIndex(keywords, None if len(starts) == ncards else starts)
