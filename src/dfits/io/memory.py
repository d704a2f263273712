"""File objects: ``dfits.open(open("x.fits", "rb"))``, fsspec files, ``BytesIO``.

The contract: :func:`source_for_object` turns a binary file object into a byte source.

* an fsspec file (``fsspec.open(url).open()``, ``fs.open(path)``): its URL and filesystem
  options, read like the URL itself (local files map, remote ones fetch ranges);
* an operating-system file whose name is the path it was opened from (``open(path, "rb")``,
  ``tempfile`` files): that path, read like the path itself;
* anything else with ``read`` (``BytesIO``, a decompressing stream): its bytes, taken once
  from the start, as astropy reads such objects, held by a :class:`MemorySource`.

Tasks carry no data, so a :class:`MemorySource` pickles as a key into a registry of this
process: where it was opened (threads, the synchronous scheduler) the key finds the bytes; a
chunk read in another process raises :class:`~dfits.errors.UnsupportedError` saying so.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dfits.errors import TruncatedFileError, UnsupportedError

__all__ = ["MemorySource", "describe", "source_for_object"]


class _Blob:
    """The bytes of one in-memory file (a class: ``bytes`` cannot be weakly referenced)."""

    __slots__ = ("__weakref__", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data


# key -> bytes, alive while some source (in a graph, an array, a FitsFile) still holds them
_registry: weakref.WeakValueDictionary[str, _Blob] = weakref.WeakValueDictionary()
_lock = threading.Lock()


def describe(obj: Any) -> str:
    """How messages name a file object: its name when it has one, else its type."""
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    return f"<{type(obj).__module__}.{type(obj).__qualname__} object>"


@dataclass(frozen=True)
class MemorySource:
    """A file held in memory, addressed by byte ranges like a local file."""

    #: chunks are zero-copy views of the held bytes
    mappable = True

    path: str
    key: str
    size: int
    blob: _Blob | None = field(default=None, compare=False, repr=False)

    @classmethod
    def hold(cls, data: bytes, name: str) -> MemorySource:
        """A source over ``data`` (registered in this process under a fresh key)."""
        blob = _Blob(data)
        key = uuid.uuid4().hex
        with _lock:
            _registry[key] = blob
        return cls(name, key, len(data), blob)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self.path, self.key, self.size))

    @property
    def token(self) -> tuple[str, str, int]:
        """Deterministic identity used in dask names."""
        return ("memory", self.key, self.size)

    def _data(self) -> bytes:
        if self.blob is None:
            raise UnsupportedError(
                f"file {self.path!r}: opened from an in-memory file object, whose bytes live "
                "only in the process that opened it; open a path or URL to read it elsewhere "
                "(dask worker processes)"
            )
        return self.blob.data

    def read(self, offset: int, nbytes: int) -> bytes:
        """Return up to ``nbytes`` bytes at ``offset`` (fewer only at the end)."""
        return self._data()[offset : offset + max(nbytes, 0)]

    def read_exact(self, offset: int, nbytes: int) -> bytes:
        """Return exactly ``nbytes`` at ``offset`` or raise :class:`TruncatedFileError`."""
        data = self.read(offset, nbytes)
        if len(data) != nbytes:
            raise TruncatedFileError(
                f"file {self.path!r}: needed bytes {offset}..{offset + nbytes} "
                f"but it holds {self.size} bytes"
            )
        return data

    def map(
        self, offset: int, nbytes: int, *, populate: bool = True, runs: Any = None,
        sparse: bool = False,
    ) -> Any:  # fmt: skip
        """A read-only ``uint8`` view of ``nbytes`` at ``offset`` (no copy; held bytes have
        no pages to fault, so ``populate``, ``runs`` and ``sparse`` change nothing)."""
        if offset + nbytes > self.size:
            raise TruncatedFileError(
                f"file {self.path!r}: needed bytes {offset}..{offset + nbytes} "
                f"but it holds {self.size} bytes"
            )
        return np.frombuffer(self._data(), np.uint8, count=nbytes, offset=offset)

    def check(self) -> None:
        """Held bytes cannot change: nothing to check."""

    def verify(self) -> None:
        """Held bytes cannot change: nothing to check."""


def _restore(path: str, key: str, size: int) -> MemorySource:
    return MemorySource(path, key, size, _registry.get(key))


def source_for_object(obj: Any, storage_options: dict[str, Any] | None) -> Any:
    """The byte source of a binary file object (see the module docstring)."""
    from dfits.io import open_source

    fs, path = getattr(obj, "fs", None), getattr(obj, "path", None)
    if fs is not None and isinstance(path, str) and hasattr(fs, "unstrip_protocol"):
        options = dict(getattr(fs, "storage_options", None) or {}) | (storage_options or {})
        return open_source(fs.unstrip_protocol(path), options or None)
    name = getattr(obj, "name", None)
    if isinstance(name, str) and _is_file_of(obj, name):
        return open_source(name)
    if not callable(getattr(obj, "read", None)):
        raise UnsupportedError(
            f"cannot open {describe(obj)} ({type(obj).__name__}): dfits.open takes a path, "
            "a URL or a binary file object"
        )
    return MemorySource.hold(_read_all(obj), describe(obj))


def _is_file_of(obj: Any, name: str) -> bool:
    """True when ``obj`` is an open descriptor of the regular file at path ``name``."""
    try:
        return os.path.samestat(os.fstat(obj.fileno()), os.stat(name))
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


def _read_all(obj: Any) -> bytes:
    if isinstance(obj, io.BytesIO):
        return obj.getvalue()  # the whole buffer, whatever the position
    if callable(getattr(obj, "seek", None)):
        # a stream that cannot seek is read on from where it is
        with contextlib.suppress(OSError, ValueError):
            obj.seek(0)
    data = obj.read()
    if not isinstance(data, bytes | bytearray | memoryview):
        raise UnsupportedError(
            f"cannot open {describe(obj)}: it reads {type(data).__name__}, not bytes "
            "(open it in binary mode, 'rb')"
        )
    return bytes(data)
