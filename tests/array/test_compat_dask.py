"""Compatibility: dask's own operations on dfits arrays give what they give on numpy chunks.

``store``, ``to_zarr``, ``map_blocks`` (whose functions call ndarray methods on the chunk),
``map_overlap``, ``rechunk``, gufuncs, FFT, linear algebra, percentiles, histograms, scans,
``topk``, mixing with numpy-backed arrays, and astropy's ``writeto`` of a dfits array.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from astropy.io import fits

from tests.compat_ops import (
    CASE_NAMES,
    SPLIT_CHUNKS,
    assert_plain,
    assert_same,
    astropy_values,
    check,
    write_cases,
)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return write_cases(tmp_path_factory.mktemp("compat-dask"))


@pytest.fixture(params=CASE_NAMES)
def case(request, cases):
    return cases[request.param]


def test_store_into_numpy(case):
    """``da.store`` of a dfits array fills a numpy target with astropy's values."""
    target = np.full(case.ref.shape, 99, dtype=case.ref.dtype)
    da.store(case.dfits(), target)
    assert_same(target, case.ref)


def test_to_zarr_round_trip(case, tmp_path):
    """``x.to_zarr`` writes what ``da.from_zarr`` reads back as astropy's values."""
    store = str(tmp_path / "x.zarr")
    case.dfits().to_zarr(store)
    back = da.from_zarr(store)
    assert back.dtype == case.ref.dtype
    assert_same(back.compute(), case.ref)


class Holder:
    """Exposes an ``__array_interface__`` and keeps its owner (whose memory it names) alive."""

    def __init__(self, owner):
        self.owner = owner
        self.__array_interface__ = owner.__array_interface__


def _memoryview(b):
    # Python 3.11 classes cannot offer the buffer protocol: only ndarrays are asked for one
    return np.array(memoryview(b)) if isinstance(b, np.ndarray) else np.array(b)


def _positive(b):
    out = np.zeros(b.shape, dtype=np.float64)
    out[b > 0] = b[b > 0]
    return out


def _into_target(b):
    out = np.empty_like(b)
    out[...] = b
    return out


BLOCK_FUNCTIONS = {
    "identity": lambda b: b,
    "view": lambda b: b.view(b.dtype),
    "byteswap-twice": lambda b: b.byteswap().byteswap(),
    "copy": lambda b: b.copy(),
    "astype-f8": lambda b: b.astype(np.float64),
    "flags": lambda b: np.ascontiguousarray(b) if b.flags.c_contiguous else b.copy(),
    "strides": lambda b: np.lib.stride_tricks.as_strided(b, b.shape, b.strides).copy(),
    "asarray": np.asarray,
    "memoryview": _memoryview,
    "tobytes": lambda b: np.frombuffer(b.tobytes(), dtype=b.dtype).reshape(b.shape),
    "reshape": lambda b: b.reshape(-1).reshape(b.shape),
    "mask-index": _positive,
    "array-interface": lambda b: np.array(Holder(b)),
    "into-target": _into_target,
    "ndarray-ops": lambda b: b.clip(0, None) + b.T.T * 0 + b.ravel().reshape(b.shape) * 0,
}


@pytest.mark.parametrize("name", list(BLOCK_FUNCTIONS))
def test_map_blocks(case, name):
    """Functions that treat each block as an ndarray (methods, buffers, protocols) work."""
    fn = BLOCK_FUNCTIONS[name]
    ref_block = fn(case.ref[:2, :3])
    check(case, lambda x: x.map_blocks(fn, dtype=ref_block.dtype))


def test_map_blocks_sees_ndarray_api(case):
    """Inside ``map_blocks`` a block answers ``flags``, ``strides`` and the interface."""

    def describe(b):
        info = b.__array_interface__
        assert tuple(info["shape"]) == b.shape
        assert np.dtype(info["typestr"]) == b.dtype
        assert len(b.strides) == b.ndim
        assert b.flags.c_contiguous in (True, False)
        assert b.itemsize == b.dtype.itemsize
        assert b.nbytes == b.size * b.itemsize
        return np.ones((1,) * b.ndim, dtype=np.int64)

    check(case, lambda x: x.map_blocks(describe, chunks=(1,) * x.ndim, dtype=np.int64))


def _smooth(b):
    c = b.astype(np.float64)
    out = c.copy()
    out[1:-1] = (c[:-2] + c[1:-1] + c[2:]) / 3
    return out


