"""Remote files through fsspec: byte ranges coalesced, checked, and retried.

A :class:`FsspecSource` pickles as (URL, storage options, identity, settings); each process
builds its filesystem object on use (fsspec caches the instances). Reads come in batches of
byte ranges (:meth:`FsspecSource.read_ranges`) fetched concurrently, and every answer is
checked:

* exactly the bytes asked for, or the read fails: a server that ignores ``Range`` (HTTP 200
  with the whole body) is reported at once, without downloading that body; a short body (a
  dropped connection) is retried;
* the same file: HTTP answers carry the total size (``Content-Range``) and the ETag, compared
  with what ``dfits.open`` saw; other stores are asked for size/ETag once per chunk;
* transient failures (connection errors, timeouts, HTTP 408/425/429/5xx, short bodies) are
  retried up to ``retries`` attempts in all, with exponential backoff; the final error names
  the URL, the byte range, the attempts and each failure;
* an HTTP connection or read that stalls fails after ``timeout`` seconds without a byte.

Settings come from dask's configuration when the file is opened (``dfits.remote.retries``,
``dfits.remote.timeout``, ``dfits.remote.gap``) and travel with the source to workers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import (
    FileChangedError,
    MissingFileError,
    RemoteReadError,
    TruncatedFileError,
    UnsupportedError,
)
from dfits.io.ranges import Runs, coalesce

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
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_BACKOFF = 0.05  # seconds before the second attempt; doubles, capped at 2 s


class _NoMultiRange(Exception):
    """The server did not answer a multi-range request with 206 parts."""


#: URLs whose server answered a multi-range request otherwise (per process).
_SINGLE_RANGE_ONLY: set[str] = set()
_MAX_PARTS = 64  # ranges per multi-range request: ~1.5 KB of Range header


class _Permanent(Exception):
    """A failure that another attempt would repeat (a server ignoring Range, HTTP 403)."""


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
        return fsspec.core.url_to_fs(self.url, **opts)

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
                if not _unreachable(err):
                    raise MissingFileError(f"{self.url!r}: no such file") from err
                errors.append(repr(err.__cause__))
                _sleep(attempt)
            except PermissionError:
                raise
            except Exception as err:
                if _status(err) not in _TRANSIENT_STATUS and not _transient_error(err):
                    raise RemoteReadError(f"{self.url!r}: cannot stat the file: {err!r}") from err
                errors.append(repr(err))
                _sleep(attempt)
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
                _sleep(attempt - 1)
            got = self._fetch([ranges[i] for i in pending])
            still = []
            for i, res in zip(pending, got, strict=True):
                start, stop = ranges[i]
                if isinstance(res, FileNotFoundError | PermissionError | FileChangedError):
                    raise _named(res, self.url, start, stop)
                if isinstance(res, _Permanent):
                    raise RemoteReadError(
                        f"{self.url!r}: reading bytes {start}..{stop} failed: {res}"
                    )
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
                    raise RemoteReadError(
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
            from fsspec.asyn import sync

            return sync(fs.loop, self._http_fetch_all, fs, path, ranges)
        starts = [a for a, _ in ranges]
        stops = [b for _, b in ranges]
        try:
            return fs.cat_ranges([path] * len(ranges), starts, stops, on_error="return")
        except Exception as err:  # a failure of the batch as a whole
            return [err] * len(ranges)

    async def _http_fetch_all(self, fs: Any, url: str, ranges: list[tuple[int, int]]) -> list:
        session = await fs.set_session()
        limit = asyncio.Semaphore(self.concurrency)

        async def one(start: int, stop: int) -> Any:
            async with limit:
                return await self._http_get(fs, session, url, start, stop)

        async def singles(batch: list[tuple[int, int]]) -> list:
            return await asyncio.gather(*(one(a, b) for a, b in batch), return_exceptions=True)

        if len(ranges) == 1 or url in _SINGLE_RANGE_ONLY:
            return await singles(ranges)

        # Many runs (a spectrum, the rows of a cut-out): ask for up to _MAX_PARTS of them in
        # one multi-range request; a server that answers otherwise gets single ranges.
        async def multi(batch: list[tuple[int, int]]) -> list:
            async with limit:
                return await self._http_multi(fs, session, url, batch)

        batches = [ranges[i : i + _MAX_PARTS] for i in range(0, len(ranges), _MAX_PARTS)]
        answers = await asyncio.gather(*(multi(b) for b in batches), return_exceptions=True)
        out: list = []
        for batch, answer in zip(batches, answers, strict=True):
            if isinstance(answer, _NoMultiRange):
                _SINGLE_RANGE_ONLY.add(url)
                out += await singles(batch)
            elif isinstance(answer, BaseException):
                out += [answer] * len(batch)
            else:
                out += answer
        return out

    def _request(self, fs: Any, ranges: str) -> dict[str, Any]:
        kw = dict(fs.kwargs)
        headers = dict(kw.pop("headers", None) or {})
        headers["Range"] = f"bytes={ranges}"
        # A compressed answer would not be the stored bytes.
        headers["Accept-Encoding"] = "identity"
        return {"headers": headers, **kw}

    @staticmethod
    def _status(r: Any, url: str) -> None:
        status = r.status
        if status == 404:
            raise FileNotFoundError(url)
        if status in (401, 403):
            raise PermissionError(f"HTTP {status} {r.reason}")
        if status in _TRANSIENT_STATUS:
            raise ConnectionError(f"HTTP {status} {r.reason}")

    async def _http_get(self, fs: Any, session: Any, url: str, start: int, stop: int) -> Any:
        kw = self._request(fs, f"{start}-{stop - 1}")
        async with session.get(fs.encode_url(url), **kw) as r:
            self._status(r, url)
            status = r.status
            if status == 416:
                return b""  # the range starts past the end: the caller sees a short read
            if status == 200:
                # The body is the whole file: never download it to find that out.
                raise _Permanent(
                    f"the server ignores Range requests (HTTP 200 instead of 206, "
                    f"Content-Length {r.headers.get('Content-Length')})"
                )
            if status != 206:
                raise _Permanent(f"HTTP {status} {r.reason}")
            first, last = self._content_range(r.headers.get("Content-Range", ""), r.headers)
            if first != start or last > stop - 1:
                raise _Permanent(f"asked for bytes {start}-{stop - 1}, got {first}-{last}")
            return await _read_body(r.content, stop - start)

    async def _http_multi(
        self, fs: Any, session: Any, url: str, batch: list[tuple[int, int]]
    ) -> list:
        import aiohttp

        kw = self._request(fs, ",".join(f"{a}-{b - 1}" for a, b in batch))
        async with session.get(fs.encode_url(url), **kw) as r:
            self._status(r, url)
            if r.status != 206:
                raise _NoMultiRange  # e.g. 200: multi-range (or Range) not honoured
            parts: list[tuple[int, Any]] = []
            if r.headers.get("Content-Type", "").startswith("multipart/byteranges"):
                reader = aiohttp.MultipartReader(r.headers, r.content)
                while (part := await reader.next()) is not None:
                    text = part.headers.get("Content-Range", "")
                    first, last = self._content_range(text, r.headers)
                    parts.append((first, await _read_body(part, last - first + 1)))
            else:  # one part: the server merged the ranges into one span
                text = r.headers.get("Content-Range", "")
                first, last = self._content_range(text, r.headers)
                need = sum(b - a for a, b in batch)
                if last - first + 1 > 8 * need + 2**20:
                    # far more than asked (a spectrum's channels merged into most of a
                    # cube): single ranges cost less than downloading that span
                    raise _NoMultiRange
                parts.append((first, await _read_body(r.content, last - first + 1)))
        out: list = []
        for a, b in batch:
            for first, data in parts:
                if first <= a and b <= first + len(data):
                    out.append(
                        data if (first, b - a) == (a, len(data)) else data[a - first : b - first]
                    )
                    break
            else:  # treated as a short read: retried
                out.append(ConnectionError(f"the multi-range answer lacks bytes {a}-{b - 1}"))
        return out

    def _content_range(self, text: str, headers: Any) -> tuple[int, int]:
        """First and last byte of a ``Content-Range``; the file's identity checked on the way."""
        unit, _, spec = text.partition(" ")
        span, _, total = spec.partition("/")
        first, _, last = span.partition("-")
        if unit != "bytes" or not first.isdigit() or not last.isdigit():
            raise _Permanent(f"a 206 answer without a usable Content-Range: {text!r}")
        etag = headers.get("ETag")
        changed = (self.etag is not None and etag is not None and etag != self.etag) or (
            self.size is not None and total.isdigit() and int(total) != self.size
        )
        if changed:
            raise FileChangedError(
                f"{self.url!r} changed since it was opened (size {self.size} -> {total}, "
                f"ETag {self.etag!r} -> {etag!r})"
            )
        return int(first), int(last)

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
        groups = coalesce(runs, self.gap)
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

    def verify(self) -> None:
        """Before a chunk read: stores whose answers do not carry the identity are asked."""
        fs, _ = self._filesystem()
        if not _is_http(fs):
            self.check()


