"""Seeded mutations of table files (issue 44): what a damaged or odd table looks like.

:func:`mutated_table(seed, case)` is a pure function of its two integers, as
:func:`tests.fuzz.mutate.mutated` is for images: it draws a table seed
(:func:`tests.fuzz.tableseeds.table_seeds`) and one to three mutations:

* ``table_card``: a card that says how the rows are laid out or decoded given a value
  aimed at it: TFORMn (other codes, repeats, P/Q forms with and without a maximum, junk),
  TDIMn, NAXIS1, NAXIS2, PCOUNT, THEAP, TNULLn, TSCALn, TZEROn (the unsigned and int8
  offsets too), and in a ZTABLE ZTILELEN, ZFORMn, ZCTYPn, ZNAXIS1/2, ZPCOUNT; in place of
  the card where the header has one, else added;
* ``descriptor``: a variable-length descriptor (of the table, or of a ZTABLE's cells) given
  a count or an offset that runs out of the heap, negative or huge;
* ``heap_cut``: the file cut inside the heap (or the rows), or the heap's last bytes zeroed;
* ``row_bytes``: bytes flipped or replaced in the rows;
* ``tile_bytes``: bytes flipped or replaced in a ZTABLE's compressed cells (its heap);
* the image mutators of :mod:`tests.fuzz.mutate` that act on any header (card edits, byte
  flips), drawn less often.
"""

from __future__ import annotations

import random
import re

from tests.fuzz import mutate
from tests.fuzz.mutate import BLOCK, CARD, _card, _cards, _rebuild, headers
from tests.fuzz.tableseeds import table_seeds

__all__ = ["TABLE_MUTATORS", "mutated_table", "table_layout"]

_FORMS = [
    b"'L'", b"'X'", b"'8X'", b"'B'", b"'I'", b"'J'", b"'K'", b"'E'", b"'D'", b"'C'", b"'M'",
    b"'A'", b"'3A'", b"'0J'", b"'2J'", b"'3E'", b"'4B'", b"'12A'", b"'16A'", b"'1PJ'",
    b"'1PJ(3)'", b"'1QD'", b"'1PL'", b"'1PA(99)'", b"'1PB'", b"'1QB'", b"'PE()'", b"'2PJ'",
    b"'1PX'", b"'1PC'", b"'1QM'", b"'1PK'", b"'Z'", b"'J2'", b"'-1J'", b"'99999999999J'",
    b"''", b"'1P'", b"'1PJ(-1)'", b"'1Q'", b"3", b"T",
]  # fmt: skip
_TDIMS = [
    b"'(2)'", b"'(2,3)'", b"'(3,2)'", b"'(4,3)'", b"'(2,4)'", b"'(1,1)'", b"'(0)'", b"'()'",
    b"'(6)'", b"'(2,2,2)'", b"'(-1,2)'", b"'(2'", b"'abc'", b"'(99999999999)'", b"3",
]  # fmt: skip
_NUMBERS = [
    b"0", b"1", b"-1", b"2", b"3", b"7", b"8", b"16", b"-7", b"127", b"128", b"-128", b"255",
    b"256", b"32767", b"32768", b"-32768", b"2147483647", b"2147483648", b"4294967296",
    b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809", b"1E30",
    b"0.5", b"2.5", b"-1.0", b"1E-300", b"NaN", b"''", b"'3'", b"T",
]  # fmt: skip
_ALGORITHMS = [
    b"'GZIP_1'", b"'GZIP_2'", b"'RICE_1'", b"'NOCOMPRESS'", b"'RICE_ONE'", b"'HCOMPRESS_1'",
    b"'PLIO_1'", b"'gzip_1'", b"''", b"1",
]  # fmt: skip
#: keyword -> the values aimed at it (n: a column number)
_AIMED = {
    "TFORM{n}": _FORMS, "TDIM{n}": _TDIMS, "TNULL{n}": _NUMBERS, "TSCAL{n}": _NUMBERS,
    "TZERO{n}": _NUMBERS, "NAXIS1": _NUMBERS, "NAXIS2": _NUMBERS, "PCOUNT": _NUMBERS,
    "THEAP": _NUMBERS, "ZTILELEN": _NUMBERS, "ZFORM{n}": _FORMS, "ZCTYP{n}": _ALGORITHMS,
    "ZNAXIS1": _NUMBERS, "ZNAXIS2": _NUMBERS, "ZPCOUNT": _NUMBERS, "TTYPE{n}": [
        b"'A'", b"'B'", b"'a'", b"'x y'", b"'ZSCALE'", b"''", b"'\xe9t\xe9'", b"'`q`'",
    ],
}  # fmt: skip
_INT = re.compile(rb"([A-Z0-9_]+) *= *([-+]?\d+)")


