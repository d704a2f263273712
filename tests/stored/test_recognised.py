"""Each row of :mod:`dfits.stored.recognised`, run through the real dask / xarray call.

Every pattern runs its library call on a dfits array, counts the kernel passes and decodes
per chunk, and compares the values with numpy's on the decoded data. A dask or xarray
release that changes how it calls numpy then fails here, by the pattern's name, instead of
silently decoding every chunk. Each trick has a test that shows the fallback without it.
"""

from __future__ import annotations

import collections
import pathlib
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from dfits.stored import recognised
from dfits.stored.recognised import PATTERNS, TRICKS
from tests.array.helpers import encoded_case, float32_cube, stored_sample

KERNELS = ("sum_count", "integer_sum", "moments", "extrema", "band_sum_count", "band_moments")
T = 0.3  # the threshold of the cut patterns


def _xa(x):
    return xr.DataArray(x, dims=("z", "y", "x"))


def _cut(a, fill=np.nan):
    return np.where(a > T, a, fill)


#: pattern name -> (which array, the library call, numpy's value of it on the decoded data)
CASES = {
    "dask-sum": ("f", lambda x: x.sum(axis=0), lambda a: a.sum(axis=0)),
    "dask-integer-sum": ("i", lambda x: x.sum(axis=0), lambda a: a.sum(axis=0)),
    "dask-nansum": ("f", lambda x: da.nansum(x, axis=0), lambda a: np.nansum(a, axis=0)),
    "dask-mean": ("f", lambda x: x.mean(axis=0), lambda a: a.mean(axis=0)),
    "dask-nanmean": ("f", lambda x: da.nanmean(x, axis=0), lambda a: np.nanmean(a, axis=0)),
    "dask-wide-mean": ("k", lambda x: x.mean(axis=0), lambda a: a.mean(axis=0)),
    "dask-wide-var": ("k", lambda x: x.var(axis=0), lambda a: a.var(axis=0)),
    "dask-var": ("f", lambda x: x.var(axis=0), lambda a: a.var(axis=0)),
    "dask-nanstd": ("f", lambda x: da.nanstd(x, axis=0), lambda a: np.nanstd(a, axis=0)),
    "dask-max": ("f", lambda x: x.max(axis=0), lambda a: a.max(axis=0)),
    "dask-nanmin": ("f", lambda x: da.nanmin(x, axis=(1, 2)), lambda a: np.nanmin(a, (1, 2))),
    "dask-argmax": ("f", lambda x: x.argmax(axis=0), lambda a: a.argmax(axis=0)),
    "dask-nanargmin": ("f", lambda x: da.nanargmin(x, axis=1), lambda a: np.nanargmin(a, 1)),
    "dask-mean-of-squares": ("f", lambda x: (x**2).mean(axis=0), lambda a: (a**2).mean(0)),
    "dask-affine": ("f", lambda x: (x * 2.0 + 1.0).sum(0), lambda a: (a * 2.0 + 1.0).sum(0)),
    "dask-astype-sum": (
        "f",
        lambda x: x.astype(np.float64).sum(axis=0),
        lambda a: a.astype(np.float64).sum(axis=0),
    ),
    "dask-threshold-count": ("f", lambda x: (x > T).sum(axis=0), lambda a: (a > T).sum(0)),
    "dask-threshold-nansum": (
        "f",
        lambda x: da.nansum(da.where(x > T, x, np.nan), axis=0),
        lambda a: np.nansum(_cut(a), axis=0),
    ),
    "dask-threshold-zero-sum": (
        "f",
        lambda x: da.where(x > T, x, 0).sum(axis=0),
        lambda a: _cut(a, 0).sum(axis=0),
    ),
    "dask-threshold-nanmax": (
        "f",
        lambda x: da.nanmax(da.where(x > T, x, np.nan), axis=0),
        lambda a: np.nanmax(_cut(a), axis=0),
    ),
    "dask-threshold-nanstd": (
        "f",
        lambda x: da.nanstd(da.where(x > T, x, np.nan), axis=0),
        lambda a: np.nanstd(_cut(a), axis=0),
    ),
    "dask-count-nonzero": (
        "f",
        lambda x: da.count_nonzero(~da.isnan(x), axis=0),
        lambda a: np.count_nonzero(~np.isnan(a), axis=0),
    ),
    "dask-isnan-sum": ("f", lambda x: da.isnan(x).sum(axis=0), lambda a: np.isnan(a).sum(0)),
    "xarray-skipna-sum": ("f", lambda x: _xa(x).sum("z"), lambda a: np.nansum(a, 0)),
    "xarray-blank-sum": ("b", lambda x: _xa(x).sum("z"), lambda a: np.nansum(a, 0)),
    "xarray-count": ("f", lambda x: _xa(x).count("z"), lambda a: (~np.isnan(a)).sum(0)),
    "xarray-min-count": (
        "f",
        lambda x: _xa(x).sum("z", min_count=1),
        lambda a: np.where(np.isnan(a).all(0), np.nan, np.nansum(a, 0)),
    ),
    "xarray-skipna-mean": ("f", lambda x: _xa(x).mean("z"), lambda a: np.nanmean(a, 0)),
    "xarray-skipna-std": ("f", lambda x: _xa(x).std("z"), lambda a: np.nanstd(a, 0)),
    "xarray-skipna-max": ("f", lambda x: _xa(x).max("z"), lambda a: np.nanmax(a, 0)),
    "xarray-argmax": ("b", lambda x: _xa(x).argmax("z"), lambda a: np.nanargmax(a, 0)),
    "xarray-where-sum": (
        "f",
        lambda x: _xa(x).where(_xa(x) > T).sum("z"),
        lambda a: np.nansum(_cut(a), 0),
    ),
    "xarray-where-count": (
        "f",
        lambda x: _xa(x).where(_xa(x) > T).count("z"),
        lambda a: (a > T).sum(0),
    ),
    "xarray-where-mean": (
        "f",
        lambda x: _xa(x).where(_xa(x) > T).mean("z"),
        lambda a: np.nanmean(_cut(a), 0),
    ),
    "xarray-where-std": (
        "f",
        lambda x: _xa(x).where(_xa(x) > T).std("z"),
        lambda a: np.nanstd(_cut(a), 0),
    ),
    "xarray-where-max": (
        "f",
        lambda x: _xa(x).where(_xa(x) > T).max("z"),
        lambda a: np.nanmax(_cut(a), 0),
    ),
    "xarray-sum-of-squares": ("f", lambda x: (_xa(x) ** 2).sum("z"), lambda a: np.nansum(a**2, 0)),
    "dask-rechunk": ("f", lambda x: x.rechunk((8, 6, 5)), lambda a: a),
}


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    """Float32 with NaN (4 chunks), int16 (3 chunks), scaled int16 with BLANK (3 chunks),
    int64 whose sums along the first axis pass 2**63 (3 chunks)."""
    out = {}
    tmp = tmp_path_factory.mktemp("recognised")
    # a NaN through every plane (xarray's min_count meets an all-NaN slice) and one more
    _, data = float32_cube(tmp, (8, 6, 5), (2, 6, 5), (slice(None), 4, 1), seed=1)
    data[3, 2, 2] = np.nan
    out["f"] = _refresh(tmp / "cube.fits", data, (2, 6, 5))
    for key, encoding in (("i", (16, None, None, None)), ("b", (16, 0.5, 10.0, -7))):
        sub = pathlib.Path(tmp / key)
        sub.mkdir()
        stored = stored_sample(16, encoding[3], seed=2)
        out[key] = encoded_case(sub, stored, encoding, (3, 6, 5))
    (tmp / "k").mkdir()
    wide = np.random.default_rng(3).integers(2**60, 2**62, stored_sample(16, seed=2).shape)
    out["k"] = encoded_case(tmp / "k", wide, (64, None, None, None), (3, 6, 5))
    return out


