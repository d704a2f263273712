"""Plain dask reductions run the fused kernels on stored chunks and agree with astropy."""

from __future__ import annotations

import pickle
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.array.helpers import (
    astropy_data,
    block_array,
    float32_cube,
    replan,
    sampled_pairs,
    write_image,
)
from tests.profiles import examples

CASES = {
    "f32-nan": (-32, None, None, None),
    "f64": (-64, None, None, None),
    "i16-scaled-blank": (16, 0.5, 3.0, -5),
    "u16": (16, 1, 32768, None),
    "i32": (32, None, None, None),
}


def _stored_values(bitpix, rng, shape, blank):
    if bitpix < 0:
        data = rng.standard_normal(shape).astype(f"f{-bitpix // 8}")
        data[1, 2, 3] = np.nan
        return data
    data = rng.integers(-1000, 1000, shape).astype(f"i{bitpix // 8}")
    if blank is not None:
        data[1, 2, 3] = blank
    return data


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request, tmp_path):
    bitpix, bscale, bzero, blank = CASES[request.param]
    rng = np.random.default_rng(3)
    data = _stored_values(bitpix, rng, (20, 30, 40), blank)
    path = str(tmp_path / "img.fits")
    offset = write_image(path, data, bscale, bzero, blank)
    x, _ = block_array(path, offset, data.shape, bitpix, bscale, bzero, blank, chunks=(7, 30, 40))
    return x, astropy_data(path)


REDUCTIONS = {
    "sum": (lambda x: x.sum(), lambda a: np.sum(a, dtype=float)),
    "nansum-axis0": (lambda x: da.nansum(x, axis=0), lambda a: np.nansum(a, axis=0, dtype=float)),
    "mean-axis0": (lambda x: x.mean(axis=0), lambda a: a.astype(float).mean(axis=0)),
    "nanmean": (lambda x: da.nanmean(x), lambda a: np.nanmean(a.astype(float))),
    "np.nanmean-12": (
        lambda x: np.nanmean(x, axis=(1, 2)),
        lambda a: np.nanmean(a.astype(float), axis=(1, 2)),
    ),
    "std": (lambda x: x.std(), lambda a: a.astype(float).std()),
    "nanstd-02": (
        lambda x: da.nanstd(x, axis=(0, 2)),
        lambda a: np.nanstd(a.astype(float), axis=(0, 2)),
    ),
    "slice-var": (
        lambda x: x[3:17].var(axis=(1, 2)),
        lambda a: a[3:17].astype(float).var(axis=(1, 2)),
    ),
    "nanvar-ddof": (lambda x: da.nanvar(x, ddof=1), lambda a: np.nanvar(a.astype(float), ddof=1)),
    "min": (lambda x: x.min(), lambda a: np.min(a)),
    "np.nanmax": (lambda x: np.nanmax(x), lambda a: np.nanmax(a)),
    "nanmin-axis2": (lambda x: da.nanmin(x, axis=2), lambda a: np.nanmin(a, axis=2)),
    "argmax-axis0": (lambda x: x.argmax(axis=0), lambda a: np.argmax(a, axis=0)),
    "nanargmin": (lambda x: da.nanargmin(x), lambda a: np.nanargmin(a)),
    "strided-sum": (
        lambda x: x[::2, 1:, ::3].sum(axis=1),
        lambda a: a[::2, 1:, ::3].astype(float).sum(axis=1),
    ),
    # a box inside the cube: its spectrum, moment map, noise and peaks
    "cutout-spectrum": (
        lambda x: x[:, 4:20, 5:33].mean(axis=(1, 2)),
        lambda a: a[:, 4:20, 5:33].astype(float).mean(axis=(1, 2)),
    ),
    "cutout-moment0": (
        lambda x: da.nansum(x[:, 4:20, 5:33], axis=0),
        lambda a: np.nansum(a[:, 4:20, 5:33], axis=0, dtype=float),
    ),
    "cutout-nanstd": (
        lambda x: da.nanstd(x[:, 4:20, 5:33], axis=(1, 2)),
        lambda a: np.nanstd(a[:, 4:20, 5:33].astype(float), axis=(1, 2)),
    ),
    "cutout-nanmax": (
        lambda x: da.nanmax(x[:, 4:20, 5:33], axis=(1, 2)),
        lambda a: np.nanmax(a[:, 4:20, 5:33], axis=(1, 2)),
    ),
    "cutout-argmin-axis0": (
        lambda x: x[:, 4:20, 5:33].argmin(axis=0),
        lambda a: np.argmin(a[:, 4:20, 5:33], axis=0),
    ),
}


