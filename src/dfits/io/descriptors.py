"""A bounded, per-process cache of read-only file descriptors.

The contract: :meth:`Descriptors.use` gives an open descriptor for a key (a path plus the
identity it was opened with) for the length of a ``with`` block, opening it on first use;
at most :data:`MAX_DESCRIPTORS` stay open between uses, the least recently used closed first;
:meth:`Descriptors.close` closes one key's descriptor. A descriptor in use by another thread
is never closed under it (its number could be reused by an unrelated ``open`` and the read
would then return another file's bytes): it is only dropped from the cache, and closed by the
last user's exit. Keys carry the process id, so a forked worker never uses its parent's
descriptors (their file offsets and locks are shared across ``fork``).

A closed key stays closed: a later use (a dask task still running when ``compute`` raised
and the file was closed, or an array read after ``close``) opens a descriptor for its block
only and never puts it back in the cache, until :meth:`Descriptors.reopen` (``dfits.open``)
says the key is wanted again. So ``close`` leaves nothing held, whatever runs after it. The
last :data:`CLOSED_KEYS` closed keys are remembered; an older one is cached again on use
(still within :data:`MAX_DESCRIPTORS`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CLOSED_KEYS", "MAX_DESCRIPTORS", "Descriptors"]

#: descriptors kept open between uses; the common soft limit is 1024 per process
MAX_DESCRIPTORS = 128
#: closed keys remembered (a few hundred bytes each), so that their late uses stay uncached
CLOSED_KEYS = 4096


class _Entry:
    __slots__ = ("dropped", "fd", "users")

    def __init__(self, fd: int) -> None:
        self.fd, self.users, self.dropped = fd, 0, False


class Descriptors:
    """Open descriptors by key, bounded, safe to use from many threads."""

    def __init__(self, limit: int = MAX_DESCRIPTORS) -> None:
        self.limit = limit
        self._open: OrderedDict[tuple[int, Any], _Entry] = OrderedDict()
        self._closed: OrderedDict[tuple[int, Any], None] = OrderedDict()
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            # a fork while another thread held the lock would leave it held in the child
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many descriptors this process holds in the cache."""
        pid = os.getpid()
        return sum(key[0] == pid for key in self._open)

    @contextmanager
    def use(self, key: Any, verify: Callable[[int], None] | None = None) -> Iterator[int]:
        """Hold the descriptor of ``key[0]`` (a path) open for the block and yield it.

        ``verify(fd)`` runs on a descriptor just opened, before anyone uses it; if it raises,
        the descriptor is closed and the error propagates.
        """
        entry = self.acquire(key, verify)
        try:
            yield entry.fd
        finally:
            self.release(entry)

    def acquire(self, key: Any, verify: Callable[[int], None] | None = None) -> _Entry:
        """:meth:`use` without the ``with`` block (a read's hot path: a generator-based
        context manager costs more than the ``pread``): the held entry, whose ``fd`` stays
        open until :meth:`release` is called with it, once."""
        full = (os.getpid(), key)
        with self._lock:
            entry = self._open.get(full)
            if entry is not None:
                self._open.move_to_end(full)
                entry.users += 1
                return entry
        return self._opened(full, key[0], verify)

    def release(self, entry: _Entry) -> None:
        """Let go of an entry from :meth:`acquire` (closing it if it was dropped meanwhile)."""
        with self._lock:
            entry.users -= 1
            closing = entry.dropped and not entry.users
        if closing:
            os.close(entry.fd)

    def _opened(
        self, full: tuple[int, Any], path: str, verify: Callable[[int], None] | None
    ) -> _Entry:
        # opened outside the lock: a slow file system must not stall other files' reads
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        if verify is not None:
            try:
                verify(fd)
            except BaseException:
                os.close(fd)
                raise
        with self._lock:
            if full in self._closed:
                # closed meanwhile or before: this block's own descriptor, never cached
                entry = _Entry(fd)
                entry.users, entry.dropped = 1, True
                return entry
            entry = self._open.get(full)
            if entry is None:
                entry = self._open[full] = _Entry(fd)
                fd = -1
            self._open.move_to_end(full)
            entry.users += 1
            stale = self._evict()
        if fd >= 0:
            os.close(fd)  # another thread opened the same file first
        for old in stale:
            os.close(old)
        return entry

    def _evict(self) -> list[int]:
        """Drop the least recently used entries beyond the limit; their idle descriptors."""
        stale = []
        while len(self._open) > self.limit:
            _, entry = self._open.popitem(last=False)
            entry.dropped = True
            if not entry.users:
                stale.append(entry.fd)
        return stale

    def reopen(self, key: Any) -> None:
        """Let ``key``'s descriptor be cached again (the file is opened anew)."""
        with self._lock:
            self._closed.pop((os.getpid(), key), None)

    def close(self, key: Any) -> None:
        """Close ``key``'s descriptor now, or when its last current user is done; later uses
        of ``key`` are not cached until :meth:`reopen`."""
        full = (os.getpid(), key)
        with self._lock:
            self._closed[full] = None
            self._closed.move_to_end(full)
            while len(self._closed) > CLOSED_KEYS:
                self._closed.popitem(last=False)
            entry = self._open.pop(full, None)
            if entry is None:
                return
            entry.dropped = True
            idle = not entry.users
        if idle:
            os.close(entry.fd)

    def clear(self) -> None:
        """Close every descriptor of this process (those in use when their users are done)."""
        pid = os.getpid()
        with self._lock:
            keys = [full[1] for full in self._open if full[0] == pid]
        for key in keys:
            self.close(key)
