"""Byte sources: local files (pread / per-chunk mmap), fsspec URLs (checked ranges) and
file objects (:mod:`dfits.io.memory`)."""

from __future__ import annotations

import os
from typing import Any

from dfits.io.local import FileIdentity, LocalSource
from dfits.io.memory import MemorySource, source_for_object
from dfits.io.remote import FsspecSource

__all__ = ["FileIdentity", "FsspecSource", "LocalSource", "MemorySource", "open_source"]


def open_source(
    path: str | os.PathLike[str] | Any, storage_options: dict[str, Any] | None = None
) -> LocalSource | FsspecSource | MemorySource:
    """Return the source for a local path, ``file://`` URL, any fsspec URL or file object."""
    if not isinstance(path, str | os.PathLike):
        return source_for_object(path, storage_options)
    text = os.fspath(path)
    if "://" in text and not text.startswith("file://"):
        return FsspecSource.open(text, storage_options)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return LocalSource.open(text)
