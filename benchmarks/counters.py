"""Exact counters of every fused path: kernel passes, decodes, bytes read and tasks per chunk.

Timings on a shared machine swing by 2x from run to run, so a lost fast path (a dask, xarray
or numba release that calls numpy differently, and a chunk that decodes instead of answering
from a kernel pass) hides in the noise. These counts do not move unless the path does. For
each row of :data:`dfits.stored.recognised.PATTERNS` (the recognised table of
``docs/architecture.md``) :func:`measure` runs the row's public library call (:data:`CALLS`)
on a small file opened with ``dfits.open`` and counts, over one ``compute()`` on dask's
synchronous scheduler:

* ``passes``: calls of each fused kernel of :mod:`dfits.kernels` (``decode`` apart);
* ``decodes``: calls of ``kernels.decode``, each a whole-chunk native copy;
* ``bytes_read``: bytes the local source mapped or read (``LocalSource.map`` / ``.read``);
* ``tasks``: tasks of the optimised graph of the result (what the scheduler runs).

One function, two users: ``asv_bench/benchmarks/counters.py`` records
:meth:`Counts.per_chunk` as ``track_`` benchmarks (history in asv), and
``tests/test_counters.py`` asserts the exact :class:`Counts` in the default test run, so a
library release that loses a fast path fails CI by the pattern's name.
``tests/stored/test_recognised.py`` checks the values of the same calls against numpy.

Examples
--------
>>> import tempfile
>>> c = measure("dask-sum", tempfile.mkdtemp())
>>> c.per_chunk()
{'kernel_passes': 1.0, 'decodes': 0.0, 'bytes_read': 1.0, 'tasks': 1.5}
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

T = 0.3  # the threshold of the cut patterns
NAN = float("nan")
#: kernels whose calls are fused passes over a chunk's stored values (as tests/conftest.py's)
FUSED = ("band_moments", "band_sum_count", "extrema", "integer_sum", "moments", "sum_count",
         "weighted_sums")  # fmt: skip


def _da():
    import dask.array as da

    return da


def _xa(x):
    import xarray as xr

    return xr.DataArray(x, dims=("z", "y", "x"))


def _xwhere(x):
    a = _xa(x)
    return a.where(a > T)


#: pattern name -> (which file of :func:`write_files`, the public library call)
CALLS: dict[str, tuple[str, Callable]] = {
    "dask-sum": ("f", lambda x: x.sum(axis=0)),
    "dask-integer-sum": ("i", lambda x: x.sum(axis=0)),
    "dask-nansum": ("f", lambda x: _da().nansum(x, axis=0)),
    "dask-mean": ("f", lambda x: x.mean(axis=0)),
    "dask-nanmean": ("f", lambda x: _da().nanmean(x, axis=0)),
    "dask-wide-mean": ("k", lambda x: x.mean(axis=0)),
    "dask-wide-var": ("k", lambda x: x.var(axis=0)),
    "dask-var": ("f", lambda x: x.var(axis=0)),
    "dask-nanstd": ("f", lambda x: _da().nanstd(x, axis=0)),
    "dask-max": ("f", lambda x: x.max(axis=0)),
    "dask-nanmin": ("f", lambda x: _da().nanmin(x, axis=(1, 2))),
    "dask-argmax": ("f", lambda x: x.argmax(axis=0)),
    "dask-nanargmin": ("f", lambda x: _da().nanargmin(x, axis=1)),
    "dask-mean-of-squares": ("f", lambda x: (x**2).mean(axis=0)),
    "dask-affine": ("f", lambda x: (x * 2.0 + 1.0).sum(axis=0)),
    "dask-astype-sum": ("f", lambda x: x.astype(np.float64).sum(axis=0)),
    "dask-threshold-count": ("f", lambda x: (x > T).sum(axis=0)),
    "dask-threshold-nansum": ("f", lambda x: _da().nansum(_da().where(x > T, x, NAN), axis=0)),
    "dask-threshold-zero-sum": ("f", lambda x: _da().where(x > T, x, 0).sum(axis=0)),
    "dask-threshold-nanmax": ("f", lambda x: _da().nanmax(_da().where(x > T, x, NAN), axis=0)),
    "dask-threshold-nanstd": ("f", lambda x: _da().nanstd(_da().where(x > T, x, NAN), axis=0)),
    "dask-count-nonzero": ("f", lambda x: _da().count_nonzero(~_da().isnan(x), axis=0)),
    "dask-isnan-sum": ("f", lambda x: _da().isnan(x).sum(axis=0)),
    "xarray-skipna-sum": ("f", lambda x: _xa(x).sum("z")),
    "xarray-blank-sum": ("b", lambda x: _xa(x).sum("z")),
    "xarray-count": ("f", lambda x: _xa(x).count("z")),
    "xarray-min-count": ("f", lambda x: _xa(x).sum("z", min_count=1)),
    "xarray-skipna-mean": ("f", lambda x: _xa(x).mean("z")),
    "xarray-skipna-std": ("f", lambda x: _xa(x).std("z")),
    "xarray-skipna-max": ("f", lambda x: _xa(x).max("z")),
    "xarray-argmax": ("b", lambda x: _xa(x).argmax("z")),
    "xarray-where-sum": ("f", lambda x: _xwhere(x).sum("z")),
    "xarray-where-count": ("f", lambda x: _xwhere(x).count("z")),
    "xarray-where-mean": ("f", lambda x: _xwhere(x).mean("z")),
    "xarray-where-std": ("f", lambda x: _xwhere(x).std("z")),
    "xarray-where-max": ("f", lambda x: _xwhere(x).max("z")),
    "xarray-sum-of-squares": ("f", lambda x: (_xa(x) ** 2).sum("z")),
    "dask-rechunk": ("f", lambda x: x.rechunk((8, 6, 5))),
}

#: file -> chunks: float32 with NaN (4 chunks), int16, scaled int16 with BLANK and int64 whose
#: sums along the first axis pass 2**63 (3 chunks each)
CHUNKS = {"f": (2, 6, 5), "i": (3, 6, 5), "b": (3, 6, 5), "k": (3, 6, 5)}


def write_files(where: str | os.PathLike[str]) -> dict[str, str]:
    """Write (or reuse) the four small images; return ``{key: path}``."""
    from astropy.io import fits

    rng = np.random.default_rng(1)
    f = rng.standard_normal((8, 6, 5)).astype(np.float32)
    f[:, 4, 1] = f[3, 2, 2] = np.nan  # a NaN through every plane (xarray's min_count) and one
    i = np.random.default_rng(2).integers(-1000, 1000, (9, 6, 5)).astype(np.int16)
    b = i.copy()
    b[0, 1, 2] = b[4, :, 3] = -7
    k = np.random.default_rng(3).integers(2**60, 2**62, (9, 6, 5))
    cards = {"b": {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -7}}
    out = {}
    for key, data in {"f": f, "i": i, "b": b, "k": k}.items():
        path = Path(where) / f"counters-{key}.fits"
        if not path.exists():
            hdu = fits.PrimaryHDU(data)
            for card, value in cards.get(key, {}).items():
                hdu.header[card] = value  # stored integers kept: the cards only describe them
            hdu.writeto(path.with_suffix(".part"), overwrite=True)
            path.with_suffix(".part").replace(path)
        out[key] = str(path)
    return out


@dataclass(frozen=True)
class Counts:
    """What one ``compute()`` of a pattern's call cost, in all (see the module docstring)."""

    chunks: int
    passes: dict[str, int] = field(default_factory=dict)
    decodes: int = 0
    bytes_read: int = 0
    data_bytes: int = 0
    tasks: int = 0

    def per_chunk(self) -> dict[str, float]:
        """Fused passes, decodes and tasks per chunk; bytes read per stored data byte."""
        return {
            "kernel_passes": sum(self.passes.values()) / self.chunks,
            "decodes": self.decodes / self.chunks,
            "bytes_read": self.bytes_read / self.data_bytes,
            "tasks": self.tasks / self.chunks,
        }