@pytest.fixture(params=["large-only", "every"])
def stacking(request, monkeypatch):
    """Run once as shipped and once with every keepdims sum partial added by a PartialStack."""
    from dfits.stored import partials

    if request.param == "every":
        monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    return request.param


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_are_fused_and_match_astropy(case, no_decode, stacking, name):
    x, ref = case
    lazy, oracle = REDUCTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = lazy(x).compute()
        want = oracle(ref)
    rtol = 1e-5 if ref.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)


def test_float32_moment_map_partials_stay_float32(tmp_path, monkeypatch):
    # dask's combine casts every partial to float32 before adding, so the chunk step hands
    # it float32 straight from the kernel (no float64 copy of each map); same values
    from dfits.stored.stored import StoredChunk

    x, data = float32_cube(tmp_path, (24, 16, 20), (5, 16, 20), (3, 4, 5), seed=5)
    seen = []
    plain = StoredChunk.handlers[np.sum]

    def spy(*args, **kwargs):
        out = plain(*args, **kwargs)
        seen.append(out.dtype)
        return out

    monkeypatch.setitem(StoredChunk.handlers, np.sum, spy)
    got = x.sum(axis=0).compute()
    assert seen
    assert set(seen) == {np.dtype(np.float32)}
    assert got.dtype == np.float32
    assert type(got) is np.ndarray
    # the reference: float64 sums of each 5-plane chunk, rounded, then added in float32
    parts = [data[i : i + 5].astype(float).sum(axis=0).astype(np.float32) for i in range(0, 24, 5)]
    want = parts[0]
    for p in parts[1:]:
        want = want + p
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    assert np.isnan(got[4, 5])
    assert np.isfinite(np.delete(got.ravel(), 4 * 20 + 5)).all()
    # dask's mean of float32 sums into float32 as well (its combine casts the same way)
    with np.errstate(invalid="ignore"):
        want_mean = data.astype(float).mean(axis=0)
    got_mean = x.mean(axis=0).compute()
    np.testing.assert_allclose(got_mean, want_mean, rtol=1e-6, atol=1e-6, equal_nan=True)
    # an explicit float64 sum keeps float64 partials; float16 is cast from them
    seen.clear()
    x.sum(axis=0, dtype=np.float64).compute()
    assert set(seen) == {np.dtype(np.float64)}
    half = x.sum(axis=0, dtype=np.float16).compute()
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, want, rtol=2e-3, atol=1e-2, equal_nan=True)


def test_compute_returns_plain_numpy(case, stacking):
    x, ref = case
    for arr in (x, x[2:5], x[4, 5], x.rechunk(-1)):
        out = arr.compute()
        assert type(out) is np.ndarray
        assert out.dtype == ref.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for red in (x.sum(axis=0), x.sum(axis=(0, 2), keepdims=True), da.nanmean(x, axis=0)):
            assert type(red.compute()) is np.ndarray
    np.testing.assert_array_equal(x.compute(), ref)
    np.testing.assert_array_equal(x[::3, 5, ::-2].compute(), ref[::3, 5, ::-2])


def test_single_chunk_compute_is_numpy(tmp_path):
    data = np.arange(12, dtype=">i2").reshape(3, 4)
    path = str(tmp_path / "one.fits")
    offset = write_image(path, data, 2.0, 1.0)
    x, _ = block_array(path, offset, data.shape, 16, 2.0, 1.0)
    assert x.numblocks == (1, 1)
    out = x.compute()
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, data * np.float32(2) + np.float32(1))


def test_elementwise_then_reduce_falls_back_correctly(case):
    x, ref = case
    got = ((x * 2 + 1) ** 2).sum().compute()
    want = ((ref * 2 + 1) ** 2).sum()  # same dtype rules as numpy, overflow included
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)