def _refresh(path, data, chunks):
    from tests.array.helpers import block_array, write_image

    offset = write_image(str(path), data)
    x, _ = block_array(str(path), offset, data.shape, -32, chunks=chunks)
    return x, data


@pytest.fixture
def counted(monkeypatch):
    """Count the kernel passes and the decodes of stored bytes."""
    from dfits import kernels

    calls = collections.Counter()
    for name in (*KERNELS, "decode"):
        real = getattr(kernels, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(kernels, name, spy)
    return calls


def test_every_pattern_has_a_case_and_a_row_in_the_docs():
    assert set(CASES) == {p.name for p in PATTERNS}
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "architecture.md").read_text()
    lines = set(doc.splitlines())
    for row in recognised.markdown_rows():
        assert row in lines, row


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.name for p in PATTERNS])
def test_pattern_runs_its_passes_and_matches_numpy(arrays, counted, pattern):
    which, lazy, oracle = CASES[pattern.name]
    x, ref = arrays[which]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = np.asarray(lazy(x).compute())
        want = oracle(ref)
    tol = {"rtol": 1e-5, "atol": 1e-5} if got.dtype.kind == "f" else {"rtol": 0, "atol": 0}
    np.testing.assert_allclose(got, want, equal_nan=True, **tol)
    chunks = x.npartitions
    decodes = counted.pop("decode", 0)
    assert decodes == pattern.decodes * chunks, f"{pattern.name}: {decodes} decodes"
    expected = pattern.counts()
    expected.pop("decode", None)
    assert set(counted) == set(expected), f"{pattern.name}: {dict(counted)}"
    for kernel, most in expected.items():
        assert 1 <= counted[kernel] <= most * chunks, f"{pattern.name}: {dict(counted)}"


