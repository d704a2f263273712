"""Exceptions and warnings raised by dfits.

Every dfits error derives from :class:`DfitsError` and, where one fits, from the builtin
exception a caller would naturally catch (``ValueError``, ``EOFError``, ...). Messages name
the file, the HDU (index and EXTNAME), the keyword or byte range, and the offending value;
:func:`where` builds that prefix so every layer formats it the same way.
"""

from __future__ import annotations

__all__ = [
    "DataError",
    "DfitsError",
    "DfitsWarning",
    "ExpressionError",
    "FileChangedError",
    "HDUNotFoundError",
    "HeaderError",
    "MissingFileError",
    "NotFITSError",
    "OptionError",
    "OutputExistsError",
    "RangeIgnoredError",
    "RemoteDownloadWarning",
    "RemoteReadError",
    "SpectralError",
    "TruncatedFileError",
    "UnsupportedError",
    "where",
]


def where(filename: str | None, hdu: int | None = None, extname: str | None = None) -> str:
    """Return the ``"file 'x.fits', HDU 1 ('SCI')"`` prefix used in every message.

    Examples
    --------
    >>> where("cube.fits", 1, "SCI")
    "file 'cube.fits', HDU 1 ('SCI')"
    >>> where("cube.fits")
    "file 'cube.fits'"
    """
    text = f"file {filename!r}" if filename is not None else "<unnamed buffer>"
    if hdu is not None:
        text += f", HDU {hdu}"
        if extname:
            text += f" ({extname!r})"
    return text


class DfitsError(Exception):
    """Root of every error dfits raises."""


class DfitsWarning(UserWarning):
    """Root of every warning dfits emits (recoverable oddities in a file)."""


class HeaderError(DfitsError, ValueError):
    """A header is malformed: missing, duplicated or illegal mandatory keywords, bad cards."""


class NotFITSError(HeaderError):
    """The bytes are not a FITS file at all (empty, text, no SIMPLE card first)."""


class TruncatedFileError(DfitsError, EOFError):
    """The file holds fewer bytes than its headers promise."""


class UnsupportedError(DfitsError, NotImplementedError):
    """A valid FITS construct that dfits does not (yet) read, e.g. an unknown XTENSION's data."""


class DataError(DfitsError, ValueError):
    """The data of an HDU cannot be turned into physical values (e.g. ``BSCALE = 0``)."""


class ExpressionError(DfitsError, ValueError):
    """A row filter (``where=``) that cannot be read: bad syntax, an unknown column, a
    construct outside the filter language, or values that are not True/False per row."""


class OptionError(DfitsError, ValueError):
    """An option of a dfits call that cannot be used: its name and the bad value are named
    (e.g. ``compression_level=12`` for GZIP_1 tiles)."""


class SpectralError(DfitsError, ValueError):
    """No usable spectral axis, a unit that is not spectral, or a conversion wcslib refuses."""


class HDUNotFoundError(DfitsError, KeyError, IndexError):
    """No HDU matches the index or EXTNAME asked for."""

    def __str__(self) -> str:
        # KeyError quotes its argument; keep the message readable.
        return str(self.args[0]) if self.args else ""


class FileChangedError(DfitsError, OSError):
    """The file changed (size, mtime or ETag) between ``dfits.open`` and a chunk read."""


class MissingFileError(DfitsError, FileNotFoundError):
    """The path or URL names no file (``except FileNotFoundError`` catches it too)."""


class RemoteReadError(DfitsError, OSError):
    """A remote byte-range read failed or returned something other than the bytes asked for."""


class RangeIgnoredError(RemoteReadError):
    """The server answered a byte-range request with the whole file (it ignores ``Range``)."""


class RemoteDownloadWarning(DfitsWarning):
    """A remote file was downloaded whole, because its server ignores ``Range`` requests."""


class OutputExistsError(DfitsError, FileExistsError):
    """A write would replace an existing file and ``overwrite`` was not asked for."""


class FileBusyError(DfitsError, BlockingIOError):
    """Another process holds the file (an append under way) for longer than allowed."""
