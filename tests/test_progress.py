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


# -- a shown bar advances: chunks planned so each thread works through several ---------------


def test_progress_chunk_size_gives_each_thread_several_chunks():
    from dfits.progress import MIN_CHUNK_BYTES, STEPS_PER_THREAD, progress_chunk_size

    mib = 2**20
    size = progress_chunk_size(400 * mib, 4, 128 * mib)  # the 4-chunk run of issue 45
    assert size is not None
    assert 400 * mib // size >= 4 * STEPS_PER_THREAD
    assert progress_chunk_size(64 * 2**30, 4, 128 * mib) is None  # 512 chunks already
    assert progress_chunk_size(mib, 4, 128 * mib) == MIN_CHUNK_BYTES  # never tiny tasks


def test_the_cli_plans_small_chunks_only_where_a_bar_is_shown(tmp_path, monkeypatch, counted):
    """``dfits stats`` of a file in one default chunk: one pass per statistic quietly, and
    with ``--progress`` many (the bar then moves), with the same values."""
    import dask
    import numpy as np
    from astropy.io import fits

    from dfits import progress
    from dfits.cli import main

    path = tmp_path / "cube.fits"
    data = np.random.default_rng(1).random((16, 64, 64)).astype(np.float32)
    fits.writeto(path, data)
    monkeypatch.setattr(progress, "MIN_CHUNK_BYTES", 1024)
    monkeypatch.setattr(dask.system, "CPU_COUNT", 2)
    out = {}
    for flag in ("--quiet", "--progress"):
        counted.clear()
        argv = [
            "stats",
            str(path),
            "--stat",
            "sum",
            flag,
            "--output",
            str(tmp_path / f"{flag}.npy"),
        ]
        assert main([*argv, "--axis", "0"]) == 0
        out[flag] = (counted.get("sum_count", 0), np.load(tmp_path / f"{flag}.npy"))
    assert out["--quiet"][0] == 1
    assert out["--progress"][0] >= 2 * progress.STEPS_PER_THREAD
    np.testing.assert_allclose(out["--progress"][1], data.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(out["--quiet"][1], out["--progress"][1], rtol=1e-6)