def test_graph_pickles_small(case):
    x, _ = case
    graph = dict(x.__dask_graph__())
    payload = pickle.dumps(graph)
    # a task holds a path, offsets and a spec: never chunk data (a chunk here is 33 KB)
    assert len(payload) / len(graph) < 1000
    restored = pickle.loads(pickle.dumps(x))
    np.testing.assert_allclose(restored.sum().compute(), x.sum().compute(), equal_nan=True)


def test_names_are_deterministic(case):
    x, _ = case
    assert x.name.startswith("test-")


#: reductions whose widened form compiles the index kernels (10-20 s per encoding on a cold
#: cache): by default on float32, float64 and scaled int16 data (the other reductions, the
#: same route, on all five); the integer files' under ``-m slow``
INDEXED = {"argmax-axis0", "cutout-argmin-axis0", "nanargmin"}


@pytest.mark.parametrize(
    ("case", "name"),
    sampled_pairs(
        CASES,
        REDUCTIONS,
        lambda c, r: r not in INDEXED or c in ("f32-nan", "f64", "i16-scaled-blank"),
    ),
    indirect=["case"],
)
def test_reductions_after_a_widening_astype_stay_fused(case, no_decode, name):
    # ``x.astype(np.float64).sum()``: the cast is exact, so it stays on the stored bytes
    x, ref = case
    lazy, oracle = REDUCTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = lazy(x.astype(np.float64)).compute()
        want = oracle(ref.astype(np.float64))
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-6, equal_nan=True)


def test_astype_values_and_narrowing_casts(case):
    x, ref = case
    wide = x.astype(np.float64)
    assert wide.dtype == np.float64
    got = wide.compute()
    assert type(got) is np.ndarray
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, ref.astype(np.float64))
    # a cast that is not exact decodes and lets numpy cast, as for any other array
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for dtype in (np.int8, np.float16):
            np.testing.assert_array_equal(x.astype(dtype).compute(), ref.astype(dtype))
        np.testing.assert_array_equal(
            x.astype(np.int8).sum(axis=0).compute(), ref.astype(np.int8).sum(axis=0)
        )


@settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    # at least ~100 values per chunk: per-task overhead (~1 ms) dominates smaller ones
    c0=st.integers(1, 20),
    c1=st.integers(5, 30),
    c2=st.integers(10, 40),
    axis=st.sampled_from([None, 0, 1, 2, (0, 1), (1, 2), (0, 2)]),
)
def test_hypothesis_chunkings(case, stacking, c0, c1, c2, axis):
    x, ref = case
    z = replan(x, (c0, c1, c2), "hyp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_allclose(
            da.nansum(z, axis=axis).compute(),
            np.nansum(ref.astype(float), axis=axis),
            rtol=1e-5,
            atol=1e-6,
        )
        np.testing.assert_allclose(
            da.nanmax(z, axis=axis).compute(), np.nanmax(ref, axis=axis), equal_nan=True
        )
    np.testing.assert_array_equal(z.compute(), ref)


def test_threaded_scheduler_runs_kernels_concurrently(case):
    x, ref = case
    with dask.config.set(scheduler="threads", num_workers=4):
        got = da.nanmean(x, axis=0).compute()
    np.testing.assert_allclose(got, np.nanmean(ref.astype(float), axis=0), rtol=1e-5, atol=1e-6)


