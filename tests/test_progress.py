"""dfits.progress: progress is shown by default only where someone watches it."""

from __future__ import annotations

import io
import sys
import types

import fsspec

import dfits
from dfits.progress import interactive


def fake_ipython_with_kernel() -> types.ModuleType:
    """An ``IPython`` module whose shell is a kernel's (what Jupyter runs code in)."""
    module = types.ModuleType("IPython")
    shell = types.SimpleNamespace(kernel=object())
    module.get_ipython = lambda: shell  # type: ignore[attr-defined]
    return module


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_interactive_is_a_terminal_or_a_jupyter_kernel(monkeypatch):
    assert interactive(_Terminal())
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not interactive(io.StringIO())
    closed = io.StringIO()
    closed.close()
    assert not interactive(closed)
    terminal_ipython = types.ModuleType("IPython")
    terminal_ipython.get_ipython = lambda: types.SimpleNamespace()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", terminal_ipython)
    assert not interactive(io.StringIO())  # IPython in a terminal: judged by the stream
    monkeypatch.setitem(sys.modules, "IPython", fake_ipython_with_kernel())
    assert interactive(io.StringIO())


def test_remote_scan_progress_stays_out_of_a_log_file(monkeypatch):
    from dfits.io.writer import header_bytes

    blob = header_bytes([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)])
    fsspec.filesystem("memory").pipe("/dfits-test/progress.fits", blob)
    made = []
    monkeypatch.setattr("dfits.file.ScanProgress", lambda: made.append(1))
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    dfits.open("memory://dfits-test/progress.fits")
    assert made == []  # stderr is a log file: no reporter at all
    monkeypatch.setattr(sys, "stderr", _Terminal())
    dfits.open("memory://dfits-test/progress.fits")
    assert made == [1]