async def _read_body(stream: Any, want: int) -> bytearray:
    """A response (or multipart part) body into one buffer of the size asked for.

    aiohttp's ``read()`` joins its pieces at the end, a second copy that halves the
    throughput of large chunk reads. Fewer bytes (a dropped connection) come back short.
    """
    buf = bytearray(want)
    pos = 0
    read = stream.readany if hasattr(stream, "readany") else stream.read_chunk
    while piece := await read():
        k = len(piece)
        if pos + k > want:
            raise _Permanent(f"the server sent more than the {want} bytes asked for")
        buf[pos : pos + k] = piece
        pos += k
    return buf if pos == want else buf[:pos]


def _status(err: BaseException) -> int | None:
    status = getattr(err, "status", None) or getattr(err, "code", None)
    return status if isinstance(status, int) else None


def _transient_error(err: BaseException) -> bool:
    return isinstance(err, ConnectionError | TimeoutError | asyncio.TimeoutError | OSError)


def _unreachable(err: BaseException) -> bool:
    cause = err.__cause__
    while cause is not None:
        if isinstance(cause, ConnectionError | TimeoutError) or "Connect" in type(cause).__name__:
            return True
        cause = cause.__cause__
    return False


def _named(err: BaseException, url: str, start: int, stop: int) -> BaseException:
    if isinstance(err, FileChangedError):
        return err
    kind = MissingFileError if isinstance(err, FileNotFoundError) else type(err)
    out = kind(f"{url!r}: reading bytes {start}..{stop}: {err}")
    out.__cause__ = err
    return out


def _sleep(attempt: int) -> None:
    time.sleep(min(_BACKOFF * 2**attempt, 2.0))
