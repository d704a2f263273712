"""Exact counters of every fused path (issue 50), asserted in the default test run.

``benchmarks/counters.py`` runs each row of the recognised table (``dfits.stored.recognised``)
through its public dask or xarray call on a small file and counts fused kernel passes,
decodes, bytes read and the tasks of the optimised graph; asv records the same numbers
(``asv_bench/benchmarks/counters.py``). Here they must be exactly :data:`EXPECTED`: a dask,
xarray or numba release that loses a fast path (a chunk decoded instead of answered from a
pass, a second pass, a chunk read twice, extra tasks) fails by the pattern's name.
``tests/stored/test_recognised.py`` checks the values of the same calls against numpy and the
table's upper bounds; this file pins the exact figures of the versions installed. When a
release changes a figure on purpose (a better path), update its row here and say why in the
commit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from dfits.stored.recognised import PATTERNS

ROOT = Path(__file__).resolve().parents[1]

#: pattern -> (fused kernel calls over all chunks, decodes, tasks of the optimised graph);
#: the float32 file has 4 chunks, the others 3
EXPECTED: dict[str, tuple[dict[str, int], int, int]] = {
    "dask-sum": ({"sum_count": 4}, 0, 6),
    "dask-integer-sum": ({"integer_sum": 3}, 0, 5),
    "dask-nansum": ({"sum_count": 4}, 0, 6),
    "dask-mean": ({"sum_count": 4}, 0, 6),
    "dask-nanmean": ({"sum_count": 4}, 0, 6),
    "dask-wide-mean": ({"sum_count": 3}, 0, 5),
    "dask-wide-var": ({"moments": 3, "sum_count": 3}, 0, 5),
    "dask-var": ({"moments": 4, "sum_count": 4}, 0, 6),
    "dask-nanstd": ({"moments": 4, "sum_count": 4}, 0, 7),
    "dask-max": ({"extrema": 4}, 0, 6),
    "dask-nanmin": ({"extrema": 4}, 0, 9),
    "dask-argmax": ({"extrema": 4}, 0, 10),
    "dask-nanargmin": ({"extrema": 4}, 0, 9),
    # (the extrema run only where a slice's sum of squares is not finite: 2 per chunk here)
    "dask-mean-of-squares": ({"extrema": 8, "moments": 4}, 0, 6),
    "dask-affine": ({"sum_count": 4}, 0, 6),
    "dask-astype-sum": ({"sum_count": 4}, 0, 6),
    "dask-threshold-count": ({"band_sum_count": 4}, 0, 6),
    "dask-threshold-nansum": ({"band_sum_count": 4}, 0, 6),
    "dask-threshold-zero-sum": ({"band_sum_count": 4}, 0, 6),
    "dask-threshold-nanmax": ({"extrema": 4}, 0, 6),
    "dask-threshold-nanstd": ({"band_moments": 4, "band_sum_count": 4}, 0, 7),
    "dask-count-nonzero": ({"sum_count": 4}, 0, 6),
    "dask-isnan-sum": ({"sum_count": 4}, 0, 6),
    "xarray-skipna-sum": ({"sum_count": 4}, 0, 6),
    "xarray-blank-sum": ({"sum_count": 3}, 0, 5),
    "xarray-count": ({"sum_count": 4}, 0, 6),
    # (dask does not fuse the sum and the NaN count into one task: 7 passes of 8 allowed)
    "xarray-min-count": ({"sum_count": 7}, 0, 20),
    "xarray-skipna-mean": ({"sum_count": 4}, 0, 6),
    "xarray-skipna-std": ({"moments": 4, "sum_count": 4}, 0, 7),
    "xarray-skipna-max": ({"extrema": 4}, 0, 6),
    "xarray-argmax": ({"extrema": 3}, 0, 8),
    "xarray-where-sum": ({"band_sum_count": 4}, 0, 6),
    "xarray-where-count": ({"band_sum_count": 4}, 0, 6),
    "xarray-where-mean": ({"band_sum_count": 4}, 0, 6),
    "xarray-where-std": ({"band_moments": 4, "band_sum_count": 4}, 0, 7),
    "xarray-where-max": ({"extrema": 4}, 0, 6),
    "xarray-sum-of-squares": ({"moments": 4}, 0, 6),
    "dask-rechunk": ({}, 4, 6),  # the one row whose pass is the decode (into place)
}


def _counters():
    name = "dfits_bench_counters"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "counters.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


counters = _counters()


@pytest.fixture(scope="module")
def where(tmp_path_factory):
    return tmp_path_factory.mktemp("counters")


def test_every_recognised_pattern_is_counted():
    names = {p.name for p in PATTERNS}
    assert set(counters.CALLS) == names
    assert set(EXPECTED) == names


@pytest.mark.parametrize("name", list(EXPECTED))
def test_fused_path_counts_are_exact(name, where):
    got = counters.measure(name, where)
    passes, decodes, tasks = EXPECTED[name]
    assert (got.passes, got.decodes, got.tasks) == (passes, decodes, tasks), name
    assert got.bytes_read == got.data_bytes, f"{name}: stored bytes read more than once"


def test_track_figures_are_per_chunk(where):
    """What asv records: passes, decodes and tasks per chunk, bytes per stored byte."""
    got = counters.measure("dask-var", where).per_chunk()
    assert got == {"kernel_passes": 2.0, "decodes": 0.0, "bytes_read": 1.0, "tasks": 1.5}
