"""A FITS header as a read-only, ordered, case-insensitive mapping keyword → value.

The contract: ``Header(raw)`` answers ``header[key]`` exactly as ``astropy.io.fits.Header``
does for the same bytes (first occurrence of a duplicated keyword, all texts of a commentary
keyword, ``CONTINUE`` strings joined), but opens ~100× faster, because

* building a header stores the bytes and nothing else; the keyword index is built on first use;
* the index depends only on the keyword columns (1–8) of the cards, so headers with the same
  keywords in the same order — the thousands of extensions of one file — share one index
  (:attr:`Header.keyword_index`), found with a single dictionary lookup;
* a value is parsed the first time it is asked for, and parses of identical 70-byte value
  fields are shared too.

Differences from astropy, each chosen so that reading never raises on a bad card: see
:mod:`dfits.format.cards`. Also, ``header['HISTORY']`` raises ``KeyError`` when the header has
no HISTORY card (astropy returns an empty list), keeping the mapping consistent with ``in`` and
``header.get('HISTORY', ())``; ``len(header)`` counts distinct keywords (a mapping's length);
:attr:`Header.ncards` counts cards (astropy's ``len``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from dfits._display import html_for
from dfits.format.cards import (
    CARD_SIZE,
    COMMENTARY_KEYWORDS,
    END_CARD,
    Card,
    Value,
    find_end,
    parse_card,
    parse_value,
)
from dfits.format.keywords import KeywordIndex, index_keywords
from dfits.format.keywords import normalize_keyword as _normalize

if TYPE_CHECKING:
    from astropy.io import fits

__all__ = ["Header", "index_cards"]

_PRINTABLE = bytes(range(32, 127))
# Parses of 70-byte value fields, shared by all headers; cleared when full.
_VALUES: dict[bytes, tuple[Value, bool]] = {}
_VALUES_LIMIT = 1 << 14
# Keywords whose cards never carry a value, even with "= " in columns 9-10 (astropy: an
# "END     = 5" card that does not end the header has the value "= 5").
_NO_VALUE = frozenset({"", "COMMENT", "HISTORY", "CONTINUE", "END"})


def index_cards(raw: bytes, ncards: int) -> tuple[KeywordIndex, tuple[int, ...]]:
    """The keyword index of the first ``ncards`` cards, and which of them hold bytes outside
    printable ASCII (positions in 80-byte cards)."""
    bad: tuple[int, ...] = ()
    if raw[: ncards * CARD_SIZE].translate(None, _PRINTABLE):
        bad = tuple(
            i
            for i in range(ncards)
            if raw[i * CARD_SIZE : (i + 1) * CARD_SIZE].translate(None, _PRINTABLE)
        )
    return index_keywords(raw, ncards), bad


class Header(Mapping[str, Any]):
    """A read-only FITS header.

    Parameters
    ----------
    raw : bytes or str
        The header as stored: cards of 80 characters, normally ending with the END card and
        blank padding. Without an END card every whole card is read.
    ncards : int, optional
        Number of cards before END, when the caller has already found it.

    Examples
    --------
    >>> h = Header(b"".join(c.ljust(80) for c in [
    ...     b"SIMPLE  =                    T", b"NAXIS   =                    0",
    ...     b"HISTORY first", b"HISTORY second", b"END"]))
    >>> h["naxis"], h["HISTORY"], list(h)
    (0, ('first', 'second'), ['SIMPLE', 'NAXIS', 'HISTORY'])
    """

    __slots__ = ("_bad", "_cards", "_layout", "_ncards", "_raw")

    def __init__(self, raw: bytes | str = b"", *, ncards: int | None = None) -> None:
        data = bytes(raw, "latin-1") if isinstance(raw, str) else bytes(raw)
        if ncards is None:
            end = find_end(data)
            ncards = (end if end >= 0 else len(data)) // CARD_SIZE
        self._raw = data
        self._ncards = ncards
        self._layout: KeywordIndex | None = None
        self._cards: dict[int, Card] | None = None
        self._bad: tuple[int, ...] = ()

    @classmethod
    def _scanned(
        cls, raw: bytes, ncards: int, layout: KeywordIndex, bad: tuple[int, ...]
    ) -> Header:
        # The layout scan has already found END, indexed the keywords and checked the bytes:
        # skip redoing that for each of thousands of small headers.
        self = object.__new__(cls)
        self._raw = raw
        self._ncards = ncards
        self._layout = layout
        self._cards = None
        self._bad = bad
        return self

    def __reduce__(self) -> tuple[type[Header], tuple[bytes]]:
        # Only the bytes travel: indexes and parsed values are rebuilt on demand.
        return Header, (self._raw,)

    @classmethod
    def fromstring(cls, data: bytes | str) -> Header:
        """Build a header from its stored bytes (astropy's spelling of the constructor)."""
        return cls(data)

    # -- index and values -------------------------------------------------------------------
    def _index(self) -> KeywordIndex:
        layout = self._layout
        if layout is not None:
            return layout
        layout, self._bad = index_cards(self._raw, self._ncards)
        self._layout = layout
        return layout

    def _span(self, i: int) -> tuple[int, int]:
        """First and past-last 80-byte card of logical card ``i``."""
        starts = self._index().starts
        if starts is None:
            return i, i + 1
        return starts[i], (starts[i + 1] if i + 1 < len(starts) else self._ncards)

    def _card(self, i: int) -> Card:
        cards = self._cards
        if cards is None:
            cards = self._cards = {}
        card = cards.get(i)
        if card is None:
            start, stop = self._span(i)
            card = cards[i] = parse_card(self._raw[start * CARD_SIZE : stop * CARD_SIZE])
        return card

    def _plain(self, i: int) -> tuple[Value, bool] | None:
        """``(value, valid)`` of logical card ``i`` when it is a plain single card (``= `` in
        columns 9-10, printable, no ``CONTINUE``): its value field parsed alone, once per
        distinct field. None for any other card. The layout is built by the caller."""
        layout = self._layout
        assert layout is not None
        starts = layout.starts
        start = i if starts is None else starts[i]
        pos = start * CARD_SIZE
        raw = self._raw
        if (
            raw[pos + 8 : pos + 10] != b"= "
            or (starts is not None and self._span(i)[1] != start + 1)
            or (self._bad and start in self._bad)
            or layout.names[i] in _NO_VALUE
            # a value indicator before column 9 (only in indexes not shared): parse_card's
            or (not layout.shared and b"=" in raw[pos : pos + 8])
        ):
            return None
        field = raw[pos + 10 : pos + CARD_SIZE]
        found = _VALUES.get(field)
        if found is None:
            value, _, valid = parse_value(field.decode("ascii"))
            found = (value, valid)
            if len(_VALUES) >= _VALUES_LIMIT:
                _VALUES.clear()
            _VALUES[field] = found
        return found

    def _value(self, i: int) -> Value:
        # The hot path of every lookup.
        found = self._plain(i)
        if found is not None and found[1]:
            return found[0]
        return self._card(i).value

    def valid_at(self, index: int) -> bool:
        """Whether the card at ``index`` is printable and its value parses (:attr:`Card.valid`),
        without parsing the whole card when it is a plain one.

        Examples
        --------
        >>> h = Header(b"".join(c.ljust(80) for c in [b"A       = 1", b"B       = 'x"]))
        >>> h.valid_at(0), h.valid_at(1)
        (True, False)
        """
        names = (self._layout or self._index()).names
        i = range(len(names))[index]  # IndexError as value_at's
        found = self._plain(i)
        return found[1] if found is not None else self._card(i).valid

    # -- mapping ----------------------------------------------------------------------------
    def __getitem__(self, key: str | int | tuple[str, int]) -> Any:
        layout = self._layout or self._index()
        if isinstance(key, str):
            name = _normalize(key)
            i = layout.first.get(name)
            if i is None:
                raise KeyError(f"Keyword {key!r} not found.")
            if name in COMMENTARY_KEYWORDS:
                return tuple(self._value(j) for j, k in enumerate(layout.names) if k == name)
            return self._value(i)
        if isinstance(key, tuple):
            return self._value(self._nth(*key))
        return self.value_at(key)

    def value_at(self, index: int) -> Value:
        """Value of the card at ``index`` (astropy's ``header[index]``), e.g. from :meth:`index`.

        Examples
        --------
        >>> h = Header(b"NAXIS   =                    0".ljust(80))
        >>> h.value_at(h.index("NAXIS"))
        0
        """
        n = len((self._layout or self._index()).names)
        if 0 <= index < n:
            return self._value(index)
        if -n <= index < 0:
            return self._value(index + n)
        raise IndexError(f"Header index {index} out of range ({n} cards).")

    def index(self, key: str) -> int:
        """Position of the first card with this keyword (astropy's ``Header.index``).

        Raises ``ValueError`` when there is none.
        """
        i = (self._layout or self._index()).first.get(_normalize(key))
        if i is None:
            raise ValueError(f"The keyword {key!r} is not in the header.")
        return i

    def get(self, key: str, default: Any = None) -> Any:
        """``header[key]`` if the keyword is present, else ``default``."""
        name = _normalize(key)
        i = (self._layout or self._index()).first.get(name)
        if i is None:
            return default
        return self[key] if name in COMMENTARY_KEYWORDS else self._value(i)

    def _nth(self, key: str, n: int) -> int:
        name = _normalize(key)
        hits = [j for j, k in enumerate(self._index().names) if k == name]
        if not hits:
            raise KeyError(f"Keyword {key!r} not found.")
        try:
            return hits[n]
        except IndexError:
            raise IndexError(f"There are only {len(hits)} {key!r} cards in the header.") from None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _normalize(key) in self._index().first

    def __iter__(self) -> Iterator[str]:
        layout = self._index()
        return iter([layout.keywords[i] for i in sorted(layout.first.values())])

    def __len__(self) -> int:
        return len(self._index().first)

    # -- astropy-like extras ----------------------------------------------------------------
    @property
    def ncards(self) -> int:
        """Number of cards (a card and its ``CONTINUE`` cards count once): astropy's ``len``."""
        return len(self._index().names)

    @property
    def cards(self) -> tuple[Card, ...]:
        """Every card, in order, END excluded."""
        return tuple(self._card(i) for i in range(self.ncards))

    @property
    def comments(self) -> _Comments:
        """``header.comments[key]``: the comment of the first card with that keyword."""
        return _Comments(self)

    @property
    def bad_cards(self) -> tuple[int, ...]:
        """Positions (0-based, in 80-byte cards) of cards with bytes outside ASCII 32–126."""
        if self._layout is None:
            self._index()
        return self._bad

    @property
    def keyword_index(self) -> KeywordIndex:
        """The keyword index: one object shared by all headers with identical keywords.

        Callers may key caches of structural facts (which keyword sits where) on it.
        """
        return self._layout or self._index()

    def card(self, key: str, n: int = 0) -> Card:
        """The ``n``-th card with this keyword, parsed (:attr:`Card.valid` says if its value is).

        Raises ``KeyError`` when there is no such card.

        Examples
        --------
        >>> h = Header(b"TTYPE1  = 'ZSCALE".ljust(80))
        >>> h.card("TTYPE1").valid
        False
        """
        if n == 0:  # the first card: the index's dict, not a scan of every keyword
            i = (self._layout or self._index()).first.get(_normalize(key))
            if i is None:
                raise KeyError(f"Keyword {key!r} not found.")
            return self._card(i)
        return self._card(self._nth(key, n))

    def locate(self, key: str, n: int = 0) -> int:
        """Position (0-based, in 80-byte cards) of the ``n``-th card with this keyword.

        Raises ``KeyError`` when there is no such card.
        """
        return self._span(self._nth(key, n))[0]

    def card_bytes(self, index: int) -> bytes:
        """The stored bytes of the card at ``index``, its ``CONTINUE`` cards included."""
        start, stop = self._span(range(self.ncards)[index])
        return self._raw[start * CARD_SIZE : stop * CARD_SIZE]

    def count(self, key: str) -> int:
        """How many cards carry this keyword."""
        return self._index().names.count(_normalize(key))

    def tostring(self) -> bytes:
        """The bytes this header was built from.

        For headers read from a file (``hdu.header``): the cards through the END card; the
        blank padding to the 2880-byte block is not kept.
        """
        return self._raw

    def to_astropy(self) -> fits.Header:
        """An ``astropy.io.fits.Header`` built from the same bytes (imports astropy)."""
        from astropy.io import fits

        return fits.Header.fromstring(self._raw[: self._ncards * CARD_SIZE] + END_CARD)

    def __repr__(self) -> str:
        text = self._raw[: self._ncards * CARD_SIZE].decode("latin-1")
        return "\n".join(text[i : i + CARD_SIZE] for i in range(0, len(text), CARD_SIZE))

    def _repr_html_(self) -> str | None:
        # The notebook rendering is registered by the display layer (None: the text repr).
        return html_for(self)


class _Comments:
    """``header.comments[key]`` as in astropy."""

    __slots__ = ("_header",)

    def __init__(self, header: Header) -> None:
        self._header = header

    def __getitem__(self, key: str) -> str:
        header = self._header
        i = header._index().first.get(_normalize(key))
        if i is None:
            raise KeyError(f"Keyword {key!r} not found.")
        return header._card(i).comment
