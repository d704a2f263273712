"""A process LocalCluster for the distributed tests: fresh worker processes, no dashboards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def process_cluster(n_workers: int = 2, memory_limit: str = "auto") -> Iterator[tuple[Any, Any]]:
    """``(cluster, client)`` of ``n_workers`` one-thread worker processes (none has this
    test's files in its descriptor cache, nor its kernels compiled), each held to
    ``memory_limit`` by its nanny."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield cluster, client
