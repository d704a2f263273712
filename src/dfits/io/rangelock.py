"""Byte-range locks on one open file description (Linux OFD locks), for in-place appends.

The contract: :func:`range_lock` takes a shared (``exclusive=False``) or exclusive lock on
bytes ``[start, start + length)`` of the file behind ``fd``, waiting for conflicting holders;
closing ``fd`` releases it. Unlike ``lockf`` (one lock per process) an OFD lock belongs to the
open file description, so threads of one process exclude each other as processes do; unlike
``flock`` it covers a range, so it never conflicts with the appender's whole-file ``flock``
(the two kinds do not interact on Linux). The block writers of an append hold the range
shared while they write; the appender takes it exclusively before it cuts the file back, so
that no writer still in flight can write after the cut.
"""

from __future__ import annotations

import fcntl
import struct

__all__ = ["range_lock", "range_unlock", "supported"]

_SETLKW = getattr(fcntl, "F_OFD_SETLKW", None)


def supported() -> bool:
    """Whether this platform has OFD locks (Linux ≥ 3.15)."""
    return _SETLKW is not None


def range_lock(fd: int, start: int, length: int, *, exclusive: bool) -> None:
    """Lock bytes ``[start, start + length)`` of ``fd``'s file, waiting for other holders."""
    _set(fd, fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK, start, length)


def range_unlock(fd: int, start: int, length: int) -> None:
    """Release a lock :func:`range_lock` took (closing ``fd`` does too)."""
    _set(fd, fcntl.F_UNLCK, start, length)


def _set(fd: int, kind: int, start: int, length: int) -> None:
    if _SETLKW is None:
        return  # not Linux: blocks in flight when an append fails may write after the cut
    # struct flock: l_type, l_whence, l_start, l_len (0: to the end), l_pid (0 for OFD locks)
    fcntl.fcntl(fd, _SETLKW, struct.pack("hhqqi4x", kind, 0, start, length, 0))
