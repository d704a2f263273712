"""A remote file whose server ignores ``Range``, downloaded whole into a local cache.

The contract: :func:`download` streams the file once (through fsspec's public ``open``) into
``dfits.remote.cache_dir`` and returns a :class:`~dfits.io.local.LocalSource` on the copy,
when the file is at most ``dfits.remote.download_limit`` bytes (256 MiB); a larger file is a
:class:`~dfits.errors.RemoteReadError` that names the fix. Nothing is allocated from what a
header claims: the body is copied in 4 MiB pieces and the count is checked against the limit
as it grows. The copy is written under a temporary name and renamed only once complete and of
the size the server reported, so a later open never trusts a partial file; a copy is reused
only when the server gave an ETag (the cache name holds URL, size and ETag).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from dfits.errors import RangeIgnoredError, RemoteDownloadWarning, RemoteReadError
from dfits.io.local import LocalSource

__all__ = ["DOWNLOAD_DEFAULTS", "download", "or_download"]

#: Defaults of the download settings (``dask.config`` keys ``dfits.remote.<name>``).
DOWNLOAD_DEFAULTS: dict[str, Any] = {
    "download_limit": 256 * 2**20,  # bytes; larger files are an error, never downloaded
    "cache_dir": None,  # None: <system temporary folder>/dfits-cache
}
_PIECE = 4 * 2**20
T = TypeVar("T")


def _setting(name: str) -> Any:
    import dask.config

    return dask.config.get(f"dfits.remote.{name}", DOWNLOAD_DEFAULTS[name])


def _fix(url: str) -> str:
    return (
        f"serve {url!r} from a server that honours Range requests (nginx, Apache, or any "
        "object store such as S3), or raise the limit with dask.config.set("
        '{"dfits.remote.download_limit": <bytes>}) to download it whole'
    )


def or_download(source: Any, opener: Callable[[Any], T], stacklevel: int = 2) -> T:
    """``opener(source)``; if its server ignores ``Range``, ``opener`` of a downloaded copy.

    ``stacklevel`` is the download warning's, as ``warnings.warn``'s in this function
    (1: here, 2: its caller).
    """
    try:
        return opener(source)
    except RangeIgnoredError:
        local = download(source, stacklevel=stacklevel + 1)
    return opener(local)


def download(source: Any, *, stacklevel: int = 2) -> LocalSource:
    """Download ``source`` (an :class:`~dfits.io.remote.FsspecSource`) whole; a local source.

    Raises :class:`RemoteReadError` when the file is larger than ``dfits.remote.download_limit``
    (before any byte is fetched when the size is known, else as soon as the body passes it),
    or when the download fails or comes back of another size than the server reported.
    ``stacklevel`` is the warning's, as ``warnings.warn``'s in this function.
    """
    url, size, limit = source.url, source.size, int(_setting("download_limit"))
    if size is not None and size > limit:
        raise RemoteReadError(
            f"{url!r}: the server ignores Range requests (it answers with the whole file), "
            f"and the file is {size} bytes ({size / 2**20:.1f} MiB), over the "
            f"{limit} bytes of dfits.remote.download_limit: {_fix(url)}"
        )
    folder = Path(_setting("cache_dir") or Path(tempfile.gettempdir()) / "dfits-cache")
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(repr((url, size, source.etag)).encode()).hexdigest()[:32]
    final = folder / f"{key}.fits"
    reusable = source.etag is not None and size is not None
    if not (reusable and final.is_file() and final.stat().st_size == size):
        got = _fetch_whole(source, folder, final, limit)
        warnings.warn(
            f"{url!r}: the server ignores Range requests, so the whole file ({got} bytes) "
            f"was downloaded to {str(final)!r} and is read from there; to avoid it, " + _fix(url),
            RemoteDownloadWarning,
            stacklevel=stacklevel,
        )
    return LocalSource.open(final)


def _fetch_whole(source: Any, folder: Path, final: Path, limit: int) -> int:
    """Stream the body into a temporary file in ``folder``; rename it to ``final`` when whole."""
    fs, path = source._filesystem()
    fd, partial = tempfile.mkstemp(dir=folder, prefix=".partial-", suffix=".fits")
    got = 0
    try:
        with os.fdopen(fd, "wb") as out, _open_stream(fs, path) as body:
            while piece := body.read(_PIECE):
                got += len(piece)
                if got > limit:
                    raise RemoteReadError(
                        f"{source.url!r}: the server ignores Range requests, and the file is "
                        f"more than the {limit} bytes of dfits.remote.download_limit: "
                        + _fix(source.url)
                    )
                out.write(piece)
        if source.size is not None and got != source.size:
            raise RemoteReadError(
                f"{source.url!r}: downloading the whole file (the server ignores Range "
                f"requests) gave {got} bytes, not the {source.size} the server reported"
            )
        os.replace(partial, final)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        if isinstance(err, RemoteReadError) or not isinstance(err, Exception):
            raise
        raise RemoteReadError(
            f"{source.url!r}: downloading the whole file failed: {err!r}"
        ) from err
    return got


def _open_stream(fs: Any, path: str) -> Any:
    """A sequential reader of the whole body (HTTP: one GET, no Range, never buffered whole)."""
    protocol = fs.protocol
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    if any(p in ("http", "https") for p in names):
        return fs.open(path, "rb", block_size=0)
    return fs.open(path, "rb")
