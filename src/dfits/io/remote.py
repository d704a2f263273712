"""Remote files through fsspec: exact byte ranges, checked lengths, bounded retries.

A :class:`FsspecSource` pickles as (URL, storage options, identity); each process builds its
filesystem object on first use (fsspec caches instances). Every ranged read checks that it got
exactly the bytes asked for, so a server that ignores ``Range`` or cuts a response short is an
error naming the URL and the byte range, never silently mis-read data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dfits.errors import FileChangedError, RemoteReadError, TruncatedFileError

__all__ = ["FsspecSource"]

_RETRIES = 3


@dataclass(frozen=True)
class FsspecSource:
    """A file behind any fsspec URL, read by byte ranges."""

    url: str
    storage_options: tuple[tuple[str, Any], ...] = ()
    size: int | None = None
    etag: str | None = None
    _fs: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def open(cls, url: str, storage_options: dict[str, Any] | None = None) -> FsspecSource:
        """Resolve ``url`` and record its size and ETag (when the store reports them)."""
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        try:
            info = fs.info(path)
        except FileNotFoundError:
            raise
        except Exception as err:
            raise RemoteReadError(f"{url!r}: cannot stat the file: {err}") from err
        size = info.get("size")
        etag = info.get("ETag") or info.get("etag")
        opts = tuple(sorted((storage_options or {}).items()))
        return cls(url, opts, int(size) if size is not None else None, str(etag) if etag else None)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "storage_options": self.storage_options,
            "size": self.size,
            "etag": self.etag,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_fs", None)

    @property
    def path(self) -> str:
        """The URL (what error messages name)."""
        return self.url

    @property
    def token(self) -> tuple[Any, ...]:
        """Deterministic identity used in dask names."""
        return (self.url, self.size, self.etag)

    def _filesystem(self) -> tuple[Any, str]:
        import fsspec

        fs, path = fsspec.core.url_to_fs(self.url, **dict(self.storage_options))
        return fs, path

    def check(self) -> None:
        """Raise :class:`FileChangedError` if size or ETag changed since open."""
        fs, path = self._filesystem()
        info = fs.info(path)
        size = info.get("size")
        etag = info.get("ETag") or info.get("etag")
        if (self.size is not None and size != self.size) or (self.etag and etag != self.etag):
            raise FileChangedError(
                f"{self.url!r} changed since it was opened (size {self.size} -> {size}, "
                f"ETag {self.etag!r} -> {etag!r})"
            )

    def read(self, offset: int, nbytes: int) -> bytes:
        """Return the bytes ``offset .. offset + nbytes`` (fewer only past the end)."""
        if nbytes <= 0:
            return b""
        end = offset + nbytes
        if self.size is not None:
            end = min(end, self.size)
            if offset >= end:
                return b""
        fs, path = self._filesystem()
        errors = []
        for attempt in range(_RETRIES):
            try:
                data = fs.cat_file(path, start=offset, end=end)
            except FileNotFoundError:
                raise
            except Exception as err:
                errors.append(repr(err))
                time.sleep(0.05 * 2**attempt)
                continue
            if len(data) == end - offset:
                return bytes(data)
            if self.size is None and len(data) < end - offset:
                return bytes(data)
            errors.append(f"got {len(data)} bytes")
            time.sleep(0.05 * 2**attempt)
        raise RemoteReadError(
            f"{self.url!r}: reading bytes {offset}..{end} failed after {_RETRIES} attempts: "
            + "; ".join(errors)
        )

    def read_exact(self, offset: int, nbytes: int) -> bytes:
        """Return exactly ``nbytes`` at ``offset`` or raise :class:`TruncatedFileError`."""
        data = self.read(offset, nbytes)
        if len(data) != nbytes:
            raise TruncatedFileError(
                f"{self.url!r}: needed bytes {offset}..{offset + nbytes} but got {len(data)}"
            )
        return data

    def map(self, offset: int, nbytes: int, *, populate: bool = True) -> np.ndarray:
        """Return the range as a ``uint8`` array (remote bytes must be copied into memory)."""
        return np.frombuffer(self.read_exact(offset, nbytes), np.uint8)
