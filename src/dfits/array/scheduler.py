"""The one place dfits' own entry points choose a dask scheduler.

dask's own choice (``dask.base.get_scheduler``) imports ``distributed`` on every compute that
names no scheduler, and on every compute that names one by a string such as ``"threads"``,
only to look for a client: about 0.2 s and 40 MB in a fresh process (a CLI call, a script, a
worker). Yet a client can exist only once something has imported ``distributed``. So while
``distributed`` is not in ``sys.modules``, :func:`scheduler` makes dask's choice itself, from
what dask documents: the configured ``scheduler`` (a callable, or one of the local names of
dask's scheduling docs), else the collections' own default (``__dask_scheduler__``: threads
for arrays and delayed). Once ``distributed`` is loaded, dask decides as always, and a
client in use is found.

>>> import dask.array as da
>>> compute(da.ones(4, chunks=2).sum())
(np.float64(4.0),)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["compute", "scheduler"]


def _local(name: str) -> Callable[..., Any] | None:
    """The local scheduler dask's docs name ``name`` (None for any other name)."""
    if name in ("threads", "threading"):
        from dask.threaded import get

        return get
    if name in ("sync", "synchronous", "single-threaded"):
        from dask.local import get_sync

        return get_sync
    if name in ("processes", "multiprocessing"):
        from dask.multiprocessing import get as get_processes

        return get_processes
    return None


def scheduler(*collections: Any, requested: Any = None) -> Any:
    """The scheduler dask would compute ``collections`` on, chosen without importing
    ``distributed`` when nothing has (then no client can exist).

    Parameters
    ----------
    *collections : objects
        The dask collections among them bring their own default scheduler when none is
        configured.
    requested : str or callable, optional
        A ``scheduler=`` the caller asked for; default: ``dask.config``'s ``scheduler``.

    Returns
    -------
    callable
        A scheduler ``get`` function (a client's ``get`` when a client is in use).

    >>> import dask.array as da
    >>> from dask.threaded import get
    >>> scheduler(da.ones(2)) is get
    True
    """
    import dask

    # plain values, lists and dicts of collections count as dask's own default (threads)
    collections = tuple(c for c in collections if dask.is_dask_collection(c))
    asked = requested if requested is not None else dask.config.get("scheduler", None)
    if "distributed" not in sys.modules:
        if callable(asked):
            return asked
        if asked is None:
            return _default(collections)
        if isinstance(asked, str) and _local(asked.lower()) is not None:
            return _local(asked.lower())
    from dask.base import get_scheduler

    chosen = get_scheduler(scheduler=requested, collections=list(collections) or None)
    return chosen if chosen is not None else _default(collections)


def _default(collections: tuple[Any, ...]) -> Any:
    """The first collection's own scheduler, else dask's threads (its default for arrays)."""
    for c in collections:
        get = getattr(c, "__dask_scheduler__", None)
        if get is not None:
            return get
    from dask.threaded import get

    return get


def compute(*collections: Any, **kwargs: Any) -> tuple[Any, ...]:
    """``dask.compute(*collections, **kwargs)`` on :func:`scheduler`'s choice (a
    ``scheduler=`` given is honoured): one graph, so shared reads happen once."""
    import dask

    kwargs["scheduler"] = scheduler(*collections, requested=kwargs.get("scheduler"))
    return dask.compute(*collections, **kwargs)
