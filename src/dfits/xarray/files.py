"""The one place the xarray layer opens FITS files: ``dfits.open`` once per path per process.

The contract: :func:`open_file` returns the :class:`~dfits.FitsFile` of a path or URL (with
its fsspec ``storage_options``), opening it — headers only — the first time it is asked for in
this process. The backend engine, the lazily indexed arrays it hands xarray (which reopen the
file in each worker after unpickling) and the ``.fits`` accessor all go through it, so a
file's headers are scanned once however many variables, chunks and accessor calls use them.
The cache is bounded (cleared past 128 files); entries hold headers, never an open handle.

A local file's key is its identity, not its name: path, inode, size and mtime. A file
rewritten in place (``to_fits`` renames a new file over the old one) is therefore opened
afresh, never served from the old layout. A URL's key is the URL and its options; the
remote source itself checks size and ETag on every read.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from dfits.file import FitsFile, _open

__all__ = ["open_file"]

_MAX_FILES = 128
_files: dict[tuple[Any, ...], FitsFile] = {}
_lock = threading.Lock()


def open_file(
    path: str, storage_options: dict[str, Any] | None = None, stacklevel: int = 1
) -> FitsFile:
    """The :class:`~dfits.FitsFile` of ``path``, opened once per (path, options) per process.

    Parameters
    ----------
    path : str
        A local path or an fsspec URL.
    storage_options : dict, optional
        fsspec options for URLs (part of the cache key).
    stacklevel : int
        Where warnings about the file point, as ``warnings.warn`` counts (1: the line calling
        this function); they are emitted the first time only.
    """
    key = _identity(path, storage_options)
    f = _files.get(key)
    if f is None:
        # Opened outside the lock (a remote scan may take seconds); a race opens twice, harmlessly.
        f = _open(path, None, storage_options, None, stacklevel=stacklevel + 1)
        with _lock:
            if len(_files) >= _MAX_FILES:
                _files.clear()
            _files[key] = f
    return f


def _identity(path: str, storage_options: dict[str, Any] | None) -> tuple[Any, ...]:
    """The cache key: ``(path, options)`` plus inode, size and mtime for a local file."""
    key: tuple[Any, ...] = (path, repr(storage_options))
    local = path[len("file://") :] if path.startswith("file://") else path
    if "://" in local or "::" in local:
        return key
    try:
        st = os.stat(local)
    except OSError:
        return key  # opening it raises the real error, naming the file
    return (*key, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
