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
    FileBusyError,
    FileChangedError,
    HDUNotFoundError,
    HeaderError,
    MissingFileError,
    NotFITSError,
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
    from dfits.xarray.tofits import append, to_fits

__version__ = "0.1.0"

__all__ = [
    "HDU",
    "DataError",
    "DfitsError",
    "DfitsWarning",
    "FileBusyError",
    "FileChangedError",
    "FitsFile",
    "HDUNotFoundError",
    "Header",
    "HeaderError",
    "MissingFileError",
    "NotFITSError",
    "OutputExistsError",
    "RemoteReadError",
    "SpectralError",
    "TruncatedFileError",
    "UnsupportedError",
    "append",
    "open",
    "to_fits",
    "verify_checksum",
]

_LAZY = {
    "open": "dfits.file",
    "FitsFile": "dfits.file",
    "HDU": "dfits.file",
    "Header": "dfits.format.header",
    "append": "dfits.xarray.tofits",
    "to_fits": "dfits.xarray.tofits",
    "verify_checksum": "dfits.io.verify",
}


#: subpackages reachable as attributes without their own import (``dfits.fft.fft(x)``)
_SUBPACKAGES = {"fft": "dfits.fft"}


def __getattr__(name: str) -> Any:
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
