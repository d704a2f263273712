"""BITPIX ↔ dtype and the rules that turn stored values into physical values.

The contract: :func:`parse_decode_spec` gives, for an image HDU, the stored dtype, the physical
dtype *exactly as* ``astropy.io.fits`` gives ``hdu.data`` (in native byte order), and the
BSCALE/BZERO/BLANK to apply. Kernels use the spec; nothing here touches data.

The stored *byte order* is a field of the spec, not an assumption: ``">"`` for values as FITS
stores them (big-endian), ``"="`` for values already in this machine's order (the integers a
tile codec decodes). It is kept apart from the declared BITPIX, as zarr keeps a codec's
endianness apart from the array's dtype.

astropy's rules, reproduced here:

* no BSCALE/BZERO/BLANK (or BSCALE = 1, BZERO = 0 and no BLANK): physical = stored type;
* BSCALE = 1 and BZERO = 2**(n-1) for BITPIX = n in {16, 32, 64}: unsigned ``uint<n>``
  (BLANK is ignored, as astropy does, because NaN cannot live in an integer array);
* BITPIX = 8 with BSCALE = 1 and BZERO = -128: signed ``int8`` (BLANK ignored likewise);
* otherwise integers scale to ``float32`` for BITPIX 8/16 and ``float64`` for 32/64, with BLANK
  → NaN; floating-point BITPIX keeps its own type and ignores BLANK.

A BLANK written as a float literal (``-32768.0``, as HiPS tiles do) is not an integer, so it is
ignored with a warning, scaled or not: the FITS standard makes BLANK an integer, and astropy
(8.0) ignores it likewise.

One deliberate difference: astropy skips ``BLANK = 0`` (it tests ``if self._blank:``); dfits
applies it like any other BLANK, as the FITS standard says.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dfits.errors import DataError, HeaderError

__all__ = [
    "BITPIX_TO_STORED",
    "UNDEFINED",
    "ByteOrder",
    "DecodeSpec",
    "Mode",
    "parse_bitpix",
    "parse_byteorder",
    "parse_decode_spec",
]

#: Stored (big-endian) dtype for each legal BITPIX value.
BITPIX_TO_STORED: dict[int, np.dtype] = {
    8: np.dtype(">u1"),
    16: np.dtype(">i2"),
    32: np.dtype(">i4"),
    64: np.dtype(">i8"),
    -32: np.dtype(">f4"),
    -64: np.dtype(">f8"),
}


class _Undefined:
    """A card that is present but holds no value (``BSCALE  =`` and nothing after it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __reduce__(self) -> str:
        return "UNDEFINED"


#: What :func:`~dfits.format.scaling.scaling_values` gives for a scaling card without a
#: value, so that it is told apart from an absent card (None).
UNDEFINED = _Undefined()

_UNSIGNED = {16: np.dtype("uint16"), 32: np.dtype("uint32"), 64: np.dtype("uint64")}

Mode = Literal["raw", "offset", "scaled"]

#: ``">"``: big-endian, as FITS stores values; ``"="``: this machine's order
ByteOrder = Literal[">", "="]

# numpy's spellings of the two orders; "<" is native only on a little-endian machine
_BYTEORDERS: dict[object, ByteOrder] = {
    ">": ">",
    "big": ">",
    "=": "=",
    "native": "=",
    "<" if sys.byteorder == "little" else ">": "=" if sys.byteorder == "little" else ">",
}


def parse_byteorder(value: object) -> ByteOrder:
    """Return ``">"`` (big-endian) or ``"="`` (native) for a stored byte order.

    numpy's spellings are accepted (``"big"``, ``"native"``, and ``"<"`` on a little-endian
    machine); anything else is a ``ValueError``.

    Examples
    --------
    >>> parse_byteorder(">"), parse_byteorder("native")
    ('>', '=')
    """
    try:
        return _BYTEORDERS[value]
    except (KeyError, TypeError):
        raise ValueError(
            f"stored byte order must be '>' (big-endian) or '=' (native), not {value!r}"
        ) from None


@dataclass(frozen=True)
class DecodeSpec:
    """How to turn stored values into physical ones.

    Attributes
    ----------
    bitpix : int
        The BITPIX of the data.
    physical : numpy.dtype
        Native dtype of the physical values, as astropy's ``hdu.data`` would have it.
    mode : {"raw", "offset", "scaled"}
        ``raw``: values are the stored ones; ``offset``: integer offset to an unsigned (or int8)
        type; ``scaled``: ``stored * bscale + bzero`` in floating point, BLANK → NaN.
    bscale, bzero : float
        Scale and offset (1.0 and 0.0 when absent).
    blank : int or None
        The stored integer that means "no value", when it applies (``scaled`` mode only).
    error : str or None
        Why physical values cannot be known (BSCALE = 0, BSCALE not a number, ...); data access
        raises it (:meth:`check`). Headers stay readable.
    byteorder : {">", "="}
        Byte order of the stored values: ``">"`` as FITS stores them, ``"="`` native (values
        a codec decoded). Kernels swap bytes only for the first; BLANK is the same integer
        either way.
    bad_card : str or None
        The keyword whose value is of the wrong type (undefined, a string, a logical): the
        error is then a :class:`~dfits.errors.HeaderError` naming it; None for an error of a
        number (BSCALE = 0, not finite), a :class:`~dfits.errors.DataError`.
    """

    bitpix: int
    physical: np.dtype
    mode: Mode = "raw"
    bscale: float = 1.0
    bzero: float = 0.0
    blank: int | None = None
    error: str | None = None
    byteorder: ByteOrder = ">"
    bad_card: str | None = None

    def __post_init__(self) -> None:
        # frozen: the normalised spelling goes in through object.__setattr__
        object.__setattr__(self, "byteorder", parse_byteorder(self.byteorder))

    @property
    def stored(self) -> np.dtype:
        """Stored dtype in the stored byte order (``>i2``, ``>f4``; ``=i2`` when native)."""
        return BITPIX_TO_STORED[self.bitpix].newbyteorder(self.byteorder)

    @property
    def itemsize(self) -> int:
        """Bytes per stored value."""
        return abs(self.bitpix) // 8

    @property
    def is_float(self) -> bool:
        """True when the stored values are IEEE floats (BITPIX < 0)."""
        return self.bitpix < 0

    @property
    def has_missing(self) -> bool:
        """True when some values may be missing (NaN or BLANK) in the physical array."""
        return self.is_float or self.blank is not None

    def check(self) -> None:
        """Raise if physical values cannot be computed: a
        :class:`~dfits.errors.HeaderError` for a scaling card of the wrong type, else a
        :class:`~dfits.errors.DataError`."""
        if self.error is not None:
            raise (HeaderError if self.bad_card else DataError)(self.error)


def parse_bitpix(value: object) -> np.dtype:
    """Return the stored dtype for ``BITPIX = value``; ``ValueError`` if it is illegal.

    Examples
    --------
    >>> parse_bitpix(-32)
    dtype('>f4')
    """
    if isinstance(value, bool) or not isinstance(value, int) or value not in BITPIX_TO_STORED:
        raise ValueError(f"BITPIX must be one of 8, 16, 32, 64, -32, -64, not {value!r}")
    return BITPIX_TO_STORED[value]


def _number(value: object) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    return None


def parse_decode_spec(
    bitpix: int,
    bscale: object = None,
    bzero: object = None,
    blank: object = None,
    *,
    where: str = "",
    byteorder: object = ">",
) -> tuple[DecodeSpec, list[str]]:
    """Work out the :class:`DecodeSpec` of an image from its header values.

    Parameters
    ----------
    bitpix : int
        A legal BITPIX (checked by the caller with :func:`parse_bitpix`).
    bscale, bzero, blank : object
        The header values, None when the keyword is absent, :data:`UNDEFINED` when its card
        has no value. Anything may arrive here (a string, a bool, ...): bad values become a
        deferred ``error`` or a warning, never an exception, so that the header stays
        readable. A BSCALE or BZERO that is not a number (undefined, a string, empty or not,
        a logical) is a deferred :class:`~dfits.errors.HeaderError` naming the card; BSCALE
        = 0 or a non-finite number a deferred :class:`~dfits.errors.DataError`.
    where : str
        Message prefix naming the file and HDU.
    byteorder : {">", "="}
        Byte order of the values the spec will decode (see :func:`parse_byteorder`): ``">"``
        for data as the file stores it, ``"="`` for values a codec decoded natively.

    Returns
    -------
    spec : DecodeSpec
    warnings : list of str
        Messages for recoverable oddities (BLANK on float data, BLANK not an integer).

    Examples
    --------
    >>> parse_decode_spec(16, 1, 32768)[0].physical
    dtype('uint16')
    >>> parse_decode_spec(16, 0.5, 10, -1)[0].physical
    dtype('float32')
    >>> parse_decode_spec(16, byteorder="=")[0].stored.isnative
    True
    """
    parse_bitpix(bitpix)
    order = parse_byteorder(byteorder)
    warnings: list[str] = []
    prefix = f"{where}: " if where else ""
    scale, zero, error, card = _parse_scaling(bscale, bzero, prefix)
    blank_value = None
    if blank is not None:
        blank_value = _parse_blank(blank, bitpix, prefix, warnings)
    if error is not None:
        native = BITPIX_TO_STORED[bitpix].newbyteorder("=")
        spec = DecodeSpec(bitpix, native, "raw", 1.0, 0.0, None, error, order, card)
        return spec, warnings
    # an integer BLANK on integer data makes the values floating point (room for NaN) even
    # when it is outside the stored type's range and so matches nothing, as astropy's data
    floats = bitpix > 0 and isinstance(blank, int) and not isinstance(blank, bool)
    return _classify(bitpix, scale, zero, blank_value, order, floats), warnings


def _not_a_number(key: str, value: object, prefix: str) -> str:
    if value is UNDEFINED:
        return f"{prefix}{key} has no value (nothing follows '='): {key} must be a number"
    return f"{prefix}{key} = {value!r} is not a number"


def _parse_scaling(bscale: object, bzero: object, prefix: str):
    """``(scale, zero, error, card)``: the numbers to apply, or why physical values are
    unknowable (``card``: the keyword whose value is not a number at all)."""
    error = card = None
    scale = 1.0 if bscale is None else _number(bscale)
    if scale is None:
        error, card = _not_a_number("BSCALE", bscale, prefix), "BSCALE"
        scale = 1.0
    elif scale == 0 or not math.isfinite(scale):
        error = f"{prefix}BSCALE = {bscale!r}: physical values cannot be computed"
    zero = 0.0 if bzero is None else _number(bzero)
    if zero is None:
        if error is None:
            error, card = _not_a_number("BZERO", bzero, prefix), "BZERO"
        zero = 0.0
    elif not math.isfinite(zero):
        error = error or f"{prefix}BZERO = {bzero!r}: physical values cannot be computed"
    return scale, zero, error, card


def _parse_blank(blank: object, bitpix: int, prefix: str, warnings: list[str]) -> int | None:
    """The BLANK integer that applies, or None (with a warning saying why not)."""
    blank_value: int | None = None
    if blank is UNDEFINED:
        warnings.append(f"{prefix}BLANK has no value (nothing follows '='); ignored")
    elif bitpix < 0:
        warnings.append(f"{prefix}BLANK = {blank!r} ignored on floating-point data")
    elif isinstance(blank, int) and not isinstance(blank, bool):
        blank_value = blank
    else:
        warnings.append(f"{prefix}BLANK = {blank!r} is not an integer; ignored")
    if blank_value is not None:
        info = np.iinfo(BITPIX_TO_STORED[bitpix])
        if not info.min <= blank_value <= info.max:
            warnings.append(
                f"{prefix}BLANK = {blank_value!r} outside the range of BITPIX = {bitpix}: "
                "matches no value (the values are still floating point, as in astropy)"
            )
            blank_value = None
    return blank_value


def _classify(
    bitpix: int,
    scale: float,
    zero: float,
    blank: int | None,
    order: ByteOrder,
    floats: bool = False,
) -> DecodeSpec:
    """The spec of valid scaling: raw, an offset integer type, or scaled floating point.

    ``floats``: the header has an integer BLANK, which makes unscaled integers floating point
    even where ``blank`` is None (out of the stored type's range, it matches no value).
    """
    stored = BITPIX_TO_STORED[bitpix]
    if bitpix > 0 and scale == 1:
        if bitpix == 8 and zero == -128:
            return DecodeSpec(bitpix, np.dtype("int8"), "offset", 1.0, -128.0, byteorder=order)
        if bitpix in _UNSIGNED and zero == 2 ** (bitpix - 1):
            unsigned = _UNSIGNED[bitpix]
            return DecodeSpec(bitpix, unsigned, "offset", 1.0, float(zero), byteorder=order)
    if scale == 1 and zero == 0 and ((blank is None and not floats) or bitpix < 0):
        return DecodeSpec(bitpix, stored.newbyteorder("="), "raw", byteorder=order)
    if bitpix < 0:
        physical = stored.newbyteorder("=")
    else:
        physical = np.dtype("float64") if bitpix > 16 else np.dtype("float32")
    return DecodeSpec(bitpix, physical, "scaled", float(scale), float(zero), blank, byteorder=order)