def table_layout(blob: bytes, span: tuple[int, int]) -> dict[str, int] | None:
    """The integer cards of the header at ``span`` that place its data (NAXIS1, NAXIS2,
    PCOUNT, THEAP, the data's offset), found the simple way; None if it is no table."""
    cards = _cards(blob, span)
    found: dict[str, int] = {}
    for c in cards:
        m = _INT.match(c)
        if m:
            found.setdefault(m[1].decode(), int(m[2]))
    if not any(c.startswith((b"XTENSION= 'BINTABLE'", b"XTENSION= 'TABLE")) for c in cards):
        return None
    start, end = span
    found["DATA"] = start + -(-(end + CARD - start) // BLOCK) * BLOCK
    found.setdefault("PCOUNT", 0)
    found.setdefault("THEAP", found.get("NAXIS1", 0) * found.get("NAXIS2", 0))
    return found


def _tables(blob: bytes, spans: list) -> list[tuple[tuple[int, int], dict[str, int]]]:
    out = []
    for span in spans:
        layout = table_layout(blob, span)
        if layout is not None and "NAXIS1" in layout and "NAXIS2" in layout:
            out.append((span, layout))
    return out


def table_card(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """A layout or decode keyword of a table given a value aimed at it."""
    tables = _tables(blob, spans)
    if not tables:
        return mutate.edit_value(rng, blob, spans)
    span, layout = rng.choice(tables)
    cards = _cards(blob, span)
    pattern = rng.choice(list(_AIMED))
    key = pattern.format(n=rng.randint(1, max(1, min(layout.get("TFIELDS", 1), 9)))).encode()
    new = _card(key, rng.choice(_AIMED[pattern]))
    places = [i for i, c in enumerate(cards) if c[:8] == key.ljust(8)]
    if places and rng.random() < 0.85:
        cards[rng.choice(places)] = new
    else:
        cards.insert(rng.randint(1, len(cards)), new)
    return _rebuild(blob, span, cards)


def _descriptor_fields(layout: dict[str, int], cards: list[bytes]) -> list[tuple[int, int]]:
    """(offset in the row, word bytes) of every P/Q field, from the TFORMs."""
    out, at = [], 0
    width = {"L": 1, "B": 1, "I": 2, "J": 4, "K": 8, "A": 1, "E": 4, "D": 8, "C": 8, "M": 16}
    for n in range(1, layout.get("TFIELDS", 0) + 1):
        form = next((c for c in cards if c[:8] == f"TFORM{n}".encode().ljust(8)), b"")
        m = re.search(rb"'\s*(\d*)([A-Z])", form)
        if m is None:
            return out
        repeat, code = int(m[1] or 1), m[2].decode()
        if code in "PQ":
            out.append((at, 4 if code == "P" else 8))
            at += (8 if code == "P" else 16) * min(repeat, 1)
        elif code == "X":
            at += (repeat + 7) // 8
        else:
            at += width.get(code, 1) * repeat
    return out


def descriptor(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """A variable-length descriptor's count or offset set past the heap (or negative)."""
    tables = [t for t in _tables(blob, spans) if _descriptor_fields(t[1], _cards(blob, t[0]))]
    if not tables:
        return row_bytes(rng, blob, spans)
    span, layout = rng.choice(tables)
    at, word = rng.choice(_descriptor_fields(layout, _cards(blob, span)))
    row = rng.randrange(max(1, layout["NAXIS2"]))
    place = layout["DATA"] + row * layout["NAXIS1"] + at + rng.choice([0, word])
    heap = layout["PCOUNT"] - (layout["THEAP"] - layout["NAXIS1"] * layout["NAXIS2"])
    value = rng.choice(
        [heap, heap + 1, heap - 1, heap // 2, 2 * heap + 7, -1, -(2 ** (8 * word - 1)),
         2 ** (8 * word - 1) - 1, 2 ** (8 * word - 2), 0, 1, rng.randrange(1 << 16)]
    )  # fmt: skip
    raw = (value % (1 << (8 * word))).to_bytes(word, "big")
    if place < 0 or place + word > len(blob):
        return blob
    return blob[:place] + raw + blob[place + word :]


def heap_cut(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """The file cut inside a table's heap or rows, or the heap's end zeroed."""
    tables = _tables(blob, spans)
    if not tables:
        return mutate.truncate(rng, blob, spans)
    _, layout = rng.choice(tables)
    rows = layout["NAXIS1"] * layout["NAXIS2"]
    start = layout["DATA"] + layout["THEAP"]
    end = layout["DATA"] + rows + layout["PCOUNT"]
    at = rng.randint(min(start, end), max(start, end)) if rng.random() < 0.7 else (
        rng.randint(layout["DATA"], layout["DATA"] + max(rows, 1))
    )  # fmt: skip
    at = max(0, min(at, len(blob)))
    if rng.random() < 0.6:
        return blob[:at]
    stop = max(at, min(end, len(blob)))
    return blob[:at] + bytes(stop - at) + blob[stop:]


def _spray(rng: random.Random, blob: bytes, lo: int, hi: int) -> bytes:
    lo, hi = max(0, lo), min(len(blob), hi)  # the header's numbers may be anything
    if hi <= lo:
        return blob
    out = bytearray(blob)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(lo, hi)
        if rng.random() < 0.5:
            out[at] ^= 1 << rng.randrange(8)
        else:
            out[at] = rng.choice(b"\x00\xff\x7f\x80TF \x01")
    return bytes(out)


def row_bytes(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """Bytes flipped or replaced in a table's rows."""
    tables = _tables(blob, spans)
    if not tables:
        return mutate.flip_bits(rng, blob, spans)
    _, layout = rng.choice(tables)
    lo = layout["DATA"]
    return _spray(rng, blob, lo, min(len(blob), lo + layout["NAXIS1"] * layout["NAXIS2"]))


def tile_bytes(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """Bytes flipped or replaced in a table's heap (a ZTABLE's compressed cells)."""
    tables = _tables(blob, spans)
    if not tables:
        return mutate.flip_bits(rng, blob, spans)
    _, layout = rng.choice(tables)
    lo = layout["DATA"] + layout["THEAP"]
    hi = layout["DATA"] + layout["NAXIS1"] * layout["NAXIS2"] + layout["PCOUNT"]
    return _spray(rng, blob, lo, min(len(blob), hi))


#: every table mutator with its weight: the aimed card values dominate
TABLE_MUTATORS = (
    (table_card, 12),
    (descriptor, 4),
    (heap_cut, 2),
    (row_bytes, 3),
    (tile_bytes, 4),
    (mutate.edit_value, 2),
    (mutate.add_card, 1),
    (mutate.drop_card, 1),
    (mutate.duplicate_card, 1),
    (mutate.flip_bits, 1),
)


def mutated_table(seed: int, case: int) -> tuple[str, bytes, list[str]]:
    """Table case ``case`` of campaign ``seed``: the seed file's name, the bytes, the
    mutations (a random stream of its own, apart from the image cases')."""
    rng = random.Random(f"table {seed} {case}")
    pool = table_seeds()
    name, blob = pool[rng.randrange(len(pool))]
    funcs, weights = zip(*TABLE_MUTATORS, strict=True)
    applied = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        spans = headers(blob) or [(0, min(len(blob), BLOCK))]
        func = rng.choices(funcs, weights)[0]
        blob = func(rng, blob, spans)
        applied.append(func.__name__)
    return name, blob, applied
