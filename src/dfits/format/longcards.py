"""Cards longer than one card image: strings through ``CONTINUE``, text over several cards.

The contract: :func:`format_cards` writes any ``(keyword, value[, comment])`` the way astropy
does — a string value that does not fit in one card is split over ``CONTINUE`` cards (the
long-string convention, each part ending in ``&``), and ``HISTORY``/``COMMENT``/blank text
longer than 72 characters over several cards of that keyword — so that
:func:`~dfits.format.cards.parse_card` and astropy read the value back whole. Everything else
is :func:`~dfits.format.cards.format_card`.
"""

from __future__ import annotations

import textwrap

from dfits.format.cards import CARD_SIZE, COMMENTARY_KEYWORDS, Value, format_card

__all__ = ["format_cards"]

# Characters of text after the 8-column keyword field of a commentary card.
_TEXT = CARD_SIZE - 8
# Characters of string between the quotes of a (first or CONTINUE) card, '&' included:
# 80 less 10 for "KEY     = " (or "CONTINUE  "), 2 quotes.
_PART = CARD_SIZE - 10 - 2


def format_cards(keyword: str, value: Value = None, comment: str = "") -> bytes:
    """One card, or as many as a long string or commentary text needs (80 bytes each).

    Examples
    --------
    >>> from dfits.format.cards import parse_card
    >>> raw = format_cards("LONG", "x" * 100 + "it's", "note")
    >>> len(raw) // 80, parse_card(raw).value == "x" * 100 + "it's"
    (2, True)
    >>> len(format_cards("HISTORY", "y" * 150)) // 80
    3
    """
    key = keyword.upper()
    if key in COMMENTARY_KEYWORDS:
        text = "" if value is None else str(value)
        parts = [text[i : i + _TEXT] for i in range(0, len(text), _TEXT)] or [""]
        return b"".join(format_card(key, part) for part in parts)
    if not isinstance(value, str) or len(_card_text(key, value, comment)) <= CARD_SIZE:
        return format_card(key, value, comment)
    return _continued(key, value, comment)


def _card_text(key: str, value: str, comment: str) -> str:
    text = f"{key:<8}= '{value.replace(chr(39), chr(39) * 2):<8}'"
    return f"{text} / {comment}" if comment else text


def _continued(key: str, value: str, comment: str) -> bytes:
    """A long string as a first card and CONTINUE cards; a quote is never split in two."""
    parts: list[str] = []
    current = ""
    for ch in value:
        piece = "''" if ch == "'" else ch
        if len(current) + len(piece) > _PART - 1:  # room for the '&'
            parts.append(current)
            current = ""
        current += piece
    parts.append(current)
    notes = [""] * len(parts)
    lead = f"CONTINUE  '{parts[-1]}'" if len(parts) > 1 else f"{key:<8}= '{parts[-1]}'"
    if comment and len(lead) + 3 + len(comment) <= CARD_SIZE:
        notes[-1] = comment
    elif comment:
        # the comment goes on CONTINUE cards of its own, each after an empty string part
        room = CARD_SIZE - len("CONTINUE  '&' / ")
        # split at blanks: readers join the parts with one blank (astropy does)
        chunks = textwrap.wrap(comment, room, break_on_hyphens=False) or [comment[:room]]
        parts += [""] * len(chunks)
        notes += chunks
    images = []
    for i, (part, note) in enumerate(zip(parts, notes, strict=True)):
        head = f"{key:<8}= " if i == 0 else "CONTINUE  "
        amp = "&" if i < len(parts) - 1 else ""
        images.append(f"{head}'{part}{amp}'" + (f" / {note}" if note else ""))
    for image in images:
        if not (image.isascii() and image.isprintable()):
            raise ValueError(f"card {key!r} holds non-ASCII or unprintable text: {value!r}")
    return b"".join(image.ljust(CARD_SIZE).encode("ascii") for image in images)
