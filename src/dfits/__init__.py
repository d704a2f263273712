"""dfits: huge FITS files as lazy Dask arrays, reduced by Numba kernels that swap bytes
inside the loop.

>>> import dfits
>>> f = dfits.open("cube.fits")            # doctest: +SKIP
>>> f[0].data.mean(axis=0).compute()      # doctest: +SKIP

Importing dfits is cheap: numba, dask and astropy load on first use, and kernels compile on
first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dfits.errors import (
    DataError,
    DfitsError,
    DfitsWarning,
    ExpressionError,
    FileBusyError,
    FileChangedError,
    HDUNotFoundError,
    HeaderError,
    MissingFileError,
    NotFITSError,
    OptionError,
    OutputExistsError,
    RemoteReadError,
    SpectralError,
    TruncatedFileError,
    UnsupportedError,
)

# Registers the notebook reprs and figures of files, HDUs and headers (light: no numpy, dask
# or matplotlib), so that Jupyter renders them without an import of dfits.jupyter.
from dfits.jupyter import _register as _jupyter_register  # noqa: F401

if TYPE_CHECKING:
    from dfits.file import HDU, FitsFile, open
    from dfits.format.header import Header
    from dfits.io.verify import verify_checksum
    from dfits.jupyter.explore import explore
    from dfits.write import append, to_fits

__version__ = "0.1.0"

__all__ = [
    "HDU",
    "DataError",
    "DfitsError",
    "DfitsWarning",
    "ExpressionError",
    "FileBusyError",
    "FileChangedError",
    "FitsFile",
    "HDUNotFoundError",
    "Header",
    "HeaderError",
    "MissingFileError",
    "NotFITSError",
    "OptionError",
    "OutputExistsError",
    "RemoteReadError",
    "SpectralError",
    "TruncatedFileError",
    "UnsupportedError",
    "append",
    "explore",
    "open",
    "to_fits",
    "verify_checksum",
]

_LAZY = {
    "open": "dfits.file",
    "FitsFile": "dfits.file",
    "HDU": "dfits.file",
    "Header": "dfits.format.header",
    "verify_checksum": "dfits.io.verify",
    "explore": "dfits.jupyter.explore",
}


#: subpackages reachable as attributes without their own import (``dfits.fft.fft(x)``)
_SUBPACKAGES = {"fft": "dfits.fft"}


def _is_xarray(obj: Any) -> bool:
    """Whether ``obj`` is a DataArray or Dataset, or a list holding one, without importing
    xarray (if it is not loaded, ``obj`` cannot be one)."""
    import sys

    xr = sys.modules.get("xarray")
    if xr is None:
        return False
    kinds = (xr.DataArray, xr.Dataset)
    if isinstance(obj, list | tuple):
        return any(isinstance(x, kinds) for x in obj)
    return isinstance(obj, kinds)


def _writer(name: str, position: int) -> Any:
    """``dfits.write``'s ``to_fits``/``append`` (signature and docstring), sending xarray
    objects to the xarray adapter (header from attributes, coordinates and WCS): the package
    root may gather every layer, and writing an array never imports xarray."""
    import functools
    import importlib

    plain = getattr(importlib.import_module("dfits.write"), name)

    @functools.wraps(plain)
    def write(*args: Any, **kwargs: Any) -> Any:
        obj = args[position] if len(args) > position else kwargs.get("obj")
        if _is_xarray(obj):
            from dfits.xarray import tofits

            return getattr(tofits, name)(*args, **kwargs)
        return plain(*args, **kwargs)

    return write


#: the writers and where their object argument sits
_WRITERS = {"to_fits": 0, "append": 1}


def __getattr__(name: str) -> Any:
    if name in _WRITERS:
        value = globals()[name] = _writer(name, _WRITERS[name])
        return value
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(_SUBPACKAGES[name])
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dfits' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