def test_map_overlap_reflect(case):
    """``map_overlap`` (depth 1, reflect) with a 3-point smoothing along axis 0."""
    check(case, lambda x: x.map_overlap(_smooth, depth={0: 1}, boundary="reflect", dtype=float))


@pytest.mark.parametrize("chunks", [(3, 10, 4), (6, 1, 12), -1], ids=["mixed", "planes", "one"])
def test_rechunk(case, chunks):
    """``rechunk`` then compute, and then reduce."""
    check(case, lambda x: x.rechunk(chunks))
    check(case, lambda x: x.rechunk(chunks).sum(axis=1))


def test_split_chunks_reductions(case):
    """Chunks that split the contiguous last axis reduce like numpy's."""
    check(case, lambda x: x.sum(axis=-1), SPLIT_CHUNKS)
    check(case, lambda x: np.nanmax(x, axis=0), SPLIT_CHUNKS)


def test_apply_gufunc(case):
    """``da.apply_gufunc`` with a ``(i)->()`` mean along the last axis."""

    def mean(a):
        return np.mean(a, axis=-1)

    check(case, lambda x: da.apply_gufunc(mean, "(i)->()", x, output_dtypes=float))


def test_fft_along_unchunked_axis(case):
    """``da.fft.fft`` along the last axis (one chunk along it)."""
    check(case, lambda x: da.fft.fft(x.rechunk({2: -1}), axis=2))


def _tall(x):
    y = x.reshape(60, 12).astype(np.float64).rechunk((20, 12))
    return da.where(da.isnan(y), 0.0, y)


def test_linalg_qr(case):
    """Tall-skinny ``da.linalg.qr`` of the cube as a (60, 12) float64 matrix."""
    check(case, lambda x: da.linalg.qr(_tall(x)))


def test_linalg_gram(case):
    """``x2d.T @ x2d`` on the matrix view of the cube."""
    check(case, lambda x: _tall(x).T @ _tall(x))


def test_percentile(case):
    """``da.percentile`` of the flattened cube."""
    check(case, lambda x: da.percentile(x.ravel(), [5, 50, 95]))


def test_histogram(case):
    """``da.histogram`` with a fixed range and bins (NaN falls outside every bin)."""
    lo, hi = float(np.nanmin(case.ref)), float(np.nanmax(case.ref))
    check(case, lambda x: da.histogram(x, bins=7, range=(lo, hi)))


def test_cumsum(case):
    """``da.cumsum(axis=0)`` and ``nancumsum``."""
    check(case, lambda x: da.cumsum(x, axis=0))
    check(case, lambda x: da.nancumsum(x, axis=1))


def test_topk(case):
    """``da.topk`` along axis 0 and ``argtopk`` along the last axis."""
    check(case, lambda x: da.topk(x, 2, axis=0))
    check(case, lambda x: da.argtopk(x, -3, axis=-1))


@pytest.mark.parametrize("join", [da.concatenate, da.stack], ids=["concatenate", "stack"])
def test_join_with_numpy_backed(case, join):
    """Concatenating or stacking a dfits array with a numpy-backed one, then reducing."""
    other = da.from_array(case.ref[::-1].copy(), chunks=(2, 5, 12))
    check(case, lambda x: join([x, other], axis=0))
    check(case, lambda x: join([other, x], axis=1).sum(axis=0))


def _write(x, path):
    """astropy's ``writeto`` of ``x``: None, or the error it raised."""
    try:
        fits.PrimaryHDU(x).writeto(path)
    except Exception as err:
        return err
    return None


def test_astropy_writeto(case, tmp_path):
    """astropy writes a dfits array (a dask array) as it writes a numpy-backed one.

    Where astropy refuses the numpy-backed one too (unsigned pseudo-integers with dask), dfits
    must be refused the same way, not fail differently or leave something else behind.
    """
    out, ref_out = tmp_path / "out.fits", tmp_path / "ref.fits"
    ref_err = _write(case.numpy(), ref_out)
    err = _write(case.dfits(), out)
    if ref_err is not None:
        assert type(err) is type(ref_err), f"numpy-backed: {ref_err!r}; dfits: {err!r}"
        assert out.exists() == ref_out.exists()
        return
    if err is not None:
        left = f"; it left a file of {out.stat().st_size} bytes" if out.exists() else ""
        pytest.fail(f"astropy writeto of a dfits array raised {err!r}{left}")
    assert fits.getheader(out)["BITPIX"] == fits.getheader(ref_out)["BITPIX"]
    got = astropy_values(out)
    assert_plain(got)
    assert_same(got, astropy_values(ref_out))
    assert_same(got, case.ref)
