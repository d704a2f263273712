"""Exact counters of every fused path of the recognised table (``docs/architecture.md``).

``benchmarks/counters.py`` measures them (one function, which ``tests/test_counters.py``
asserts exactly in the default test run): for each pattern, the library call on a small file
and, per chunk, the fused kernel passes, the decodes (whole-chunk native copies) and the tasks
of the optimised graph, and the bytes read per stored data byte. They do not depend on the
machine's load, so their history in asv shows the commit where a fast path was lost, which a
timing cannot on a machine whose timings swing by 2x. ``setup_cache`` measures every pattern
once per run; each ``track_`` reads its number.
"""

from __future__ import annotations

from typing import ClassVar

from . import bench_script, data_dir

counters = bench_script("counters")


class FusedPathCounters:
    params: ClassVar[list] = [list(counters.CALLS)]
    param_names: ClassVar[list] = ["pattern"]
    timeout = 600

    def setup_cache(self):
        return counters.measure_all(data_dir() / "counters")

    setup_cache.timeout = 900

    def track_kernel_passes(self, counts, pattern):
        return counts[pattern]["kernel_passes"]

    track_kernel_passes.unit = "passes per chunk"

    def track_decodes(self, counts, pattern):
        return counts[pattern]["decodes"]

    track_decodes.unit = "decodes per chunk"

    def track_bytes_read(self, counts, pattern):
        return counts[pattern]["bytes_read"]

    track_bytes_read.unit = "bytes read per data byte"

    def track_tasks(self, counts, pattern):
        return counts[pattern]["tasks"]

    track_tasks.unit = "tasks per chunk"
