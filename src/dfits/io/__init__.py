"""Byte sources: local files (pread / per-chunk mmap), fsspec URLs (checked ranges) and
file objects (:mod:`dfits.io.memory`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dfits.io.local import FileIdentity, LocalSource
from dfits.io.memory import MemorySource, source_for_object

if TYPE_CHECKING:
    from dfits.io.remote import FsspecSource

__all__ = [
    "FileIdentity",
    "FsspecSource",
    "LocalSource",
    "MemorySource",
    "open_source",
    "release",
    "scanning",
]


def open_source(
    path: str | os.PathLike[str] | Any, storage_options: dict[str, Any] | None = None
) -> LocalSource | FsspecSource | MemorySource:
    """Return the source for a local path, ``file://`` URL, any fsspec URL or file object."""
    if not isinstance(path, str | os.PathLike):
        return source_for_object(path, storage_options)
    text = os.fspath(path)
    if "://" in text and not text.startswith("file://"):
        # here: a local file never loads the remote stack (asyncio, ssl: ~20 ms)
        from dfits.io.remote import FsspecSource

        return FsspecSource.open(text, storage_options)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return LocalSource.open(text)


def release(source: Any) -> None:
    """Close what this process holds open for ``source`` (local files: the cached descriptor;
    remote and in-memory sources hold none)."""
    close = getattr(source, "close", None)
    if close is not None:
        close()


@contextlib.contextmanager
def scanning(source: Any) -> Iterator[Any]:
    """Hold ``source`` for a header scan; yield what the scan takes as ``whole``: for a local
    file, a callable that maps it whole (called only when the headers reach past the scan's
    first read, so a file of one or two headers is never mapped), else None.

    The map, if made, is closed when the block ends. If the block raises, ``source`` is
    released too: a failed ``dfits.open`` hands its caller no file to close, so the
    descriptor the scan opened must not outlive the error (a deleted file would otherwise
    stay held by the cache).
    """
    made: list[Any] = []

    def whole() -> Any:
        made.append(m := source.mapping())
        return m

    try:
        yield whole if isinstance(source, LocalSource) else None
    except BaseException:
        release(source)
        raise
    finally:
        for m in made:
            if m is not None:
                m.close()


def __getattr__(name: str) -> Any:
    # ``dfits.io.FsspecSource`` without importing the remote stack with the package
    if name == "FsspecSource":
        from dfits.io.remote import FsspecSource

        return FsspecSource
    raise AttributeError(f"module 'dfits.io' has no attribute {name!r}")
