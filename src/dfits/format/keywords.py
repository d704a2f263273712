"""Keyword indexes of headers: which keyword sits on which card, shared between alike headers.

The contract: :func:`index_keywords` lists the keywords of the first ``ncards`` cards of a
header, grouping ``CONTINUE`` cards with the card they continue, exactly as astropy names them
(:func:`dfits.format.cards.parse_keyword`). Headers whose keyword columns (1–8) are identical —
the thousands of extensions of one file — share one :class:`KeywordIndex`, found with a single
dictionary lookup, which is what makes 10,000 alike headers cheap to read. The caches are
bounded: cleared when full, whatever the input.
"""

from __future__ import annotations

from dfits.format.cards import CARD_SIZE, is_printable, parse_keyword

__all__ = ["KeywordIndex", "index_keywords", "normalize_keyword"]

_CACHE_LIMIT = 1 << 14
_INDEX_LIMIT = 1 << 10
_SHARED_CARDS = 1000
# Shared caches, cleared when full so that memory stays bounded whatever the input.
_INDEXES: dict[tuple[bytes, ...], KeywordIndex] = {}
_NAMES: dict[str, str] = {}


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
        or not is_printable(joined)
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
        keywords.append(parse_keyword(image.decode("latin-1")))
        starts.append(i)
    return KeywordIndex(keywords, None if len(starts) == ncards else starts)
