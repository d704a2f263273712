"""``dfits warm`` (``dfits.kernels.warm``): the common set covers the everyday first calls, and
the cache's housekeeping (stale entries of older versions, ``--clear``).

Processes that compile get their own empty ``NUMBA_CACHE_DIR`` (as in ``test_cache.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from astropy.io import fits

from dfits.cli import main
from dfits.demo import make_cube
from dfits.kernels import _cache
from tests.kernels.test_cache import _env, _files

#: The everyday first calls on a float32 cube: ``dfits stats``, the accessor's moment 0, the
#: benchmark's ``data.sum(axis=0)``, the demo's first calls and ``.compute()``.
FIRST_CALLS = r"""
import sys
import dask, dask.array as da, numpy as np, xarray as xr
import dfits
from dfits.cli import main
from dfits.demo import make_cube
path = sys.argv[1]
assert main(["stats", "--quiet", path]) == 0
d = xr.open_dataarray(path, engine="dfits")
d.fits.moment(0, dim=d.dims[0]).compute()
x = dfits.open(path)[0].data
with dask.config.set(scheduler="threads"):
    da.compute(x.sum(axis=0), da.nanargmax(x, axis=0), da.nansum(x, axis=0),
               da.nanmean(x, axis=(1, 2)), da.nanmax(x), da.nanstd(x), x.compute())
"""

#: The smoothing's first calls on a float32 cube with a spectral axis: the smoothed
#: cube's moment 0 and values, a block average, the spatially smoothed cube's moment 0.
SMOOTH_CALLS = r"""
import sys
import dask, xarray as xr
f = xr.open_dataarray(sys.argv[1], engine="dfits").fits
with dask.config.set(scheduler="threads"):
    s = f.spectral_smooth(2.0)
    dask.compute(s.fits.moment(0).data, s.data, f.downsample_axis(2).data,
                 f.spatial_smooth(0.5, raise_error_jybm=False).fits.moment(0).data)
"""


def _python(code: str, *args: str, cache: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=_env(cache), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.slow  # compiles float32's common kernels: ~60 s of CPU
def test_common_set_covers_the_first_calls(tmp_path):
    """After warming float32's common kernels, a fresh process running the everyday first
    calls on a float32 cube, or smoothing one, loads every kernel: nothing is compiled or
    written."""
    cache = tmp_path / "cache"
    _python(
        "from dfits.kernels.warm import warm_encoding; warm_encoding((-32, None, None, None))",
        cache=cache,
    )
    warmed = _files(cache)
    assert warmed
    path = tmp_path / "cube.fits"
    fits.PrimaryHDU(np.random.default_rng(0).random((6, 5, 4), np.float32)).writeto(path)
    _python(FIRST_CALLS, str(path), cache=cache)
    assert _files(cache) == warmed
    spectral = make_cube(str(tmp_path / "spectral.fits"), shape=(12, 5, 4))
    _python(SMOOTH_CALLS, spectral, cache=cache)
    assert _files(cache) == warmed


def _fake_cache(where: Path) -> dict[str, bool]:
    """Cache file names of this version, an older one and another Python; True: current."""
    fp = _cache.fingerprint()
    names = {
        f"_cache.sums._sum_rows.rows[16_raw_False_True-False]-{fp}-67.py311.nbi": True,
        f"_cache.sums._sum_rows.rows[16_raw_False_True-False]-{fp}-67.py311.1.nbc": True,
        f"sums._sum_rows.rows[16_raw_False_True-False]-{fp}.lock": True,
        f"_cache.sums._sum_rows.rows[16_raw_False_True-False]-{fp}-67.py312.nbi": True,
        "_cache.sums._sum_rows.rows[16_raw_False_True-False]-0123456789ab-67.py311.nbi": False,
        "_cache.sums._sum_rows.rows[16_raw_False_True-False]-0123456789ab-67.py311.2.nbc": False,
        "sums._sum_rows.rows[16_raw_False_True-False]-0123456789ab.lock": False,
        "asciiparse._parse_floats-93.py311.nbi": False,  # before the templates
        "asciiparse._trim-37.py311.1.nbc": False,
    }
    for name in names:
        (where / name).write_bytes(b"x")
    (where / "checksum.cpython-311.pyc").write_bytes(b"not ours")  # __pycache__ neighbours
    return names


def test_prune_removes_only_older_versions(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(tmp_path))
    names = _fake_cache(tmp_path)
    assert _cache.prune() == 5
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {n for n, current in names.items() if current} | {"checksum.cpython-311.pyc"}


def test_warm_clear_removes_every_dfits_entry(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(tmp_path))
    _fake_cache(tmp_path)
    assert main(["warm", "--clear"]) == 0
    assert "removed 9 " in capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} == {"checksum.cpython-311.pyc"}


def test_housekeeping_without_a_cache_or_with_unremovable_files(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "cache_dir", lambda: None)
    assert _cache.prune() == 0
    assert _cache.clear() == 0
    # an entry that cannot be removed (here a directory of that name) is left, silently
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(tmp_path))
    (tmp_path / "_cache.x-0123456789ab-1.py311.nbi").mkdir()
    assert _cache.clear() == 0


#: The first calls the shared kernels serve: a table to pandas, read and aggregated, and the
#: exact median and mad_std of a float32 and a float64 cube.
SHARED_CALLS = r"""
import sys
import dask, numpy as np
import dfits
from dfits.cube.medians import median_deviation, nanmedian
table = dfits.open(sys.argv[1])[1]
table.to_pandas(); table.read()
dask.compute(table.aggregate("sum"), table.aggregate("nanmean"))
for path in sys.argv[2:]:
    x = dfits.open(path)[0].data
    dask.compute(nanmedian(x), median_deviation(x))
