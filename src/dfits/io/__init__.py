"""Byte sources: local files (pread / per-chunk mmap) and fsspec URLs (checked ranges)."""

from __future__ import annotations

import os
from typing import Any

from dfits.io.local import FileIdentity, LocalSource
from dfits.io.remote import FsspecSource

__all__ = ["FileIdentity", "FsspecSource", "LocalSource", "open_source"]


def open_source(
    path: str | os.PathLike[str], storage_options: dict[str, Any] | None = None
) -> LocalSource | FsspecSource:
    """Return the source for a local path, ``file://`` URL or any fsspec URL."""
    text = os.fspath(path)
    if "://" in text and not text.startswith("file://"):
        return FsspecSource.open(text, storage_options)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return LocalSource.open(text)
