"""Readers and writers on the same files at once (issue 51, item 7): the slow suite.

* ``dfits.append`` while 4 processes read the file: each open sees the HDUs before an append
  or after it, never a header half written; reads of a file opened before an append raise
  :class:`~dfits.FileChangedError` (the clean, retryable error) or return the old values.
* ``dfits.to_fits`` replacing a file a ``LocalCluster`` is reducing: the reduction finishes on
  the old bytes (the writer renames a new file into place; open descriptors and maps keep the
  old inode) or raises ``FileChangedError``; never a mix of old and new values.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import time
import warnings

import numpy as np
import pytest

import dfits

pytestmark = pytest.mark.timeout(900)

#: cards in each appended header beyond the mandatory ones: a header of two blocks, so that
#: a reader could meet one block written and the other not
_CARDS = {f"KEY{i:04d}": i for i in range(40)}
SHAPE = (32, 64)


def _hdu_value(index: int) -> np.ndarray:
    return np.full(SHAPE, index, np.float32)


def _read_while(path: str, stop: str, seconds: float) -> dict:
    """Open ``path`` again and again until ``stop`` exists; what every open saw."""
    counts: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    notes: collections.Counter = collections.Counter()
    deadline = time.monotonic() + seconds
    first = True
    while not os.path.exists(stop) and time.monotonic() < deadline:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                with dfits.open(path) as f:
                    n = len(f)
                    counts[n] += 1
                    # the newest HDU's values, and the header cards a torn write would lose
                    last = f[n - 1]
                    if last.header.get("KEY0039", 39) != 39:
                        errors["cards"] += 1
                    got = last.section[:, :]
                    if not np.array_equal(got, _hdu_value(n - 1)):
                        errors[f"values of HDU {n - 1}"] += 1
            except dfits.FileChangedError:
                errors["FileChangedError"] += 1
            except Exception as err:  # anything else is a failure, reported by name
                errors[f"{type(err).__name__}: {err}"[:300]] += 1
        for w in seen:
            notes[f"{w.category.__name__}: {str(w.message)[:120]}"] += 1
        if first:  # warmed up (imports, kernels): tell the writer
            open(f"{stop}.ready-{os.getpid()}", "w").close()
            first = False
    return {"counts": dict(counts), "errors": dict(errors), "warnings": dict(notes)}


def _wait_ready(stop: str, n: int) -> None:
    folder, base = os.path.split(stop)
    deadline = time.monotonic() + 300
    while sum(name.startswith(f"{base}.ready-") for name in os.listdir(folder)) < n:
        assert time.monotonic() < deadline, "the readers did not start"
        time.sleep(0.05)


def test_every_step_of_an_append_shows_the_old_hdus_or_all_the_new(tmp_path, monkeypatch):
    # the append protocol, step by step: after each write of the commit, a reader opening
    # the file sees the HDUs before the append or after it, with whole headers
    from dfits.write import appender, fitswriter

    path = str(tmp_path / "steps.fits")
    dfits.to_fits(_hdu_value(0), path)
    seen = []
    write = fitswriter.pwrite_all

    def watched(fd, data, offset):
        write(fd, data, offset)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dfits.DfitsWarning)  # the padding of an append
            with dfits.open(path) as f:
                seen.append(len(f))
                assert f[len(f) - 1].header.get("KEY0039", 39) == 39
                np.testing.assert_array_equal(f[len(f) - 1].section[:, :], _hdu_value(len(f) - 1))

    monkeypatch.setattr(appender.fitswriter, "pwrite_all", watched)
    for k in range(3):
        n = 1 + 2 * k
        dfits.append(path, [_hdu_value(n), _hdu_value(n + 1)], header=_CARDS, fsync=False)
    assert set(seen) == {1, 3, 5, 7}, seen


@pytest.mark.slow
def test_append_while_four_processes_read(tmp_path):
    path = str(tmp_path / "grow.fits")
    stop = str(tmp_path / "stop")
    dfits.to_fits(_hdu_value(0), path)
    appends = 100
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        readers = [pool.apply_async(_read_while, (path, stop, 600.0)) for _ in range(4)]
        _wait_ready(stop, 4)  # the readers import dfits first: appends start once all read
        began = time.monotonic()
        for k in range(appends):
            n = 1 + 2 * k
            dfits.append(path, [_hdu_value(n), _hdu_value(n + 1)], header=_CARDS)
        seconds = time.monotonic() - began
        time.sleep(0.5)
        open(stop, "w").close()
        results = [r.get(120) for r in readers]
    valid = {1 + 2 * k for k in range(appends + 1)}
    for r in results:
        assert set(r["counts"]) <= valid, r  # an odd count: one HDU of a pair visible
        assert set(r["errors"]) <= {"FileChangedError"}, r
    seen = collections.Counter()
    for r in results:
        seen.update(r["counts"])
    assert len(seen) > 3, seen  # the readers met the file at several stages
    print(f"append: {appends} appends in {seconds:.2f} s; reads {sum(seen.values())}; {results}")


CUBE = (32, 128, 128)


def _slowly(block: np.ndarray) -> np.ndarray:
    time.sleep(0.02)  # a reduction long enough for the writer to replace the file mid-way
    return block


def _slow_sum(client, path: str, warm: bool):
    """Open ``path`` and make a slow reduction of it (run once first when ``warm``, so that
    every worker holds the file's descriptor); the lazy sum and the open file."""
    f = dfits.open(path, chunks=(1, 128, 128))
    x = f[0].data
    if warm:
        assert client.compute(x.sum()).result() == _total(1.0)
    return x.map_blocks(_slowly, dtype=x.dtype).sum(), f


def _total(value: float) -> float:
    return value * np.prod(CUBE)


def _outcome(future) -> str:
    try:
        got = float(future.result(timeout=300))
    except dfits.FileChangedError:
        return "changed"
    if got == _total(1.0):
        return "old"
    return "new" if got == _total(2.0) else f"mixed: {got}"


@pytest.mark.slow
def test_to_fits_replacing_a_file_a_cluster_reduces(tmp_path):
    # The writer renames a complete new file into place: a worker whose descriptor (or map)
    # of the old file is open reads the old inode to the end; one that opens the path
    # afterwards finds another inode and raises FileChangedError. Never a mix of the two.
    from tests.clusters import process_cluster

    path = str(tmp_path / "cube.fits")
    outcomes = collections.Counter()
    began = time.monotonic()
    with process_cluster(2) as (_, client):
        for trial in range(8):
            dfits.to_fits(np.ones(CUBE, np.float32), path, overwrite=True)
            # trials 0-1: replaced before any worker opened it (changed); 2-3: replaced as
            # the reduction starts, every worker holding the old file (old); the rest:
            # replaced at later points of the reduction
            total, f = _slow_sum(client, path, warm=trial >= 2)
            if trial < 2:
                dfits.to_fits(np.full(CUBE, 2.0, np.float32), path, overwrite=True)
            future = client.compute(total)
            if trial >= 2:
                time.sleep(0.0 if trial < 4 else 0.1 * trial)
                dfits.to_fits(np.full(CUBE, 2.0, np.float32), path, overwrite=True)
            outcome = _outcome(future)
            f.close()
            outcomes[outcome] += 1
            if trial < 2:
                assert outcome == "changed", trial
            elif trial < 4:
                assert outcome == "old", trial
            assert outcome in ("old", "changed"), (trial, outcome)
    print(f"to_fits over a reduction: {dict(outcomes)} in {time.monotonic() - began:.1f} s")
