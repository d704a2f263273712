"""What an image HDU that dfits writes holds: how values are stored, and its header.

The contract: :func:`parse_storage` maps a native dtype to a BITPIX and the top-bit flip that
stores unsigned (and ``int8``) integers with ``BZERO`` offsets, as astropy writes them; a dtype
FITS cannot store raises :class:`~dfits.errors.UnsupportedError` before anything is written.
:func:`image_header` builds the header block: the mandatory cards from the data, then the
caller's cards, then ``DATASUM``/``CHECKSUM`` placeholders of fixed size (so the block can be
rewritten in place once the sums are known). Caller cards that contradict the data (BITPIX,
NAXIS, NAXISn) raise :class:`~dfits.errors.HeaderError`; cards that the writer owns (the
mandatory ones, scaling, checksums) are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import HeaderError, UnsupportedError
from dfits.format.cards import BLOCK_SIZE, END_CARD, Value, format_card
from dfits.format.checksum import CHECKSUM_ZERO, checksum_card
from dfits.format.longcards import format_cards

__all__ = [
    "Storage",
    "UserCard",
    "image_header",
    "kept_cards",
    "parse_quantized",
    "parse_storage",
    "user_cards",
]

#: A caller's card: keyword, value, and its card image(s) as they will be written.
UserCard = tuple[str, Value, bytes]

# Keywords the writer sets itself: a caller's copies are dropped (BSCALE/BZERO/BLANK would
# rescale the values written; CHECKSUM/DATASUM are recomputed).
_OWNED = frozenset(
    {"SIMPLE", "XTENSION", "EXTEND", "PCOUNT", "GCOUNT", "GROUPS", "END", "BSCALE", "BZERO",
     "BLANK", "CHECKSUM", "DATASUM", "CONTINUE"}
)  # fmt: skip


@dataclass(frozen=True)
class Storage:
    """How native values of one dtype are stored.

    Attributes
    ----------
    bitpix : int
    flip : int
        XORed into each value before the byte swap (the top bit for offset-stored integers).
    bzero : int or float or None
        The BZERO card that undoes ``flip`` (or of quantised floats).
    native : numpy.dtype
        The native dtype values are cast to first (float16 → float32, bool refused).
    bscale : float or None
        Quantised floats only: stored as ``rint((x - bzero) / bscale)``, NaN as ``blank``.
    blank : int or None
        The stored value of NaN (quantised floats only).
    """

    bitpix: int
    flip: int
    bzero: int | float | None
    native: np.dtype
    bscale: float | None = None
    blank: int | None = None

    @property
    def limits(self) -> tuple[int, int]:
        """The stored range of finite quantised values: the type's, less BLANK at an end."""
        bits = self.bitpix
        lo, hi = (0, 255) if bits == 8 else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return lo + (self.blank == lo), hi - (self.blank == hi)


_SIGNED = {1: 8, 2: 16, 4: 32, 8: 64}


def parse_storage(dtype: Any, what: str) -> Storage:
    """The storage of ``dtype``; ``what`` names the file and HDU in errors.

    Examples
    --------
    >>> parse_storage("uint16", "x")
    Storage(bitpix=16, flip=32768, bzero=32768, native=dtype('uint16'), bscale=None, blank=None)
    >>> parse_storage(">f8", "x").bitpix
    -64
    """
    dt = np.dtype(dtype)
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        native = np.dtype("float32" if dt.itemsize <= 4 else "float64")
        return Storage(-8 * native.itemsize, 0, None, native)
    if dt.kind == "u" and dt.itemsize == 1:
        return Storage(8, 0, None, np.dtype("uint8"))
    if dt.kind == "i" and dt.itemsize == 1:
        return Storage(8, 0x80, -128, np.dtype("int8"))
    if dt.kind == "i":
        return Storage(_SIGNED[dt.itemsize], 0, None, dt.newbyteorder("="))
    if dt.kind == "u":
        top = 1 << (8 * dt.itemsize - 1)
        return Storage(_SIGNED[dt.itemsize], top, top, dt.newbyteorder("="))
    hint = " (cast it to uint8 first)" if dt.kind == "b" else ""
    raise UnsupportedError(f"{what}: FITS images cannot store dtype {dt}{hint}")


def parse_quantized(
    dtype: Any, what: str, bitpix: int, bscale: float = 1.0, bzero: float = 0.0,
    blank: int | None = None,
) -> Storage:  # fmt: skip
    """The storage of floats quantised to BITPIX ``bitpix`` integers.

    ``blank`` defaults to the stored type's minimum (-32768 for 16), 255 for BITPIX 8.

    Examples
    --------
    >>> s = parse_quantized("float32", "x", 16, 0.01, 100.0)
    >>> s.blank, s.limits
    (-32768, (-32767, 32767))
    """
    dt = np.dtype(dtype)
    if dt.kind != "f" or dt.itemsize not in (2, 4, 8):
        raise UnsupportedError(f"{what}: BSCALE/BZERO quantisation takes floats, not {dt}")
    if bitpix not in _SIGNED.values():
        raise ValueError(f"{what}: cannot quantise to BITPIX {bitpix!r}; use 8, 16, 32 or 64")
    bscale, bzero = float(bscale), float(bzero)
    if not (np.isfinite(bscale) and bscale != 0 and np.isfinite(bzero)):
        raise ValueError(f"{what}: BSCALE {bscale!r} and BZERO {bzero!r} must be finite, BSCALE≠0")
    lo, hi = (0, 255) if bitpix == 8 else (-(1 << (bitpix - 1)), (1 << (bitpix - 1)) - 1)
    if blank is None:
        # BITPIX 8: the top, as astropy ignores BLANK = 0 (a falsy test); else the minimum
        blank = hi if bitpix == 8 else lo
    if isinstance(blank, bool) or not isinstance(blank, int | np.integer) or not lo <= blank <= hi:
        raise ValueError(f"{what}: BLANK {blank!r} is not an integer of BITPIX {bitpix}")
    native = np.dtype("float32" if dt.itemsize <= 4 else "float64")
    return Storage(bitpix, 0, bzero, native, bscale, int(blank))


