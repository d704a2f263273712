"""Remote files through fsspec: byte ranges coalesced, checked, and retried.

A :class:`FsspecSource` pickles as (URL, storage options, identity, settings); each process
builds its filesystem object on use (fsspec caches the instances). Reads come in batches of
byte ranges (:meth:`FsspecSource.read_ranges`) fetched concurrently, and every answer is
checked:

* exactly the bytes asked for, or the read fails: a server that ignores ``Range`` (HTTP 200
  with the whole body) is reported at once (:class:`~dfits.errors.RangeIgnoredError`), without
  downloading that body; ``dfits.open`` then reads a whole copy (:mod:`dfits.io.download`); a
  short body (a dropped connection) is retried;
* the same file: HTTP answers carry the total size (``Content-Range``) and the ETag, compared
  with what ``dfits.open`` saw; other stores are asked for size/ETag once per chunk;
* transient failures (connection errors, timeouts, HTTP 408/425/429/5xx, short bodies) are
  retried up to ``retries`` attempts in all, with exponential backoff
  (:mod:`dfits.io.retries`); the final error names the URL, the byte range, the attempts and
  each failure;
* an HTTP connection or read that stalls fails after ``timeout`` seconds without a byte.

HTTP(S) ranges go through :mod:`dfits.io.http` (concurrent and multi-range requests, each
answer checked against the file's size and ETag); other stores through fsspec's
``cat_ranges``. Settings come from dask's configuration when the file is opened
(``dfits.remote.retries``, ``dfits.remote.timeout``, ``dfits.remote.gap``) and travel with
the source to workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import (
    FileChangedError,
    MissingFileError,
    RangeIgnoredError,
    RemoteReadError,
    TruncatedFileError,
    UnsupportedError,
)
from dfits.io import http
from dfits.io.ranges import Runs, coalesce
from dfits.io.retries import (
    TRANSIENT_STATUS,
    PermanentError,
    RangeIgnored,
    backoff,
    is_transient,
    is_unreachable,
    named,
    status_of,
)

__all__ = ["DEFAULTS", "FsspecSource"]

#: Defaults of the settings (``dask.config`` keys ``dfits.remote.<name>`` override them).
DEFAULTS = {
    "retries": 4,  # attempts in all, per range
    "timeout": 30.0,  # seconds without progress on an HTTP connect or read
    # Runs closer than this are fetched in one request: on object stores and web servers a
    # request costs about as much as a few hundred KiB of transfer.
    "gap": 256 * 1024,
    "concurrency": 16,  # requests in flight per batch (HTTP)
}


def _settings() -> dict[str, Any]:
    try:
        import dask.config
    except ImportError:  # pragma: no cover - dask is a dependency
        return dict(DEFAULTS)
    return {k: dask.config.get(f"dfits.remote.{k}", v) for k, v in DEFAULTS.items()}


def _is_http(fs: Any) -> bool:
    protocol = fs.protocol
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return any(p in ("http", "https") for p in names)


@dataclass(frozen=True)
class FsspecSource:
    """A file behind any fsspec URL, read by byte ranges."""

    #: chunks are fetched by byte ranges when a value is needed (never mapped)
    mappable = False

    url: str
    storage_options: tuple[tuple[str, Any], ...] = ()
    size: int | None = None
    etag: str | None = None
    retries: int = DEFAULTS["retries"]
    timeout: float = DEFAULTS["timeout"]
    gap: int = DEFAULTS["gap"]
    concurrency: int = DEFAULTS["concurrency"]

    @classmethod
    def open(cls, url: str, storage_options: dict[str, Any] | None = None) -> FsspecSource:
        """Resolve ``url`` and record its size and ETag (when the store reports them)."""
        opts = tuple(sorted((storage_options or {}).items()))
        settings = _settings()
        probe = cls(url, opts, **settings)
        try:
            probe._filesystem()
        except (ValueError, ImportError) as err:
            # an unknown protocol, or one whose fsspec implementation is not installed
            raise UnsupportedError(f"{url!r}: cannot open this URL: {err}") from err
        info = probe._info()
        if info.get("type") == "directory":
            raise MissingFileError(f"{url!r}: a directory (bucket or prefix), not a file")
        size = info.get("size")
        etag = info.get("ETag") or info.get("etag")
        return cls(
            url,
            opts,
            int(size) if size is not None else None,
            str(etag) if etag else None,
            **settings,
        )

    @property
    def path(self) -> str:
        """The URL (what error messages name)."""
        return self.url

    @property
    def token(self) -> tuple[Any, ...]:
        """Deterministic identity used in dask names."""
        return (self.url, self.size, self.etag)

    # -- plumbing ---------------------------------------------------------------------------
    def _filesystem(self) -> tuple[Any, str]:
        import fsspec

        opts = dict(self.storage_options)
        protocol = fsspec.utils.get_protocol(self.url)
        if protocol in ("http", "https"):
            import aiohttp

            # aiohttp waits 5 minutes by default; a stalled server must fail sooner.
            client = dict(opts.get("client_kwargs") or {})
            client.setdefault(
                "timeout",
                aiohttp.ClientTimeout(
                    total=None, sock_connect=self.timeout, sock_read=self.timeout
                ),
            )
            # 64 KiB (the default) reads cost a Python round trip each: measured on loopback,
            # 4 MiB reads stream a 256 MiB range at 0.8 GB/s against 0.3 GB/s.
            client.setdefault("read_bufsize", 4 * 2**20)
            opts["client_kwargs"] = client
        try:
            return fsspec.core.url_to_fs(self.url, **opts)
        except (ValueError, ImportError):
            raise  # an unknown protocol or a missing implementation: see open()
        except Exception as err:
            # Filesystems that log in when made (ftp, sftp, smb) fail here with their own
            # exceptions (ConnectionRefusedError, ftplib.error_perm, paramiko's, ...).
            raise RemoteReadError(f"{self.url!r}: cannot connect: {err!r}") from err

    def _info(self) -> dict[str, Any]:
        fs, path = self._filesystem()
        errors: list[str] = []
        for attempt in range(self.retries):
            try:
                # Listings cached by the filesystem (s3fs) would hide a replaced object.
                fs.invalidate_cache(path)
                return fs.info(path)
            except FileNotFoundError as err:
                # fsspec's HTTP stat reports any failure so, a refused connection included
                if not is_unreachable(err):
                    raise MissingFileError(f"{self.url!r}: no such file") from err
                errors.append(repr(err.__cause__))
                backoff(attempt)
            except PermissionError:
                raise
            except Exception as err:
                if status_of(err) not in TRANSIENT_STATUS and not is_transient(err):
                    raise RemoteReadError(f"{self.url!r}: cannot stat the file: {err!r}") from err
                errors.append(repr(err))
                backoff(attempt)
        raise RemoteReadError(
            f"{self.url!r}: cannot stat the file: {self.retries} attempts failed: "
            + "; ".join(errors)
        )

    def check(self) -> None:
        """Raise :class:`FileChangedError` if size or ETag changed since open."""
        info = self._info()
        size = info.get("size")
        etag = info.get("ETag") or info.get("etag")
        if (self.size is not None and size != self.size) or (self.etag and etag != self.etag):
            raise FileChangedError(
                f"{self.url!r} changed since it was opened (size {self.size} -> {size}, "
                f"ETag {self.etag!r} -> {etag!r})"
            )

    # -- reads ------------------------------------------------------------------------------
    def read(self, offset: int, nbytes: int) -> bytes:
        """Return the bytes ``offset .. offset + nbytes`` (fewer only past the end)."""
        if nbytes <= 0:
            return b""
        end = offset + nbytes
        if self.size is not None:
            end = min(end, self.size)
            if offset >= end:
                return b""
        data = self.read_ranges([(offset, end)], allow_short=self.size is None)[0]
        return data if isinstance(data, bytes) else bytes(data)  # headers are parsed as bytes

    def read_ranges(
        self, ranges: list[tuple[int, int]], *, allow_short: bool = False
    ) -> list[bytes | bytearray]:
        """Fetch ``[start, stop)`` byte ranges concurrently; each answer checked, retried.

        ``allow_short`` accepts fewer bytes (a read past the end of a file of unknown size).
        Raises :class:`RemoteReadError` naming the URL, the range and every failed attempt,
        :class:`FileChangedError` when the server reports another size or ETag, and
        ``FileNotFoundError`` for a file that is gone.
        """
        out: list[bytes | None] = [None] * len(ranges)
        failures: dict[int, list[str]] = {}
        pending = [i for i, (a, b) in enumerate(ranges) if b > a]
        for i, (a, b) in enumerate(ranges):
            if b <= a:
                out[i] = b""
        for attempt in range(self.retries):
            if not pending:
                break
            if attempt:
                backoff(attempt - 1)
            got = self._fetch([ranges[i] for i in pending])
            still = []
            for i, res in zip(pending, got, strict=True):
                start, stop = ranges[i]
                if isinstance(res, FileNotFoundError | PermissionError | FileChangedError):
                    raise named(res, self.url, start, stop)
                if isinstance(res, PermanentError):
                    kind = RangeIgnoredError if isinstance(res, RangeIgnored) else RemoteReadError
                    raise kind(f"{self.url!r}: reading bytes {start}..{stop} failed: {res}")
                if isinstance(res, BaseException):
                    failures.setdefault(i, []).append(f"attempt {attempt + 1}: {res!r}")
                    still.append(i)
                    continue
                n = len(res)
                if n == stop - start or (allow_short and n < stop - start):
                    out[i] = res
                elif n > stop - start:
                    # More bytes than asked: the store answered with something else
                    # (typically the whole object). Retrying would only repeat it.
                    raise RangeIgnoredError(
                        f"{self.url!r}: reading bytes {start}..{stop} failed: got {n} bytes "
                        f"for a {stop - start}-byte range; the server ignores Range requests"
                    )
                else:
                    failures.setdefault(i, []).append(
                        f"attempt {attempt + 1}: got {n} of {stop - start} bytes"
                    )
                    still.append(i)
            pending = still
        if pending:
            i = pending[0]
            start, stop = ranges[i]
            more = f" ({len(pending) - 1} other ranges failed too)" if len(pending) > 1 else ""
            raise RemoteReadError(
                f"{self.url!r}: reading bytes {start}..{stop} failed after {self.retries} "
                f"attempts{more}: " + "; ".join(failures[i])
            )
        return out  # type: ignore[return-value]

    def _fetch(self, ranges: list[tuple[int, int]]) -> list[Any]:
        """One attempt at every range: bytes or the exception, per range."""
        fs, path = self._filesystem()
        if _is_http(fs):
            return http.fetch(self, fs, path, ranges)
        starts = [a for a, _ in ranges]
        stops = [b for _, b in ranges]
        try:
            return fs.cat_ranges([path] * len(ranges), starts, stops, on_error="return")
        except Exception as err:  # a failure of the batch as a whole
            return [err] * len(ranges)

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

    def gather(self, runs: Runs) -> np.ndarray:
        """The runs' bytes packed in order (``uint8``), in as few requests as :attr:`gap` allows.

        One request covering one run is returned without a copy; otherwise each request's
        bytes are cut into the runs it covers.
        """
        groups = coalesce(runs, self._gap())
        blobs = self.read_ranges([(a, b) for _, _, a, b in groups])
        length = runs.length
        if len(groups) == 1 and groups[0][1] - groups[0][0] == 1:
            return np.frombuffer(blobs[0], np.uint8)
        out = np.empty((len(runs.starts), length), np.uint8)
        for (first, stop, begin, _), blob in zip(groups, blobs, strict=True):
            src = np.frombuffer(blob, np.uint8)
            rel = runs.starts[first:stop] - begin
            if length * (stop - first) <= 1 << 22:
                # small runs (pixels of a spectrum, rows of a stamp): one fancy gather
                out[first:stop] = src[rel[:, None] + np.arange(length)]
            else:
                for j, r in enumerate(rel.tolist(), start=first):
                    out[j] = src[r : r + length]
        return out.reshape(-1)

    def _gap(self) -> int:
        """The gap that :meth:`gather` merges: a request costs as much as reading ``gap``
        bytes, and a part of a multi-range request (up to :data:`~dfits.io.http.MAX_PARTS` a
        request) a part of that. So runs go out as runs, not as the rows between them (a
        zoomed window, a stamp), where the server answers multi-range requests; one that
        does not gets single ranges from then on, coalesced at the full gap. (With the
        default gap, 4 KiB: a part's headers are about 100 bytes.)"""
        fs, path = self._filesystem()
        if _is_http(fs) and http.multi_range(path):
            return min(self.gap, DEFAULTS["gap"] // http.MAX_PARTS)
        return self.gap

    def verify(self) -> None:
        """Before a chunk read: stores whose answers do not carry the identity are asked."""
        fs, _ = self._filesystem()
        if not _is_http(fs):
            self.check()
