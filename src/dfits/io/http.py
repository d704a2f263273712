"""Byte ranges over HTTP(S): concurrent ``Range`` requests, multi-range batches, checked answers.

The contract: :func:`fetch` makes one attempt at every ``[start, stop)`` range of a URL on
fsspec's HTTP filesystem and returns, per range, its bytes or the exception it met (the caller
retries; see :mod:`dfits.io.retries`). Up to ``concurrency`` requests are in flight; many
ranges go out as multi-range requests of up to 64 parts, and a server that answers those
otherwise (or merges them into a far larger span) gets single ranges from then on. Every
answer is checked:

* a 206 with the ``Content-Range`` asked for, or :class:`~dfits.io.retries.PermanentError`: a
  server that ignores ``Range`` (HTTP 200) is reported without downloading the body;
* the same file: the total size in ``Content-Range`` and the ETag must match what was seen at
  open, else :class:`~dfits.errors.FileChangedError`;
* 404 is ``FileNotFoundError``, 401/403 ``PermissionError``, 408/425/429/5xx a (retried)
  ``ConnectionError``; a short body (a dropped connection) comes back short.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from dfits.errors import FileChangedError
from dfits.io.retries import TRANSIENT_STATUS, PermanentError, RangeIgnored

__all__ = ["MAX_PARTS", "fetch", "multi_range"]

MAX_PARTS = 64  # ranges per multi-range request: ~1.5 KB of Range header
#: URLs whose server answered a multi-range request otherwise (per process).
_SINGLE_RANGE_ONLY: set[str] = set()


class Source(Protocol):
    """What the checks need to know of the file: its URL and identity at open."""

    url: str
    size: int | None
    etag: str | None
    concurrency: int


class _NoMultiRange(Exception):
    """The server did not answer a multi-range request with 206 parts."""


def multi_range(url: str) -> bool:
    """Whether ``url``'s server may be asked for several ranges in one request: until it has
    answered one otherwise (in this process)."""
    return url not in _SINGLE_RANGE_ONLY


def fetch(source: Source, fs: Any, url: str, ranges: list[tuple[int, int]]) -> list[Any]:
    """One attempt at every range on fsspec's HTTP filesystem ``fs``: bytes or exception each."""
    from fsspec.asyn import sync

    return sync(fs.loop, _fetch_all, source, fs, url, ranges)


async def _fetch_all(source: Source, fs: Any, url: str, ranges: list[tuple[int, int]]) -> list:
    session = await fs.set_session()
    limit = asyncio.Semaphore(source.concurrency)

    async def one(start: int, stop: int) -> Any:
        async with limit:
            return await _get(source, fs, session, url, start, stop)

    async def singles(batch: list[tuple[int, int]]) -> list:
        return await asyncio.gather(*(one(a, b) for a, b in batch), return_exceptions=True)

    if len(ranges) == 1 or url in _SINGLE_RANGE_ONLY:
        return await singles(ranges)

    # Many runs (a spectrum, the rows of a cut-out): ask for up to MAX_PARTS of them in
    # one multi-range request; a server that answers otherwise gets single ranges.
    async def multi(batch: list[tuple[int, int]]) -> list:
        async with limit:
            return await _multi(source, fs, session, url, batch)

    batches = [ranges[i : i + MAX_PARTS] for i in range(0, len(ranges), MAX_PARTS)]
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


def _request(fs: Any, ranges: str) -> dict[str, Any]:
    kw = dict(fs.kwargs)
    headers = dict(kw.pop("headers", None) or {})
    headers["Range"] = f"bytes={ranges}"
    # A compressed answer would not be the stored bytes.
    headers["Accept-Encoding"] = "identity"
    return {"headers": headers, **kw}


def _check_status(r: Any, url: str) -> None:
    status = r.status
    if status == 404:
        raise FileNotFoundError(url)
    if status in (401, 403):
        raise PermissionError(f"HTTP {status} {r.reason}")
    if status in TRANSIENT_STATUS:
        raise ConnectionError(f"HTTP {status} {r.reason}")


