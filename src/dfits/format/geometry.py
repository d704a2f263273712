"""Where an HDU is: the frozen records a layout scan produces.

The contract: an :class:`HDULayout` holds one HDU's kind, names, byte offsets, data size,
shape (numpy order), header and decode spec; a :class:`FileLayout` holds every HDU of a file.
All offsets are Python ints; nothing here reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dfits.errors import UnsupportedError
from dfits.format.cards import BLOCK_SIZE
from dfits.format.dtypes import DecodeSpec
from dfits.format.header import Header
from dfits.format.tiles import TileLayout

__all__ = ["MAX_RANK", "FileLayout", "HDULayout", "check_shape"]

#: numpy's limit on array dimensions (NPY_MAXDIMS); FITS allows NAXIS up to 999
MAX_RANK = 64
#: numpy's limit on an array's bytes, counted over its non-zero axes (NPY_MAX_INTP)
MAX_BYTES = 2**63 - 1


@dataclass(frozen=True)
class HDULayout:
    """Geometry and header of one HDU.

    Attributes
    ----------
    index : int
        Position in the file (0 = primary).
    kind : str
        ``primary``, ``image``, ``bintable``, ``table``, ``random_groups``,
        ``compressed_image`` (a BINTABLE with ``ZIMAGE = T``) or ``unknown``.
    xtension : str or None
        The XTENSION value (None for the primary HDU).
    name : str
        EXTNAME (``''`` if none; ``'PRIMARY'`` for a primary HDU without one, as astropy).
    ver : int
        EXTVER (1 if none).
    header_offset, data_offset : int
        Byte offsets of the header and of the data.
    data_size : int
        Bytes of data, unpadded: ``|BITPIX|/8 * GCOUNT * (PCOUNT + prod(NAXISn))``.
    bitpix : int
    shape : tuple of int
        NAXISn in numpy order (reversed); ``()`` when NAXIS = 0.
    header : Header
    decode : DecodeSpec or None
        For primary and image HDUs with NAXIS > 0, and compressed images (of their decoded
        values, native byte order).
    tiles : TileLayout or None
        For compressed images: the tiles, their codec and the table's columns.
    image_header : Header or None
        For compressed images: the image's header, rebuilt from the Z keywords (at open when
        the table has scaling cards, else on first use: read it through
        :func:`dfits.format.compressed.image_header_of`).
    """

    index: int
    kind: str
    xtension: str | None
    name: str
    ver: int
    header_offset: int
    data_offset: int
    data_size: int
    bitpix: int
    shape: tuple[int, ...]
    # Left out of ==, hash() and repr(): the other fields identify the HDU, and a header
    # (a mapping, thousands of characters long) is neither hashable nor readable in a repr.
    header: Header = field(compare=False, repr=False)
    decode: DecodeSpec | None = None
    tiles: TileLayout | None = None
    image_header: Header | None = field(default=None, compare=False, repr=False)

    @property
    def padded_size(self) -> int:
        """Data size rounded up to whole 2880-byte blocks."""
        return -(-self.data_size // BLOCK_SIZE) * BLOCK_SIZE

    @property
    def end(self) -> int:
        """Offset just after the padded data: where the next HDU starts."""
        return self.data_offset + self.padded_size

    @property
    def has_data(self) -> bool:
        """True when the HDU has at least one byte of data."""
        return self.data_size > 0


@dataclass(frozen=True)
class FileLayout:
    """Every HDU of a file, in order (``size`` None when the source did not know it).

    ``stopped``: why the scan stopped before the end of the file (a header that runs into
    bytes that cannot be cards, naming the HDU and the offset), or None. The HDUs before it
    are whole and readable; the one it names, and any after it, are not known.
    """

    filename: str
    size: int | None
    hdus: tuple[HDULayout, ...]
    stopped: str | None = None


def check_shape(shape: tuple[int, ...], itemsize: int, where: str) -> None:
    """Refuse data that no numpy array can describe.

    A header with NAXIS from 65 to 999, or with axes whose lengths multiply past numpy's
    byte limit, is legal FITS (an axis of length 0 makes the data empty, whatever the others
    say) and stays readable, but no array can hold its data (astropy cannot read it either),
    so asking for the data says why. numpy counts only the non-zero axes: ``(0, 2**62)`` of
    8-byte values is already too big for it.

    Examples
    --------
    >>> check_shape((1,) * 64, 1, "x.fits, HDU 0")
    >>> check_shape((1,) * 65, 1, "x.fits, HDU 0")
    Traceback (most recent call last):
    ...
    dfits.errors.UnsupportedError: x.fits, HDU 0: NAXIS = 65: numpy arrays have at most 64 axes
    >>> check_shape((0, 10**20), 1, "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dfits.errors.UnsupportedError: x: axes (0, 100000000000000000000) of 1-byte values exceed...
    """
    if len(shape) > MAX_RANK:
        raise UnsupportedError(
            f"{where}: NAXIS = {len(shape)}: numpy arrays have at most {MAX_RANK} axes"
        )
    nbytes = itemsize
    for n in shape:
        nbytes *= max(n, 1)
    if nbytes > MAX_BYTES:
        limit = "numpy's limit of 2**63 - 1 bytes"
        raise UnsupportedError(f"{where}: axes {shape} of {itemsize}-byte values exceed {limit}")