SHAPE_OPS = {
    "reshape": (lambda x: x.reshape(x.shape[0], -1), lambda a: a.reshape(a.shape[0], -1)),
    "ravel": (lambda x: x.ravel(), lambda a: a.ravel()),
    "mask": (lambda x: x[x > 0.5], lambda a: a[a > 0.5]),
    "reshape-argmax": (
        lambda x: x.reshape(x.shape[0], -1).argmax(axis=1),
        lambda a: a.reshape(a.shape[0], -1).argmax(axis=1),
    ),
    "percentile": (lambda x: da.percentile(x[2].ravel(), [10, 50]), lambda a: None),
    "topk": (lambda x: da.topk(x[2].ravel(), 4), lambda a: np.sort(a[2].ravel())[::-1][:4]),
    "transpose-sum": (lambda x: x.T.sum(axis=0), lambda a: a.T.astype(float).sum(axis=0)),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_reshapes_masks_and_quantiles_match_astropy(case, name):
    # dask calls ``chunk.reshape`` for reshape, ravel and boolean masks; quantiles go through
    # its percentile dispatch
    x, ref = case
    lazy, oracle = SHAPE_OPS[name]
    if name in ("mask", "reshape-argmax", "percentile") and np.isnan(ref).any():
        ref = np.where(np.isnan(ref), -np.inf, ref).astype(ref.dtype)
        x = da.where(da.isnan(x), -np.inf, x).astype(x.dtype)
    got = lazy(x).compute()
    if name == "percentile":
        # dask's percentile interpolates per chunk: check it lies within the values
        flat = np.sort(ref[2].ravel())
        assert flat[0] <= got[0] <= got[1] <= flat[-1]
        return
    want = oracle(ref)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_map_blocks_functions_get_ndarray_methods(case):
    x, ref = case  # astropy_data already gives native byte order
    cases = {
        "max": (lambda b: b.max(axis=0, keepdims=True), None),
        "T": (lambda b: b.T.T, ref),
        "ravel": (lambda b: b.ravel().reshape(b.shape), ref),
        "round": (lambda b: b.round(3), ref.round(3)),
        "tolist": (lambda b: np.array(b.tolist(), dtype=b.dtype), ref),
    }
    for name, (func, want) in cases.items():
        got = x.map_blocks(func, dtype=x.dtype).compute()
        if want is None:
            blocks = range(0, ref.shape[0], 7)
            want = np.concatenate([ref[i : i + 7].max(axis=0, keepdims=True) for i in blocks])
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_chunk_methods_reduce_fused_and_layout_probes_do_not_decode(case, no_decode):
    x, ref = case
    # a reduction method in a map_blocks function runs the kernel on the stored bytes
    got = x.map_blocks(
        lambda b: b.sum(axis=(1, 2), dtype=np.float64), drop_axis=(1, 2), dtype=np.float64
    ).compute()
    np.testing.assert_allclose(got, ref.astype(float).sum(axis=(1, 2)), rtol=1e-10)

    def probe(b):
        # names ndarray lacks are missing; layout attributes describe the decoded array
        # the chunk stands for (fresh, C-ordered) without decoding it: dask's getitem asks
        # ``flags.owndata`` of every slice and would copy one it finds not owning its data
        assert not hasattr(b, "mask")
        assert b.flags.owndata
        assert b.flags["C_CONTIGUOUS"]
        assert b.base is None
        assert b.strides == np.empty(b.shape, b.dtype).strides
        return b.sum(axis=0, keepdims=True)

    x.map_blocks(probe, dtype=x.dtype).compute(scheduler="sync")


def test_in_place_changes_act_on_the_decoded_values(case):
    # as on an ndarray: the chunk decodes once and later operations see the change
    x, ref = case

    def change(b):
        b.sort(axis=0)
        b[0] = 7
        np.multiply(b, 2, out=b)
        return b.view(b.dtype).byteswap().byteswap()

    def want(a):
        a = np.sort(a, axis=0)
        a[0] = 7
        return a * 2

    got = x.map_blocks(change, dtype=x.dtype).compute()
    blocks = [want(ref[i : i + 7]) for i in range(0, ref.shape[0], 7)]
    np.testing.assert_array_equal(got, np.concatenate(blocks))


def test_where_and_initial_are_not_ignored(case):
    # the kernels reduce whole slices: a where= mask or an initial= value goes to numpy
    x, ref = case
    keep = np.arange(x.shape[2]) % 3 != 0
    got = x.map_blocks(
        lambda b: np.sum(b, axis=2, where=keep, dtype=np.float64), drop_axis=2, dtype=np.float64
    ).compute()
    want = np.sum(ref, axis=2, where=keep, dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-10, equal_nan=True)
    peak = x.map_blocks(lambda b: np.max(b, axis=2, initial=30000), drop_axis=2).compute()
    np.testing.assert_array_equal(peak, np.max(ref, axis=2, initial=30000))