def user_cards(header: Any) -> list[UserCard]:
    """A caller's header as cards: a dfits or astropy Header (card images kept as they are),
    a mapping ``keyword -> value`` or ``-> (value, comment)``, or ``(keyword, value[,
    comment])`` tuples. Long strings and text take several cards.
    """
    if header is None:
        return []
    cards = getattr(header, "cards", None)
    if cards is not None and not callable(cards):
        out = []
        for card in cards:
            image = str(card.image)
            out.append((str(card.keyword).upper(), card.value, image.encode("latin-1")))
        return out
    items: Iterable[Any] = header.items() if isinstance(header, Mapping) else header
    out = []
    for item in items:
        key, rest = item[0], item[1:]
        if len(rest) == 1 and isinstance(rest[0], tuple):
            rest = rest[0]
        value, comment = (rest[0] if rest else None), (str(rest[1]) if len(rest) > 1 else "")
        out.append((str(key).upper(), value, format_cards(str(key), value, comment)))
    return out


def _check(key: str, value: Value, want: dict[str, int], scaled_float: bool, what: str) -> bool:
    """True to keep a caller's card; raise when a mandatory one contradicts the data."""
    if key == "BITPIX" and scaled_float and value in (8, 16, 32, 64):
        return False  # the physical values of a scaled-integer header: written as floats
    if key in want or (key.startswith("NAXIS") and key[5:].isdigit()):
        if key not in want or value != want[key] or isinstance(value, bool):
            expected = want.get(key, "absent")
            raise HeaderError(
                f"{what}: header card {key} = {value!r} contradicts the data ({expected})"
            )
        return False
    if key in ("PCOUNT", "GCOUNT") and value != (0 if key == "PCOUNT" else 1):
        raise HeaderError(f"{what}: header card {key} = {value!r} contradicts an image HDU")
    return key not in _OWNED


def kept_cards(
    cards: list[UserCard], want: dict[str, int], bitpix: int, what: str
) -> list[UserCard]:
    """The caller's cards to write after the mandatory ones ``want`` of data of BITPIX
    ``bitpix``; raises :class:`~dfits.errors.HeaderError` for one that contradicts them."""
    keys = {c[0] for c in cards}
    scaled_float = bitpix < 0 and bool(keys & {"BSCALE", "BZERO"})
    return [c for c in cards if _check(c[0], c[1], want, scaled_float, what)]


def image_header(
    shape: tuple[int, ...],
    storage: Storage,
    *,
    primary: bool,
    cards: list[UserCard] = (),  # type: ignore[assignment]
    extname: str | None = None,
    extend: bool = False,
    checksum: bool = True,
    what: str = "",
) -> bytes:
    """The header block of an image HDU (padded to 2880 bytes).

    Examples
    --------
    >>> from dfits.format.header import Header
    >>> h = Header(image_header((2, 3), parse_storage("int16", "x"), primary=True))
    >>> h["NAXIS1"], h["NAXIS2"], h["CHECKSUM"]
    (3, 2, '0000000000000000')
    """
    want = {"BITPIX": storage.bitpix, "NAXIS": len(shape)}
    want |= {f"NAXIS{i + 1}": n for i, n in enumerate(reversed(shape))}
    head = [("SIMPLE", True)] if primary else [("XTENSION", "IMAGE")]
    head += list(want.items())
    head += [("EXTEND", True)] if primary and extend else []
    head += [] if primary else [("PCOUNT", 0), ("GCOUNT", 1)]
    if storage.bscale is not None:
        head += [("BSCALE", storage.bscale), ("BZERO", storage.bzero), ("BLANK", storage.blank)]
    elif storage.bzero is not None:
        head += [("BSCALE", 1), ("BZERO", storage.bzero)]
    kept = kept_cards(cards, want, storage.bitpix, what)
    if extname is not None:
        kept = [c for c in kept if c[0] != "EXTNAME"]
        head += [("EXTNAME", extname)]
    raw = b"".join(format_card(*c) for c in head) + b"".join(c[2] for c in kept)
    if checksum:
        raw += checksum_card("DATASUM", "0", "data unit checksum")
        raw += checksum_card("CHECKSUM", CHECKSUM_ZERO, "HDU checksum")
    raw += END_CARD
    return raw + b" " * (-len(raw) % BLOCK_SIZE)