def test_install_fills_every_table_from_the_rows():
    from dfits.stored.cuts import Cut
    from dfits.stored.lazy import RULES
    from dfits.stored.stored import StoredChunk

    recognised.install()
    assert len(StoredChunk.handlers) == 23
    assert set(Cut.handlers) == {np.sum, np.nansum, np.count_nonzero, np.any, np.all, np.where}
    assert set(RULES) == {np.isnan, np.greater, np.greater_equal, np.less, np.less_equal}


# -- tricks ------------------------------------------------------------------------------------


def test_every_trick_names_a_test_that_exists():
    root = pathlib.Path(__file__).parents[2]
    for t in TRICKS:
        path, name = t.test.split("::")
        assert f"def {name}(" in (root / path).read_text(), t.name


def test_trick_flags_without_decoding(arrays, counted, monkeypatch):
    """dask's getitem asks ``flags.owndata`` of every chunk slice: answered without decoding,
    true of the decoded values; answered by decoding (the fallback), each slice decodes."""
    from dfits.stored.stored import StoredChunk

    x, ref = arrays["f"]
    got = x[:, 1:4].sum(axis=0).compute()
    np.testing.assert_allclose(got, ref[:, 1:4].sum(axis=0), rtol=1e-5)
    assert counted["decode"] == 0

    def probe(b):
        a = b.decode()
        for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED"):
            assert b.flags[flag] == a.flags[flag], flag
        return b

    x.map_blocks(probe, dtype=x.dtype).compute()
    counted.clear()
    monkeypatch.setattr(StoredChunk, "flags", property(lambda self: self.decode().flags))
    x[:, 1:4].sum(axis=0).compute()
    assert counted["decode"] == x.npartitions


def test_trick_count_cast_stays_broadcast(tmp_path, monkeypatch):
    """dask's moment_chunk casts its count to int64: a broadcast stays one (the fallback is a
    fresh int64 map per chunk)."""
    from dfits.stored import partials

    casts = []
    real = recognised.count_cast

    def spy(partial, dtype, *args, **kwargs):
        out = real(partial, dtype, *args, **kwargs)
        casts.append((np.dtype(dtype), out is not None and not any(out.strides)))
        return out

    monkeypatch.setattr(partials, "count_cast", spy)
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    x, data = float32_cube(tmp_path, (8, 6, 5), (2, 6, 5), (3, 4, 1), seed=3)
    np.testing.assert_allclose(x.var(axis=0).compute(), data.var(axis=0), rtol=1e-5)
    assert (np.dtype(np.int64), True) in casts