async def _get(source: Source, fs: Any, session: Any, url: str, start: int, stop: int) -> Any:
    kw = _request(fs, f"{start}-{stop - 1}")
    async with session.get(fs.encode_url(url), **kw) as r:
        _check_status(r, url)
        status = r.status
        if status == 416:
            return b""  # the range starts past the end: the caller sees a short read
        if status == 200:
            # The body is the whole file: never download it to find that out.
            raise RangeIgnored(
                f"the server ignores Range requests (HTTP 200 instead of 206, "
                f"Content-Length {r.headers.get('Content-Length')})"
            )
        if status != 206:
            raise PermanentError(f"HTTP {status} {r.reason}")
        first, last = _content_range(source, r.headers.get("Content-Range", ""), r.headers)
        if first != start or last > stop - 1:
            raise PermanentError(f"asked for bytes {start}-{stop - 1}, got {first}-{last}")
        return await _read_body(r.content, stop - start)


async def _multi(
    source: Source, fs: Any, session: Any, url: str, batch: list[tuple[int, int]]
) -> list:
    kw = _request(fs, ",".join(f"{a}-{b - 1}" for a, b in batch))
    async with session.get(fs.encode_url(url), **kw) as r:
        _check_status(r, url)
        if r.status != 206:
            raise _NoMultiRange  # e.g. 200: multi-range (or Range) not honoured
        parts = await _parts(source, r, sum(b - a for a, b in batch), len(batch))
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


async def _parts(source: Source, r: Any, need: int, count: int) -> list[tuple[int, Any]]:
    """The (first byte, body) parts of a 206 answer to ``count`` ranges of ``need`` bytes."""
    ctype = r.headers.get("Content-Type", "")
    if ctype.startswith("multipart/byteranges"):
        # Read whole, then cut: aiohttp's MultipartReader costs ~0.2 ms a part, which made a
        # zoomed window's 1,024 rows slower than the 4x bytes of its whole rows. The body is
        # bounded by what was asked plus each part's few headers.
        body = await _read_body(r.content, need + count * 512 + 4096)
        return _split(source, body, _boundary(ctype), r.headers)
    first, last = _content_range(source, r.headers.get("Content-Range", ""), r.headers)
    if last - first + 1 > 8 * need + 2**20:
        # one part, the server merged the ranges into far more than asked (a spectrum's
        # channels into most of a cube): single ranges cost less than downloading that span
        raise _NoMultiRange
    return [(first, await _read_body(r.content, last - first + 1))]


def _boundary(ctype: str) -> bytes:
    for param in ctype.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "boundary" and value:
            return value.strip('"').encode("latin-1")
    raise PermanentError(f"a multipart answer without a boundary: {ctype!r}")


def _split(source: Source, body: bytearray, boundary: bytes, headers: Any) -> list:
    """Cut a ``multipart/byteranges`` body into (first byte, bytes) parts. Each part's length
    comes from its Content-Range, so bytes that look like the boundary inside a part do not
    cut it; a body cut short yields the whole parts before the cut (the caller reports the
    missing ranges as short reads, which are retried)."""
    delim = b"--" + boundary
    parts: list[tuple[int, bytearray]] = []
    at = body.find(delim)
    while at >= 0 and body[at + len(delim) : at + len(delim) + 2] != b"--":
        end = body.find(b"\r\n\r\n", at)
        if end < 0:
            break
        lines = bytes(body[at + len(delim) : end]).decode("latin-1").split("\r\n")
        text = next((v for k, _, v in (ln.partition(":") for ln in lines)
                     if k.strip().lower() == "content-range"), "")  # fmt: skip
        first, last = _content_range(source, text.strip(), headers)
        start, stop = end + 4, end + 4 + last - first + 1
        if stop > len(body):
            break
        parts.append((first, body[start:stop]))
        at = body.find(delim, stop)
    return parts


def _content_range(source: Source, text: str, headers: Any) -> tuple[int, int]:
    """First and last byte of a ``Content-Range``; the file's identity checked on the way."""
    unit, _, spec = text.partition(" ")
    span, _, total = spec.partition("/")
    first, _, last = span.partition("-")
    if unit != "bytes" or not first.isdigit() or not last.isdigit():
        raise PermanentError(f"a 206 answer without a usable Content-Range: {text!r}")
    etag = headers.get("ETag")
    changed = (source.etag is not None and etag is not None and etag != source.etag) or (
        source.size is not None and total.isdigit() and int(total) != source.size
    )
    if changed:
        raise FileChangedError(
            f"{source.url!r} changed since it was opened (size {source.size} -> {total}, "
            f"ETag {source.etag!r} -> {etag!r})"
        )
    return int(first), int(last)


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
            raise PermanentError(f"the server sent more than the {want} bytes asked for")
        buf[pos : pos + k] = piece
        pos += k
    return buf if pos == want else buf[:pos]
