"""Seeded mutations of FITS bytes: what a damaged, hostile or merely odd file looks like.

:func:`mutated(seed, case)` is a pure function of its two integers: the same case is the same
bytes on every machine, so a failure is reproduced from ``(seed, case)`` alone and a campaign
can be split into shards with ``--start``. Mutations aim at the headers and the first data
block (where parsers go wrong): byte flips and replacements, card edits (extreme and malformed
values, mandatory cards removed, duplicated or reordered, CONTINUE and HIERARCH oddities, the
END card removed, many-axis images), truncation, junk appended and blocks swapped.

Two profiles (:data:`PROFILES`): ``default``, the mutators above, and ``extended``, which adds
mutators aimed on purpose at what issue 51 found: every scaling and Z keyword (BSCALE, BZERO,
BLANK, ZSCALE, ZZERO, ZBLANK, ZQUANTIZ, ZDITHER0, TSCALn, TZEROn, TNULLn) given a value of the
wrong type (none at all, an empty or blank string, text, a number as text, a logical); a
compressed image's ZSCALE/ZZERO/ZBLANK column given a type that holds no number (logical,
characters, bits, complex, a descriptor); and an END card broken in place (``END=``) so that
the header runs on into the data, sometimes with two blocks swapped as well. The default
profile's cases are unchanged by the extended one (same random draws).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from tests.fuzz.seeds import extended_seeds, seeds

__all__ = ["EXTENDED", "MUTATORS", "PROFILES", "headers", "mutated"]

CARD = 80
BLOCK = 2880

_VALUES = [
    b"0", b"-1", b"1", b"2", b"3", b"7", b"8", b"-8", b"16", b"-32", b"-64", b"64", b"128",
    b"255", b"256", b"-128", b"32768", b"-32768", b"65535", b"999", b"1000", b"2147483647",
    b"2147483648", b"-2147483649", b"4294967296", b"9223372036854775807",
    b"9223372036854775808", b"-9223372036854775809", b"99999999999999999999999999",
    b"1E308", b"-1E308", b"1E309", b"1E-320", b"NaN", b"INF", b"-0", b"+5", b"1.5", b"-0.0",
    b"1.0", b"0.5", b"1D2", b"T", b"F", b"''", b"'abc'", b"'1'", b"'  '", b"(1, 2)",
    b"(1.0, -1.0)", b"0x10", b"1 2", b"", b"=", b"/", b"'unterminated", b"1_000",
]  # fmt: skip
_KEYS = [
    b"SIMPLE", b"BITPIX", b"NAXIS", b"NAXIS1", b"NAXIS2", b"NAXIS3", b"PCOUNT", b"GCOUNT",
    b"XTENSION", b"EXTNAME", b"EXTVER", b"BSCALE", b"BZERO", b"BLANK", b"GROUPS", b"ZIMAGE",
    b"ZBITPIX", b"ZNAXIS", b"ZNAXIS1", b"ZTILE1", b"ZCMPTYPE", b"TFIELDS", b"TFORM1",
    b"TTYPE1", b"TDIM1", b"THEAP", b"TSCAL1", b"TZERO1", b"TNULL1", b"END",
]  # fmt: skip
_INTERESTING = b"\x00\xff\x7f\x80 '=/\t\n\xe9&TF0123456789-+.E"


def headers(blob: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of each header's cards (END excluded), found the simple way."""
    spans, pos = [], 0
    while pos + CARD <= len(blob) and len(spans) < 64:
        end = -1
        for at in range(pos, min(len(blob), pos + 200 * BLOCK) - CARD + 1, CARD):
            if blob[at : at + 8] == b"END     ":
                end = at
                break
        if end < 0:
            spans.append((pos, min(len(blob), pos + BLOCK) // CARD * CARD))
            break
        spans.append((pos, end))
        data = pos + -(-(end + CARD - pos) // BLOCK) * BLOCK
        size = _data_size(blob[pos:end])
        pos = data + -(-size // BLOCK) * BLOCK
        if size < 0 or blob[pos : pos + 8] != b"XTENSION":
            break
    return spans


def _data_size(cards: bytes) -> int:
    found = {}
    for i in range(0, len(cards), CARD):
        m = re.match(rb"([A-Z0-9]+) *= *([-+]?\d+)", cards[i : i + CARD])
        if m:
            found.setdefault(m[1].decode(), int(m[2]))
    naxis = found.get("NAXIS", 0)
    if not 0 < naxis <= 999:
        return 0
    n = 1
    for i in range(1, naxis + 1):
        n *= max(0, found.get(f"NAXIS{i}", 0))
    bits = abs(found.get("BITPIX", 8)) // 8
    return bits * found.get("GCOUNT", 1) * (found.get("PCOUNT", 0) + n)


def _card(key: bytes, value: bytes) -> bytes:
    return (key.ljust(8) + b"= " + value.rjust(20)).ljust(CARD)[:CARD]


def _cards(blob: bytes, span: tuple[int, int]) -> list[bytes]:
    start, end = span
    return [blob[i : i + CARD] for i in range(start, end, CARD)]


def _rebuild(blob: bytes, span: tuple[int, int], cards: list[bytes], end: bool = True) -> bytes:
    """Replace the header at ``span`` with ``cards`` (END and blank padding added)."""
    start, stop = span
    old_end = stop + CARD if blob[stop : stop + 8] == b"END     " else stop
    old_stop = start + -(-(old_end - start) // BLOCK) * BLOCK
    body = b"".join(cards) + (b"END".ljust(CARD) if end else b"")
    body += b" " * (-len(body) % BLOCK)
    return blob[:start] + body + blob[old_stop:]


# -- mutators: (rng, blob, spans) -> blob ------------------------------------------------------
def flip_bits(rng: random.Random, blob: bytes, spans: list) -> bytes:
    out = bytearray(blob)
    limit = min(len(out), spans[-1][1] + BLOCK + CARD)
    if not limit:
        return blob  # an earlier mutation truncated the file to nothing
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(limit)
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def replace_bytes(rng: random.Random, blob: bytes, spans: list) -> bytes:
    out = bytearray(blob)
    limit = min(len(out), spans[-1][1] + BLOCK + CARD)
    if not limit:
        return blob  # an earlier mutation truncated the file to nothing
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(limit)
        n = rng.randint(1, 8)
        out[at : at + n] = bytes(rng.choice(_INTERESTING) for _ in range(n))
    return bytes(out[: len(blob)])


def edit_value(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    cards = _cards(blob, span)
    if not cards:
        return blob
    i = rng.randrange(min(len(cards), 12) if rng.random() < 0.7 else len(cards))
    cards[i] = _card(cards[i][:8].rstrip(), rng.choice(_VALUES))
    return _rebuild(blob, span, cards)


def add_card(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    cards = _cards(blob, span)
    new = _card(rng.choice(_KEYS), rng.choice(_VALUES))
    cards.insert(rng.randint(0, len(cards)), new)
    return _rebuild(blob, span, cards)


def drop_card(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    cards = _cards(blob, span)
    if cards:
        del cards[rng.randrange(min(len(cards), 10))]
    return _rebuild(blob, span, cards)


def duplicate_card(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    cards = _cards(blob, span)
    if cards:
        i = rng.randrange(len(cards))
        cards.insert(rng.randint(0, len(cards)), cards[i])
    return _rebuild(blob, span, cards)


def swap_cards(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    cards = _cards(blob, span)
    if len(cards) > 1:
        i, j = rng.randrange(len(cards)), rng.randrange(len(cards))
        cards[i], cards[j] = cards[j], cards[i]
    return _rebuild(blob, span, cards)


def remove_end(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    return _rebuild(blob, span, _cards(blob, span), end=False)


def long_strings(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = rng.choice(spans)
    cards = _cards(blob, span)
    odd = rng.choice(
        [
            [b"LONGSTR = 'abc&'", b"CONTINUE  'def&'", b"CONTINUE  'ghi'"],
            [b"CONTINUE  'orphan'"],
            [b"LONGSTR = 'abc&'"] + [b"CONTINUE  '" + b"x" * 66 + b"&'"] * rng.randint(1, 40),
            [b"LONGSTR = 'abc&'", b"CONTINUE  123"],
            [b"HIERARCH ESO DET CHIP = 5"],
            [b"HIERARCH " + b"A " * 40],
            [b"HIERARCH NAXIS = 3"],
            [b"HIERARCH BSCALE = 2.0"],
            [b"naxis1  = 5"],
            [b"BLANK   = 1.5E2"],
            [b"BSCALE  = 'abc'"],
            [b"COMMENT " + bytes(range(128, 200))],
        ]
    )
    at = rng.randint(0, len(cards))
    cards[at:at] = [c.ljust(CARD)[:CARD] for c in odd]
    return _rebuild(blob, span, cards)


def many_axes(rng: random.Random, blob: bytes, spans: list) -> bytes:
    span = spans[0]
    cards = [c for c in _cards(blob, span) if not re.match(rb"NAXIS\d", c)]
    at = next((i for i, c in enumerate(cards) if c.startswith(b"NAXIS ")), None)
    if at is None:
        return blob
    n = rng.choice([3, 33, 64, 65, 66, 100, 999, 1000])
    length = rng.choice([b"1", b"1", b"2", b"0"])
    cards[at] = _card(b"NAXIS", str(n).encode())
    cards[at + 1 : at + 1] = [_card(f"NAXIS{k}".encode(), length) for k in range(1, n + 1)]
    return _rebuild(blob, span, cards)


def truncate(rng: random.Random, blob: bytes, spans: list) -> bytes:
    points = [s for span in spans for s in span] + [len(blob) - 1, len(blob) - BLOCK]
    at = rng.choice(points) + rng.choice([-1, 0, 1, CARD, rng.randrange(BLOCK)])
    return blob[: max(0, min(at, len(blob)))]


def append_junk(rng: random.Random, blob: bytes, spans: list) -> bytes:
    junk = rng.choice(
        [
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 3000))),
            bytes(rng.choice([1, 2880, 2881])),
            b" " * rng.choice([80, 2880]),
            b"XTENSION= 'IMAGE   '".ljust(80),
            _card(b"XTENSION", b"'IMAGE   '") + _card(b"BITPIX", b"16") + b"END".ljust(80),
            b"SIMPLE  =                    T".ljust(2880),
        ]
    )
    return blob + junk


def swap_blocks(rng: random.Random, blob: bytes, spans: list) -> bytes:
    n = len(blob) // BLOCK
    if n < 2:
        return blob
    i, j = rng.randrange(n), rng.randrange(n)
    blocks = [blob[k * BLOCK : (k + 1) * BLOCK] for k in range(n)]
    blocks[i], blocks[j] = blocks[j], blocks[i]
    return b"".join(blocks) + blob[n * BLOCK :]


# -- the extended profile: values of the wrong type, END broken into data (issue 51) ----------
#: every keyword that scales values or says how tiles are quantised (n: a column number)
SCALING_KEYS = (
    "BSCALE", "BZERO", "BLANK", "ZSCALE", "ZZERO", "ZBLANK", "ZQUANTIZ", "ZDITHER0", "TSCAL{n}",
    "TZERO{n}", "TNULL{n}",
)  # fmt: skip
#: value fields of the wrong type: none at all, empty/blank strings, text, numbers as text,
#: logicals
WRONG_VALUES = (b"", b"''", b"'  '", b"'abc'", b"'1.5'", b"'-32768'", b"T", b"F")
#: TFORMs of a ZSCALE/ZZERO/ZBLANK column that hold no number (and two that hold floats,
#: which ZBLANK must not be)
WRONG_FORMS = (b"'1L'", b"'1A'", b"'8A'", b"'1X'", b"'1C'", b"'1M'", b"'1PD(1)'", b"'1E'", b"'1D'")


def _wrong_card(key: bytes, value: bytes) -> bytes:
    """A card whose value field is exactly ``value`` (nothing after ``=`` when empty)."""
    if not value:
        return key.ljust(8)[:8] + b"="
    return _card(key, value)


def wrong_type_scaling(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """A scaling or Z keyword with a value of the wrong type: in place of its card where the
    header has one (so that it is the card that applies), else inserted."""
    span = rng.choice(spans)
    cards = _cards(blob, span)
    key = rng.choice(SCALING_KEYS).format(n=rng.randint(1, 3)).encode()
    new = _wrong_card(key, rng.choice(WRONG_VALUES)).ljust(CARD)
    places = [i for i, c in enumerate(cards) if c[:8] == key.ljust(8)]
    if places:
        cards[rng.choice(places)] = new
    else:
        cards.insert(rng.randint(0, len(cards)), new)
    return _rebuild(blob, span, cards)


def wrong_type_cell(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """A compressed image's ZSCALE, ZZERO or ZBLANK column made of cells that hold no number
    (its TFORMn changed); other files get a wrong-typed scaling keyword instead."""
    for span in rng.sample(spans, len(spans)):
        cards = _cards(blob, span)
        named = [
            c[5:8].strip()
            for c in cards
            if c[:5] == b"TTYPE" and c[10:].split(b"/")[0].strip(b" '") in _QUANTISATION
        ]
        if named:
            n = rng.choice(named)
            at = [i for i, c in enumerate(cards) if c[:8] == b"TFORM" + n.ljust(3)]
            if at:
                cards[at[0]] = _card(b"TFORM" + n, rng.choice(WRONG_FORMS))
                return _rebuild(blob, span, cards)
    return wrong_type_scaling(rng, blob, spans)


_QUANTISATION = (b"ZSCALE", b"ZZERO", b"ZBLANK")


def end_into_data(rng: random.Random, blob: bytes, spans: list) -> bytes:
    """An END card broken in place (``END=``, as a fuzzed byte makes it), so that the header
    runs on into the data blocks after it; sometimes two blocks swapped as well."""
    ends = [end for _, end in spans if blob[end : end + CARD] == b"END".ljust(CARD)]
    if not ends:
        return blob
    at = rng.choice(ends)
    broken = rng.choice([b"END=    ", b"END=  1 ", b"ENDX    ", b"END \x00   ", b"        "])
    out = blob[:at] + broken[:8] + blob[at + 8 :]
    return swap_blocks(rng, out, spans) if rng.random() < 0.3 else out


Mutator = Callable[[random.Random, bytes, list], bytes]
#: every mutator with its weight: card edits dominate, they reach the most code
MUTATORS: tuple[tuple[Mutator, int], ...] = (
    (flip_bits, 3),
    (replace_bytes, 3),
    (edit_value, 8),
    (add_card, 5),
    (drop_card, 3),
    (duplicate_card, 3),
    (swap_cards, 2),
    (remove_end, 1),
    (long_strings, 2),
    (many_axes, 1),
    (truncate, 2),
    (append_junk, 2),
    (swap_blocks, 1),
)


#: the extended profile's additions: often enough that a few thousand cases try each kind
EXTENDED: tuple[tuple[Mutator, int], ...] = (
    (wrong_type_scaling, 10),
    (wrong_type_cell, 4),
    (end_into_data, 4),
)
#: the mutator tables a campaign may draw from (``./run fuzz --profile NAME``)
PROFILES = {"default": MUTATORS, "extended": MUTATORS + EXTENDED}


def mutated(seed: int, case: int, profile: str = "default") -> tuple[str, bytes, list[str]]:
    """Case ``case`` of campaign ``seed`` in ``profile``: the seed file's name, the bytes,
    the mutations."""
    rng = random.Random(seed * 1_000_003 + case)
    pool = seeds() if profile == "default" else extended_seeds()
    name, blob = pool[rng.randrange(len(pool))]
    funcs, weights = zip(*PROFILES[profile], strict=True)
    applied = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        spans = headers(blob) or [(0, min(len(blob), BLOCK))]
        func = rng.choices(funcs, weights)[0]
        blob = func(rng, blob, spans)
        applied.append(func.__name__)
    return name, blob, applied
