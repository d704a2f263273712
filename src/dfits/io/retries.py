"""Which remote read failures are worth another attempt, and how long to wait before it.

The contract: transient failures — connection errors, timeouts, HTTP 408/425/429/5xx, a
refused connection behind fsspec's ``FileNotFoundError`` — are retried with exponential backoff
(:func:`backoff`: 50 ms, doubling, capped at 2 s); a :class:`PermanentError` (a server that
ignores ``Range``, a wrong ``Content-Range``) would repeat and is reported at once;
:func:`named` turns a per-range failure into the dfits error that names the URL and bytes.
"""

from __future__ import annotations

import asyncio
import time

from dfits.errors import FileChangedError, MissingFileError

__all__ = [
    "TRANSIENT_STATUS",
    "PermanentError",
    "RangeIgnored",
    "backoff",
    "is_transient",
    "is_unreachable",
    "named",
    "status_of",
]

#: HTTP statuses that another attempt may not see again.
TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_BACKOFF = 0.05  # seconds before the second attempt; doubles, capped at 2 s


class PermanentError(Exception):
    """A failure that another attempt would repeat (a server ignoring Range, HTTP 403)."""


class RangeIgnored(PermanentError):
    """The server answered a range request with the whole file (HTTP 200)."""


def status_of(err: BaseException) -> int | None:
    """The HTTP status an exception carries (``status`` or ``code``), if any."""
    status = getattr(err, "status", None) or getattr(err, "code", None)
    return status if isinstance(status, int) else None


def is_transient(err: BaseException) -> bool:
    """True for connection errors and timeouts (any ``OSError`` included)."""
    return isinstance(err, ConnectionError | TimeoutError | asyncio.TimeoutError | OSError)


def is_unreachable(err: BaseException) -> bool:
    """True when an error was caused, somewhere down its chain, by an unreachable server."""
    cause = err.__cause__
    while cause is not None:
        if isinstance(cause, ConnectionError | TimeoutError) or "Connect" in type(cause).__name__:
            return True
        cause = cause.__cause__
    return False


def named(err: BaseException, url: str, start: int, stop: int) -> BaseException:
    """``err`` as the dfits error to raise, naming the URL and the byte range."""
    if isinstance(err, FileChangedError):
        return err
    kind = MissingFileError if isinstance(err, FileNotFoundError) else type(err)
    out = kind(f"{url!r}: reading bytes {start}..{stop}: {err}")
    out.__cause__ = err
    return out


def backoff(attempt: int) -> None:
    """Sleep before attempt ``attempt + 2`` (the first retry waits 50 ms)."""
    time.sleep(min(_BACKOFF * 2**attempt, 2.0))
