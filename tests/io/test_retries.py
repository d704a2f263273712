"""Which remote failures are retried, how long the waits are, and how errors are named."""

from __future__ import annotations

import pytest

from dfits.errors import FileChangedError, MissingFileError
from dfits.io import retries
from dfits.io.retries import is_transient, is_unreachable, named, status_of


class Status(Exception):
    def __init__(self, status):
        super().__init__(f"HTTP {status}")
        self.status = status


def test_status_of():
    assert status_of(Status(503)) == 503
    assert status_of(ValueError("x")) is None
    assert 503 in retries.TRANSIENT_STATUS
    assert 404 not in retries.TRANSIENT_STATUS


@pytest.mark.parametrize(
    ("err", "transient"),
    [(ConnectionResetError(), True), (TimeoutError(), True), (ValueError(), False)],
    ids=["reset", "timeout", "value"],
)
def test_is_transient(err, transient):
    assert is_transient(err) is transient


def test_unreachable_looks_down_the_cause_chain():
    inner = ConnectionRefusedError("refused")
    middle = OSError("wrapped")
    middle.__cause__ = inner
    outer = FileNotFoundError("https://x/f.fits")
    outer.__cause__ = middle
    assert is_unreachable(outer)
    assert not is_unreachable(FileNotFoundError("gone"))


def test_named_errors_carry_url_and_range():
    err = named(FileNotFoundError("gone"), "https://x/f.fits", 10, 20)
    assert isinstance(err, MissingFileError)
    assert "'https://x/f.fits': reading bytes 10..20" in str(err)
    changed = FileChangedError("changed")
    assert named(changed, "u", 0, 1) is changed


def test_backoff_doubles_and_is_capped(monkeypatch):
    waits = []
    monkeypatch.setattr(retries.time, "sleep", waits.append)
    for attempt in range(8):
        retries.backoff(attempt)
    assert waits[:3] == [0.05, 0.1, 0.2]
    assert max(waits) == 2.0