@contextlib.contextmanager
def counting() -> Iterator[dict[str, int]]:
    """Count fused kernel calls, decodes and bytes mapped or read while the block runs."""
    from dfits import kernels
    from dfits.io.local import LocalSource

    calls: dict[str, int] = {}
    saved = [(kernels, name, getattr(kernels, name)) for name in (*FUSED, "decode")]
    saved += [(LocalSource, name, getattr(LocalSource, name)) for name in ("map", "read")]

    def spy(name, real, nbytes_at=None):
        def run(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            if nbytes_at is not None:  # (self, offset, nbytes): bytes asked for
                calls["bytes"] = calls.get("bytes", 0) + max(int(args[nbytes_at]), 0)
            return real(*args, **kwargs)

        return run

    try:
        for owner, name, real in saved:
            setattr(owner, name, spy(name, real, 2 if owner is LocalSource else None))
        yield calls
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)


def tasks_of(result) -> int:
    """Tasks of ``result``'s optimised graph (a dask array, or an xarray object's data)."""
    import dask

    data = getattr(result, "variable", None)
    (opt,) = dask.optimize(result if data is None else data.data)
    return len(opt.__dask_graph__())


def measure(name: str, where: str | os.PathLike[str]) -> Counts:
    """Run pattern ``name``'s library call once on its file in ``where`` and count it."""
    import dask

    import dfits

    key, call = CALLS[name]
    path = write_files(where)[key]
    hdu = dfits.open(path, chunks=CHUNKS[key])[0]
    x = hdu.data
    result = call(x)
    tasks = tasks_of(result)
    with counting() as calls, warnings.catch_warnings(), dask.config.set(scheduler="sync"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
        result.compute()
    return Counts(
        chunks=x.npartitions,
        passes={k: calls[k] for k in FUSED if k in calls},
        decodes=calls.get("decode", 0),
        bytes_read=calls.get("bytes", 0),
        data_bytes=x.size * abs(int(hdu.header["BITPIX"])) // 8,
        tasks=tasks,
    )


def measure_all(where: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """:meth:`Counts.per_chunk` of every pattern (what the asv ``track_`` benchmarks read)."""
    Path(where).mkdir(parents=True, exist_ok=True)
    return {name: measure(name, where).per_chunk() for name in CALLS}
