"""Shared ``check_*`` helpers: dfits cards, headers and layouts against astropy."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path

from astropy.io import fits
from astropy.io.fits.card import Undefined
from astropy.io.fits.verify import VerifyError

from dfits.format.cards import COMMENTARY_KEYWORDS, Card
from dfits.format.header import Header
from dfits.format.layout import FileLayout, scan

#: Real FITS files from other projects (see its SOURCES.md), beside the repository.
CORPUS = Path(__file__).parents[3] / "shared" / "corpus"


def same_value(ours: object, theirs: object) -> bool:
    """Equal values of the same type (floats compared by repr: -0.0, inf)."""
    if isinstance(theirs, Undefined):
        theirs = None
    if type(ours) is not type(theirs):
        return False
    if isinstance(theirs, float | complex):
        return repr(ours) == repr(theirs) or (
            isinstance(theirs, float) and math.isnan(theirs) and math.isnan(ours)
        )
    return ours == theirs


def astropy_card(card: fits.Card) -> tuple[str, object, str] | None:
    """(keyword, value, comment) as astropy gives them; None when astropy refuses the value.

    Record-valued keyword cards (``DP1 = 'AXIS.1: 1'``) are reported as the plain string
    cards dfits reads them as.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if card.field_specifier is not None:
                return card.rawkeyword, card.rawvalue, card.comment
            return card.keyword, card.value, card.comment
        except VerifyError:
            return None


def check_card(ours: Card, theirs: fits.Card) -> None:
    expected = astropy_card(theirs)
    if expected is None:
        assert not ours.valid, ours
        return
    keyword, value, comment = expected
    assert ours.keyword == keyword, (ours, expected)
    assert same_value(ours.value, value), (ours, expected)
    assert ours.comment == comment, (ours, expected)


def check_header(ours: Header, theirs: fits.Header) -> None:
    """Every card, every lookup and the key order agree with astropy."""
    assert ours.ncards == len(theirs.cards)
    for mine, card in zip(ours.cards, theirs.cards, strict=True):
        check_card(mine, card)
    for key in ours:
        expected = _astropy_lookup(theirs, key)
        if expected is _REFUSED:
            continue
        got = ours[key]
        if key.upper() in COMMENTARY_KEYWORDS:
            assert got == tuple(expected), key
        else:
            assert same_value(got, expected), (key, got, expected)
    unique = list(dict.fromkeys(c.keyword.upper() for c in ours.cards))
    assert [k.upper() for k in ours] == unique


_REFUSED = object()


def _astropy_lookup(theirs: fits.Header, key: str) -> object:
    if "*" in key or "?" in key or "..." in key:
        return _REFUSED  # wildcards to astropy, letters to dfits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = theirs[key]
        except (VerifyError, KeyError):
            # astropy refuses unparsable values, and cannot look up some HIERARCH names
            # (it takes 'long.key.name' for a record-valued keyword).
            return _REFUSED
    return None if isinstance(value, Undefined) else value


def scan_bytes(
    blob: bytes, *, size: int | str | None = "auto", name: str = "t.fits", reads: list | None = None
) -> FileLayout:
    """Scan an in-memory file; ``reads`` collects (offset, n) of every read."""

    def read_at(offset: int, n: int) -> bytes:
        if reads is not None:
            reads.append((offset, n))
        return blob[offset : offset + n]

    return scan(read_at, len(blob) if size == "auto" else size, filename=name)  # type: ignore[arg-type]


def reader(blob: bytes) -> Callable[[int, int], bytes]:
    return lambda offset, n: blob[offset : offset + n]
