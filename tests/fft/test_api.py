"""dfits.fft against numpy.fft: lengths, chunkings, axes, norms, dtypes, n=, round trips."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dfits.fft as F
from tests.fft.checks import TOLERANCE, check, rel_rms, signal

NORMS = [None, "backward", "ortho", "forward"]
#: small blocks (512 complex128 or 1024 complex64 values) so that arrays of a few thousand
#: values take the six-step / Bluestein paths, in graphs of a few hundred tasks
SMALL = {"block_size": 8192}


@pytest.fixture(autouse=True)
def _sync():
    # the synchronous scheduler keeps these small graphs fast on a shared 2-core machine
    with dask.config.set(scheduler="sync"):
        yield


LENGTHS = {
    "pow2": (4096, 256),
    "prime": (1499, 100),
    "smooth": (2 * 3 * 5 * 7 * 11, 110),
    "prime-times-smooth": (3 * 997, 250),
    "chunks-not-dividing": (2000, 300),
    "one-chunk": (700, 700),
}


def _slow(*values):
    return [pytest.param(v, marks=pytest.mark.slow) for v in values]


@pytest.mark.parametrize("dtype", [np.complex128, np.float32, *_slow(np.complex64, np.float64)])
@pytest.mark.parametrize(("n", "chunk"), LENGTHS.values(), ids=LENGTHS.keys())
def test_fft_and_ifft_1d(n, chunk, dtype):
    x = signal(np.random.default_rng(n), n, dtype)
    X = da.from_array(x, chunks=chunk)
    check(F.fft(X, **SMALL), np.fft.fft(x))
    check(F.ifft(X, **SMALL), np.fft.ifft(x))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["pow2", "prime"])
def test_norms_on_six_step_and_bluestein(name, norm):
    n, chunk = LENGTHS[name]
    x = signal(np.random.default_rng(n), n, np.complex128)
    X = da.from_array(x, chunks=chunk)
    check(F.fft(X, norm=norm, **SMALL), np.fft.fft(x, norm=norm))
    check(F.ifft(X, norm=norm, **SMALL), np.fft.ifft(x, norm=norm))


@pytest.mark.parametrize(("n", "chunk"), LENGTHS.values(), ids=LENGTHS.keys())
def test_round_trip(n, chunk):
    x = signal(np.random.default_rng(1), n, np.complex128)
    X = da.from_array(x, chunks=chunk)
    check(F.ifft(F.fft(X, **SMALL), **SMALL), x)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(st.integers(1, 64), min_size=1, max_size=3).filter(lambda s: np.prod(s) <= 1024),
    data=st.data(),
    norm=st.sampled_from(NORMS),
    single=st.booleans(),
    block=st.sampled_from([256, 2048, 1 << 20]),
)
def test_hypothesis_axes_chunkings_norms(shape, data, norm, single, block):
    # at most ~5 chunks per axis and 1024 values: graphs of at most a few hundred tasks, while
    # 256-byte blocks (16 complex128 values) send every longer axis through the six-step
    chunks = tuple(
        data.draw(st.integers(max(1, n // 5), n), label=f"chunk{i}") for i, n in enumerate(shape)
    )
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    dtype = np.complex64 if single else np.complex128
    x = signal(np.random.default_rng(len(shape)), shape, dtype)
    X = da.from_array(x, chunks=chunks)
    check(F.fft(X, axis=axis, norm=norm, block_size=block), np.fft.fft(x, axis=axis, norm=norm))


@pytest.mark.parametrize(
    ("shape", "chunks", "axes"),
    [
        ((64, 96), (16, 24), None),
        ((30, 7, 50), (7, 3, 9), (0, 2)),
        ((12, 18, 20), (5, 5, 5), None),
        ((101, 8), (30, 8), (0,)),
    ],
)
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_fftn_rfftn_and_inverses(shape, chunks, axes, norm):
    x = signal(np.random.default_rng(2), shape, np.float64)
    X = da.from_array(x, chunks=chunks)
    check(F.fftn(X, axes=axes, norm=norm, **SMALL), np.fft.fftn(x, axes=axes, norm=norm))
    check(F.rfftn(X, axes=axes, norm=norm, **SMALL), np.fft.rfftn(x, axes=axes, norm=norm))
    spectrum = np.fft.rfftn(x, axes=axes, norm=norm)
    S = da.from_array(spectrum, chunks=chunks)
    axes = axes or tuple(range(len(shape)))
    s = [shape[a] for a in axes]
    check(
        F.irfftn(S, s=s, axes=axes, norm=norm, **SMALL),
        np.fft.irfftn(spectrum, s=s, axes=axes, norm=norm),
    )
    check(F.ifftn(F.fftn(X, axes=axes, **SMALL), axes=axes, **SMALL), x.astype(np.complex128))


@pytest.mark.parametrize(("n", "chunk"), LENGTHS.values(), ids=LENGTHS.keys())
@pytest.mark.parametrize("dtype", [np.float64, *_slow(np.float32, np.int16)])
def test_rfft_irfft(n, chunk, dtype):
    x = (np.random.default_rng(3).standard_normal(n) * 100).astype(dtype)
    X = da.from_array(x, chunks=chunk)
    check(F.rfft(X, **SMALL), np.fft.rfft(x))
    spectrum = np.fft.rfft(x)
    S = da.from_array(spectrum, chunks=max(1, chunk // 2))
    for m in (None, n - 1) if dtype == np.float64 else (None,):
        check(F.irfft(S, n=m, **SMALL), np.fft.irfft(spectrum, n=m))


def test_irfft_ignores_imaginary_zero_and_nyquist_terms_like_numpy():
    spectrum = signal(np.random.default_rng(4), 513, np.complex128)
    S = da.from_array(spectrum, chunks=100)
    check(F.irfft(S, **SMALL), np.fft.irfft(spectrum))


@pytest.mark.parametrize("n", [1, 17, 600, 1024, 3001])
@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft"])
def test_n_pads_or_truncates_like_numpy(fn, n):
    x = np.random.default_rng(5).standard_normal(1000)
    X = da.from_array(x, chunks=128)
    check(getattr(F, fn)(X, n=n, **SMALL), getattr(np.fft, fn)(x, n=n))


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint16, np.int64, np.float16, np.float32, np.bool_, np.complex64]
)
def test_result_dtypes_follow_numpy(dtype):
    x = (np.random.default_rng(6).standard_normal(300) * 10).astype(dtype)
    X = da.from_array(x, chunks=64)
    want = np.fft.fft(x)
    got = F.fft(X, **SMALL)
    assert got.dtype == want.dtype
    if want.dtype in TOLERANCE and dtype != np.float16:
        check(got, want)


@pytest.mark.parametrize(("n", "chunk"), [(4096, 256), (1009, 100), (700, 700)])
def test_transposed_order_is_the_split_natural_order(n, chunk):
    x = signal(np.random.default_rng(7), (3, n), np.complex128)
    X = da.from_array(x, chunks=(2, chunk))
    y = F.fft(X, axis=1, order="transposed", **SMALL)
    n1, n2 = y.shape[1:]
    assert n1 * n2 == n
    natural = y.swapaxes(1, 2).reshape(3, n).compute()
    assert rel_rms(natural, np.fft.fft(x, axis=1)) < 1e-12
    if n == 4096:
        assert n2 > 1  # a real six-step split, not the trivial one


def test_transposed_order_skips_a_transpose():
    X = da.from_array(signal(np.random.default_rng(8), 4096, np.complex128), chunks=256)
    natural = F.fft(X, **SMALL)
    transposed = F.fft(X, order="transposed", **SMALL)
    assert len(transposed.dask) < len(natural.dask)


def test_large_blocks_take_the_direct_path_with_one_rechunk():
    x = signal(np.random.default_rng(9), (4, 4096), np.complex128)
    y = F.fft(da.from_array(x, chunks=(4, 256)), axis=1)  # dask's default 128 MiB blocks
    assert y.chunks[1] == (4096,)
    check(y, np.fft.fft(x, axis=1))


def test_numpy_input_is_accepted():
    x = np.arange(10.0)
    check(F.fft(x), np.fft.fft(x))


def test_results_are_lazy_and_deterministic():
    X = da.from_array(np.arange(4096.0), chunks=256)
    assert F.fft(X, **SMALL).name == F.fft(X, **SMALL).name
    assert F.fft(X, **SMALL).name != F.fft(X, norm="ortho", **SMALL).name


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda X: F.fft(X, n=0), ValueError, "Invalid number of FFT data points"),
        (lambda X: F.irfft(X, n=-2), ValueError, "Invalid number of FFT data points"),
        (lambda X: F.fft(X, axis=2), np.exceptions.AxisError, "out of bounds"),
        (lambda X: F.fft(X, norm="unit"), ValueError, "norm must be"),
        (lambda X: F.fft(X, order="bitreversed"), ValueError, "order must be"),
        (lambda X: F.fft(X, block_size=4), ValueError, "block_size"),
        (lambda X: F.rfft(X + 1j), TypeError, "real input"),
        (lambda X: F.fft(X.astype("M8[s]")), TypeError, "need numbers"),
        (lambda X: F.fftn(X, s=(4,), axes=(0, 1)), ValueError, "same length"),
    ],
)
def test_bad_arguments_raise_like_numpy(call, error, match):
    with pytest.raises(error, match=match):
        call(da.ones((8, 8), chunks=4))


def test_reachable_as_dfits_fft_without_importing_dask_at_import_dfits():
    import subprocess
    import sys

    code = (
        "import sys, dfits; assert 'dask' not in sys.modules; "
        "import dask.array as da; print(dfits.fft.fft(da.ones(4, chunks=2)).compute()[0].real)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4.0"