"""


@pytest.mark.slow  # compiles the shared kernels and float32/float64's medians: ~30 s of CPU
def test_shared_kernels_cover_tables_and_medians(tmp_path):
    cache = tmp_path / "cache"
    _python("from dfits.kernels.warm import _warm_shared; _warm_shared()", cache=cache)
    warmed = _files(cache)
    table = tmp_path / "t.fits"
    cols = [fits.Column(n, f, array=np.arange(5).astype(t))
            for n, f, t in (("E", "E", ">f4"), ("D", "D", ">f8"), ("J", "J", ">i4"))]  # fmt: skip
    fits.BinTableHDU.from_columns(cols).writeto(table)
    cubes = []
    for dtype in (np.float32, np.float64):
        cubes.append(tmp_path / f"{np.dtype(dtype).name}.fits")
        fits.PrimaryHDU(np.random.default_rng(0).random((6, 5, 4)).astype(dtype)).writeto(cubes[-1])
    _python(SHARED_CALLS, str(table), *map(str, cubes), cache=cache)
    added = set(_files(cache)) - set(warmed)
    # the cubes' own decode kernels are the encodings' (the common set), not shared ones
    assert not [f for f in added if "fielddecode" in f or "fieldsums" in f or "histogram" in f]


#: Reductions of a quantised float32 image, chunks of whole row tiles and chunks across them.
QUANTISED_CALLS = r"""
import sys
import dask, dask.array as da, numpy as np
import dfits
from dfits.array import reduce, weighted_sums
with dask.config.set(scheduler="threads"):
    for chunks in ((4, 77), (5, 40)):
        x = dfits.open(sys.argv[1], chunks=chunks)[1].data
        dask.compute(x.sum(), np.nanmax(x), np.nanmin(x, axis=0), np.nanmean(x, axis=1),
                     x.std(), np.nanstd(x, axis=0), reduce(x, "nanvar", axis=1),
                     weighted_sums(x, 0, np.ones(x.shape[0])), da.nanargmax(x, axis=0), x)
        masked = da.where(x > 100, x, np.nan)
        dask.compute((x > 100).sum(), (x > 100).sum(axis=0), np.nansum(masked, axis=0),
                     np.nanmean(masked, axis=1), np.nanvar(masked, axis=0),
                     np.nanmax(masked, axis=1), np.nanmin(masked, axis=0))
"""

#: the kernel families the tiles task warms (cache files are named by module and function)
TILE_FAMILIES = ("tilereduce.", "tilemoments.", "tilesums.", "tilebands.", "tilegroup._place")


@pytest.mark.slow  # compiles the quantised tiles' float32 reductions: ~60 s of CPU
def test_tiles_task_covers_quantised_reductions(tmp_path):
    """After the tiles task of ``dfits warm``, a fresh process reducing a quantised float32
    image (sums, extremes, means, variances, a moment map's sums, value bands, its values;
    chunks on and off tile boundaries) compiles none of those kernels."""
    from dfits.kernels.warm import _TILES

    cache = tmp_path / "cache"
    warm_code = f"from dfits.kernels.warm import _warm_task; _warm_task({_TILES!r})"
    _python(warm_code, cache=cache)
    warmed = _files(cache)
    assert any(family in name for name in warmed for family in TILE_FAMILIES)
    data = np.random.default_rng(0).normal(100, 5, (20, 77)).astype(np.float32)
    data[3, 4] = np.nan
    path = tmp_path / "q.fits.fz"
    fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(data, quantize_method=2)]).writeto(path)
    _python(QUANTISED_CALLS, str(path), cache=cache)
    new = set(_files(cache)) - set(warmed)
    assert not [name for name in new if any(family in name for family in TILE_FAMILIES)]


#: Compressed writes of a numpy and a dask image per dtype and algorithm, checksummed
WRITE_CALLS = r"""
import sys
import dask.array as da, numpy as np
import dfits
for dtype in ("float32", "float64", "int16", "int32"):
    x = (np.random.default_rng(0).normal(100, 5, (40, 70)) * 10).astype(dtype)
    for algorithm in ("RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS"):
        for data in (x, da.from_array(x, chunks=(16, 70))):
            dfits.to_fits(data, f"{sys.argv[1]}/{dtype}-{algorithm}.fits", overwrite=True,
                          compression=algorithm)
"""

#: the kernel families the writes task warms
WRITE_FAMILIES = ("floattiles.", "inttiles.", "checksum.")


@pytest.mark.slow  # compiles the write kernels of four dtypes: ~40 s of CPU
def test_writes_task_covers_compressed_writes(tmp_path):
    """After the writes task of ``dfits warm``, a fresh process writing compressed float32,
    float64, int16 and int32 images (every lossless-or-quantised algorithm but PLIO_1 and
    HCOMPRESS_1) compiles nothing."""
    from dfits.kernels.warm import _WRITES

    cache = tmp_path / "cache"
    _python(f"from dfits.kernels.warm import _warm_task; _warm_task({_WRITES!r})", cache=cache)
    warmed = _files(cache)
    assert any(family in name for name in warmed for family in WRITE_FAMILIES)
    _python(WRITE_CALLS, str(tmp_path), cache=cache)
    new = set(_files(cache)) - set(warmed)
    assert not new, new  # nothing compiled at all
