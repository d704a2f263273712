"""``compute`` with the progress display dask users expect.

* a ``distributed.Client`` is the scheduler dask would use → the work is submitted with
  ``client.compute`` and followed with ``distributed.progress`` (a widget in a notebook when
  ipywidgets is installed, else a text bar);
* otherwise (threads, processes, synchronous) → ``dask.compute`` under
  ``dask.diagnostics.ProgressBar``.

By default progress is shown only where it is watched (a Jupyter kernel or a terminal,
:func:`dfits.progress.interactive`): a script logging to a file gets no ``\r`` updates.

>>> import dask.array as da
>>> compute(da.ones(4, chunks=2).sum(), progress=False)
(np.float64(4.0),)
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from dfits.progress import interactive

__all__ = ["compute", "current_client"]


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
        else ``dask.diagnostics.ProgressBar`` (on stdout). Default: when stdout is a terminal
        or this runs in a Jupyter kernel.
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
        from dask.diagnostics import ProgressBar

        with ProgressBar():
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
