"""Header-scan progress for slow (remote) many-HDU files: quiet for the first 2 seconds.

:func:`dfits.open` passes a :class:`ScanProgress` to the layout scan for remote files. Nothing
is shown for scans that finish quickly; past ``delay`` seconds a tqdm bar (when tqdm is
installed) or a one-line counter on stderr reports bytes and HDUs scanned.

:func:`interactive` is the one rule for showing progress by default, everywhere (scan, CLI,
:func:`dfits.jupyter.compute`): only where someone watches — a terminal or a Jupyter kernel.
Redirected to a log file, ``\r`` updates would be dozens of lines for a few seconds' work.

:func:`progress_chunk_size` is why a bar moves at all. dask's bar counts finished tasks, and
dfits fuses the read of a chunk with its kernel pass into one task, which finishes only when
the whole chunk is done: a 400 MiB cube in four 128 MiB chunks on four threads is four tasks
that end together, so the bar sits at 0 % until the very end. Where a bar is shown, the
command line plans chunks small enough that each thread works through several of them
(:data:`STEPS_PER_THREAD`), so the bar advances by sub-chunks of the default plan; big files
already have that many chunks and keep dask's ``array.chunk-size``.

:func:`work` and :func:`work_done` are how a bar sees inside a task whose graph was built
before anyone asked for a bar (:func:`dfits.jupyter.compute`): a chunk function registers the
values it will read and hands the counter to its kernel, which adds what it has read tile by
tile (Numba, without the GIL); a display sums the fractions of the work in flight.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

__all__ = [
    "STEPS_PER_THREAD",
    "ScanProgress",
    "bar_chunks",
    "interactive",
    "progress_chunk_size",
    "work",
    "work_done",
]

#: chunks per thread that make a progress bar advance in visible steps
STEPS_PER_THREAD = 8
#: never plan chunks smaller than this for a bar's sake (per-task overhead stays negligible)
MIN_CHUNK_BYTES = 4 * 2**20


def progress_chunk_size(nbytes: int, threads: int, chunk_bytes: int) -> int | None:
    """A chunk size (bytes) giving a run over ``nbytes`` at least :data:`STEPS_PER_THREAD`
    chunks per thread, or None when ``chunk_bytes`` (dask's ``array.chunk-size``) already
    does (or the data are too small to be worth a bar).

    Examples
    --------
    >>> progress_chunk_size(400 * 2**20, 4, 128 * 2**20) // 2**20   # four chunks -> 32
    12
    >>> progress_chunk_size(100 * 2**30, 4, 128 * 2**20) is None   # 800 chunks already
    True
    """
    size = max(nbytes // max(threads * STEPS_PER_THREAD, 1), MIN_CHUNK_BYTES)
    return size if size < chunk_bytes else None


def bar_chunks(shown: bool, nbytes: int) -> Any:
    """A context under which dask arrays over ``nbytes`` are planned in chunks small enough
    for a shown bar to advance (:func:`progress_chunk_size`; dask's threads); a no-op when
    no bar is shown or the default chunks already do."""
    import contextlib

    if not shown:
        return contextlib.nullcontext()
    import dask
    from dask.utils import parse_bytes

    default = parse_bytes(str(dask.config.get("array.chunk-size")))
    size = progress_chunk_size(nbytes, dask.system.CPU_COUNT, default)
    return contextlib.nullcontext() if size is None else dask.config.set({"array.chunk-size": size})


#: the work in flight: counter -> total, for :func:`work_done`
_WORK: dict[int, tuple[np.ndarray, int]] = {}
_WORK_LOCK = threading.Lock()


@contextlib.contextmanager
def work(total: int) -> Iterator[np.ndarray]:
    """Register ``total`` units of work in flight; yields the one-element int64 counter the
    worker (a kernel) advances. Gone from :func:`work_done` when the block ends.

    Examples
    --------
    >>> with work(8) as done:
    ...     done[0] += 2
    ...     round(work_done(), 2)
    0.25
    >>> work_done()
    0.0
    """
    done = np.zeros(1, dtype=np.int64)
    with _WORK_LOCK:
        _WORK[id(done)] = (done, max(int(total), 1))
    try:
        yield done
    finally:
        with _WORK_LOCK:
            del _WORK[id(done)]


def work_done() -> float:
    """The sum of the fractions done of the work in flight (in this process, all threads)."""
    with _WORK_LOCK:
        items = list(_WORK.values())
    return float(sum(min(int(done[0]) / total, 1.0) for done, total in items))


def interactive(stream: TextIO | None = None) -> bool:
    """True when progress written to ``stream`` (default ``sys.stderr``) is seen live.

    That is a terminal, or any output of a Jupyter kernel (which renders ``\r`` updates
    in place). Never imports IPython: a kernel has imported it already.
    """
    stream = sys.stderr if stream is None else stream
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        pass
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return getattr(shell, "kernel", None) is not None


class ScanProgress:
    """Callable ``(offset, size, hdus)`` progress reporter for :func:`dfits.format.layout.scan`."""

    def __init__(self, delay: float = 2.0, out: TextIO | None = None) -> None:
        self.delay = delay
        self.out = out
        self._start = time.monotonic()
        self._bar: Any = None
        self._shown = False

    def __call__(self, offset: int, size: int | None, hdus: int) -> None:
        if not self._shown and time.monotonic() - self._start < self.delay:
            return
        out = self.out if self.out is not None else sys.stderr
        self._shown = True
        if self._bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                self._bar = False
            else:
                self._bar = tqdm(
                    total=size,
                    unit="B",
                    unit_scale=True,
                    desc="scanning headers",
                    file=out,
                    leave=False,
                )
        if self._bar:
            self._bar.update(offset - self._bar.n)
            self._bar.set_postfix(hdus=hdus)
            return
        total = f" of {size / 1e6:.1f} MB" if size else ""
        out.write(f"\rdfits: scanned {hdus} HDUs, {offset / 1e6:.1f} MB{total}")
        if size is not None and offset >= size:
            out.write("\n")
        out.flush()
