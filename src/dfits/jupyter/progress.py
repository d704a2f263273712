"""``compute`` with the progress display dask users expect.

* a ``distributed.Client`` is the scheduler dask would use → the work is submitted with
  ``client.compute`` and followed with ``distributed.progress`` (a widget in a notebook when
  ipywidgets is installed, else a text bar);
* otherwise (threads, processes, synchronous) → ``dask.compute`` under :class:`WorkBar`,
  dask's text bar that also advances *inside* tasks.

Why not dask's own ``ProgressBar``: it counts finished tasks, and a graph built before any
bar was asked for may hold few, large ones (a smoothing then a moment map over a cube of four
chunks is four chunk tasks on two threads): it sits at 0 % for half the run, then jumps.
:class:`WorkBar` uses dask's public callbacks (``start_state``, ``posttask``, ``finish``) for
the tasks, and adds the fractions that the kernels of the tasks in flight report through
:func:`dfits.progress.work_done` (the smoothing kernels count the values they have read,
tile by tile), on dask's threads or in this thread. Tasks that report nothing (and every
task of the processes scheduler, whose counters live in the workers) advance the bar when
they end.

By default progress is shown only where it is watched (a Jupyter kernel or a terminal,
:func:`dfits.progress.interactive`): a script logging to a file gets no ``\r`` updates.

>>> import dask.array as da
>>> compute(da.ones(4, chunks=2).sum(), progress=False)
(np.float64(4.0),)
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from typing import Any, TextIO

from dask.callbacks import Callback

from dfits.progress import interactive, work_done

__all__ = ["WorkBar", "compute", "current_client"]

#: seconds between two draws of the bar
INTERVAL = 0.1


def current_client(*arrays: Any) -> Any:
    """The ``distributed.Client`` dask would compute ``arrays`` on, or None.

    Follows dask's own choice (``dask.config`` ``scheduler=``, then the current client), and
    never imports distributed when nothing has imported it yet: then no client can exist.
    """
    if "distributed" not in sys.modules:
        return None
    from distributed import Client

    from dfits.array.scheduler import scheduler

    owner = getattr(scheduler(*arrays), "__self__", None)
    return owner if isinstance(owner, Client) else None


class WorkBar(Callback):
    """A text progress bar (``[####    ] | 42% Completed | 3.1s``, dask's look) whose
    fraction advances inside tasks (see the module docstring).

    The fraction is (tasks finished + the fractions of work the tasks in flight report) /
    tasks, every task counting one, as in dask's bar. ``drawn`` lists every fraction drawn,
    in order (never decreasing), with the number of tasks finished when it was drawn.

    Examples
    --------
    >>> import dask.array as da, io
    >>> bar = WorkBar(out=io.StringIO())
    >>> with bar:
    ...     total = da.ones(8, chunks=2).sum().compute()
    >>> bar.drawn[-1][0]
    1.0
    """

    def __init__(self, out: TextIO | None = None, dt: float | None = None, width: int = 40) -> None:
        self._file = sys.stdout if out is None else out
        self._dt = INTERVAL if dt is None else dt
        self._width = width
        self.drawn: list[tuple[float, int]] = []
        self._done = 0
        self._total = 1
        self._running = False

    def _start(self, dsk: Any) -> None:
        self._start_time = time.monotonic()
        self._total = max(len(dsk), 1)
        self._running = True
        self._timer = threading.Thread(target=self._tick, daemon=True)
        self._timer.start()

    def _start_state(self, dsk: Any, state: dict[str, Any]) -> None:
        # the scheduler's state (dask.local): the tasks to run, without the graph's data
        todo = len(state.get("ready", ())) + len(state.get("waiting", ()))
        if todo:
            self._total = todo

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        self._done += 1

    def _finish(self, dsk: Any, state: Any, errored: bool) -> None:
        self._running = False
        self._timer.join()
        self._draw(1.0 if not errored else self._fraction())
        self._file.write("\n")
        self._file.flush()

    def _fraction(self) -> float:
        # a chunk task's kernel reports its share until the task ends (then posttask counts it)
        now = min((self._done + work_done()) / self._total, 1.0)
        return max(now, self.drawn[-1][0]) if self.drawn else now

    def _tick(self) -> None:
        while self._running:
            self._draw(self._fraction())
            time.sleep(self._dt)

    def _draw(self, fraction: float) -> None:
        from dask.utils import format_time

        self.drawn.append((fraction, self._done))
        elapsed = format_time(time.monotonic() - self._start_time)
        bar = "#" * int(self._width * fraction)
        line = f"\r[{bar:<{self._width}}] | {int(100 * fraction)}% Completed | {elapsed}"
        try:
            self._file.write(line)
            self._file.flush()
        except ValueError:  # closed meanwhile
            pass


def _has_widgets() -> bool:
    return importlib.util.find_spec("ipywidgets") is not None


def compute(*arrays: Any, progress: bool | None = None, **kwargs: Any) -> tuple[Any, ...]:
    """Compute dask collections together, showing progress; returns a tuple of results.

    Parameters
    ----------
    *arrays : dask collections
        Computed in one graph, so shared reads (the same chunks of one cube) happen once.
    progress : bool, optional
        Show a progress bar: ``distributed.progress`` when a client is the scheduler in use,
        else :class:`WorkBar` (on stdout). Default: when stdout is a terminal or this runs in
        a Jupyter kernel.
    **kwargs
        Passed to ``dask.compute`` (local schedulers) or ``client.compute``.
    """
    from dfits.array.scheduler import compute as compute_local

    if progress is None:
        progress = interactive(sys.stdout)
    client = current_client(*arrays)
    if client is None:
        if not progress:
            return compute_local(*arrays, **kwargs)
        with WorkBar():
            return compute_local(*arrays, **kwargs)

    futures = client.compute(list(arrays), **kwargs)
    if progress:
        from distributed import progress as show
        from distributed.utils import is_kernel

        notebook = bool(is_kernel()) and _has_widgets()
        bar = show(futures, notebook=notebook)
        if notebook and bar is not None:
            from IPython.display import display

            display(bar)
    return tuple(client.gather(futures))
