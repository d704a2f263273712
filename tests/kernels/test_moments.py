"""Code generation and block ends of the contiguous sum / moment loops.

The values of these kernels are checked against their oracles in ``test_api``. Here we check
how they compile. A loop over ``range(b0, b1)`` keeps numba's negative-index wrap-around,
because LLVM cannot prove the index is non-negative. On AVX2/AVX-512 the loop then
vectorises as gathers: spectra and full sums ran at 3 GiB/s per thread instead of 14–23 GiB/s,
with results still right. Likewise 8/16-bit integer sums that widen every value to int64 ran
at 2.4 GiB/s per thread on an AVX-512 Intel core (bound by its one shuffle port) against
11 GiB/s with int32 block sums, and the NaN-skipping row variance, with a select on each of
its two sums, compiled to a scalar loop on SSE2 and AVX2 alike. Only the machine code shows it.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
from dfits.kernels import oracle
from dfits.kernels._compile import BLOCK, NARROW_BLOCK, ROWS_PER_TILE
from dfits.kernels._loaders import kind_of
from dfits.kernels.intsums import isum_kernels, rawsum_kernels
from dfits.kernels.moments import _KAPPA, MOMENTS_BLOCK, moments_kernels
from dfits.kernels.sums import sum_kernels
from tests.kernels.checks import U, assert_within, gamma, moment_tolerances, sum_tolerance
from tests.kernels.conftest import ENCODINGS, make_stored

HOT = [e for e in ENCODINGS if e[0] in ("f32", "f32-scaled", "f64", "i32", "i16-scaled-blank")]


@pytest.mark.parametrize("skipna", [False, True], ids=["sum", "nansum"])
@pytest.mark.parametrize("encoding", HOT, ids=[e[0] for e in HOT])
def test_row_loops_load_contiguously(encoding, rng, skipna):
    spec = parse_decode_spec(*encoding[1:])[0]
    raw = make_stored(spec, (3, 5000), rng)  # rows longer than one BLOCK
    u = raw.view(f"u{raw.itemsize}")
    kernels.sum_count(u, spec, 1, skipna=skipna)
    kernels.moments(u, spec, 1, skipna=skipna)
    kind = kind_of(spec)
    # each listing compiles a copy (cached kernels keep no assembly): one per signature
    sums, moments = (factory(kind, skipna)[0] for factory in (sum_kernels, moments_kernels))
    sum_asm = [sums.inspect_asm(sig) for sig in sums.signatures]
    moment_asm = [moments.inspect_asm(sig) for sig in moments.signatures]
    compiled = sum_asm + moment_asm
    if kind.mode == "scaled" and kind.bitpix > 0:
        # scaled integers sum as raw int64 (``rawsum_kernels``); only the moments compile
        assert compiled, "the moments kernel was not compiled"
    else:
        assert len(compiled) >= 2, "the sum and moments kernels were not both compiled"
    for asm in compiled:
        assert "gather" not in asm, "a contiguous row loop compiled to gathers"
    for asm in moment_asm:
        # packed float64 adds (SSE2 ``addpd`` and up): the block's sums run in vector lanes
        assert re.search(r"\bv?addpd\b", asm), "the row variance loop did not vectorise"


@pytest.mark.filterwarnings("ignore:(Mean of empty|Degrees of freedom):RuntimeWarning")
@pytest.mark.parametrize(
    "length",
    [1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 1, MOMENTS_BLOCK + 1, 2 * MOMENTS_BLOCK + 3],
)
def test_row_blocks_end_at_the_row_end(rng, length):
    spec = parse_decode_spec(-64)[0]
    raw = (rng.standard_normal((2, length)) * 10).astype(">f8")
    raw[1, -1] = np.nan  # the last value of a row is read, and tested for NaN
    native = raw.astype("f8")
    # a value lost or read twice at a block end is off by ~10, far outside these bounds
    # (``checks``: they hold whatever the vector width splits the blocks into)
    total, n = kernels.sum_count(raw.view("u8"), spec, 1, skipna=True)
    assert_within(total, np.nansum(native, axis=1), sum_tolerance(raw, spec, 1))
    np.testing.assert_array_equal(n, [length, length - 1])
    cnt, mean, m2 = kernels.moments(raw.view("u8"), spec, 1, skipna=True)
    np.testing.assert_array_equal(cnt, [length, length - 1])
    mean_tol, _, var_tol = moment_tolerances(raw, spec, 1)
    assert_within(mean, np.nanmean(native, axis=1), mean_tol, "means")
    assert_within(m2 / cnt, np.nanvar(native, axis=1), var_tol, "variances")


@pytest.mark.parametrize("axis", [1, 0], ids=["rows", "columns"])
def test_blocks_are_combined_with_compensation(axis):
    # Block sums 2**53, 1 and -2**53, each exact: added plainly they give 0 (2**53 + 1 rounds
    # to 2**53), with Neumaier's compensation 1. Exact in every summation order within the
    # blocks, so every vector width must give 1. Compiled as a callee of a fast-math kernel,
    # the compensation used to inherit its flags and be folded away.
    spec = parse_decode_spec(-64)[0]
    size = BLOCK if axis == 1 else ROWS_PER_TILE
    values = np.zeros(3 * size)
    values[0], values[size], values[size + 1], values[2 * size] = 2.0**53, 0.5, 0.5, -(2.0**53)
    raw = np.stack([values, values[::-1]], axis=0 if axis == 1 else 1).astype(">f8")
    for skipna in (False, True):
        total, _ = kernels.sum_count(raw.view("u8"), spec, axis, skipna=skipna)
        np.testing.assert_array_equal(total, [1.0, 1.0])
    total, _ = kernels.band_sum_count(raw.view("u8"), spec, axis, lo=-np.inf)
    np.testing.assert_array_equal(total, [1.0, 1.0])
    # an infinite sum's compensation is NaN (inf - inf): the sum is the infinity, or NaN
    # where both signs were added, as numpy has it
    raw[(0, size + 5) if axis == 1 else (size + 5, 0)] = np.inf
    raw[(1, 2 * size + 7) if axis == 1 else (2 * size + 7, 1)] = -np.inf
    raw[(1, 3) if axis == 1 else (3, 1)] = np.inf
    for skipna in (False, True):
        total, _ = kernels.sum_count(raw.view("u8"), spec, axis, skipna=skipna)
        np.testing.assert_array_equal(total, [np.inf, np.nan])
    total, _ = kernels.band_sum_count(raw.view("u8"), spec, axis, lo=-np.inf)
    np.testing.assert_array_equal(total, [np.inf, np.nan])


def _exact_m2(values):
    """``n``, mean and ``M2`` of the non-NaN float64 ``values``, rounded once from exact sums."""
    kept = [Fraction(v) for v in values.tolist() if v == v]
    mean = sum(kept) / len(kept)
    return len(kept), float(mean), float(sum((v - mean) ** 2 for v in kept))


def _row_m2(values, skipna):
    spec = parse_decode_spec(-64)[0]
    stored = values.astype(">f8").reshape(1, -1)
    n, mean, m2 = kernels.moments(stored.view("u8"), spec, 1, skipna=skipna)
    return int(n[0]), float(mean[0]), float(m2[0])


def _row_bounds(values):
    """``(mean, M2)`` error bounds of the row kernel on ``values`` (NaN skipped), any lanes.

    Follows the kernel block by block: its shift ``k`` (the block's first value, else the mean
    so far), its redo about the block's mean when ``Σd² > _KAPPA·M2_b``. A block's sums of
    ``d = x - k`` and ``d²`` over ``c`` values, in any order, are within ``γ(c)·Σ|d|`` and
    ``γ(c)·Σd²``, so its ``M2_b = Σd² - (Σd)²/c`` within ``γ(c + 5)·(Σd² + 2|d̄|·Σ|d|)``
    (``d`` and the correction rounded too). Each Chan merge rounds at most five terms no
    larger than ``M2``, and carries the block means' errors through ``2|δ|·w·Δδ``.
    """
    ref = None
    n_a, mean_a, err_a, m2_tol = 0, 0.0, 0.0, 0.0
    want_m2 = _exact_m2(values)[2]
    for b0 in range(0, values.size, MOMENTS_BLOCK):
        blk = values[b0 : b0 + MOMENTS_BLOCK]
        kept = blk[~np.isnan(blk)]
        c = kept.size
        if c == 0:
            continue
        k = blk[0] if blk[0] == blk[0] else (ref + mean_a if n_a else 0.0)
        d = kept - k
        if (d @ d - d.sum() ** 2 / c) * _KAPPA < d @ d:
            k = kept.mean()
            d = kept - k
        ref = k if ref is None else ref
        mean_d = d.sum() / c
        m2_tol += gamma(c + 5) * (d @ d + 2 * abs(mean_d) * np.abs(d).sum())
        mean_b = (k - ref) + mean_d
        err_b = gamma(c + 2) * np.abs(d).sum() / c
        err_b += 2 * U * (abs(k - ref) + abs(mean_d) + abs(mean_b))
        if n_a:
            n, delta = n_a + c, mean_b - mean_a
            m2_tol += 2 * abs(delta) * (n_a * c / n) * (err_a + err_b) + 5 * U * want_m2
            err_a = (err_a * n_a + err_b * c) / n + 3 * U * (abs(mean_a) + abs(delta))
            mean_a += delta * c / n
        else:
            mean_a, err_a = mean_b, err_b
        n_a += c
    return err_a + U * abs(ref + mean_a), m2_tol


def _bad_shift_rows(rng):
    """Rows whose row-kernel blocks start on a poor shift for one-pass sums."""
    length = 3 * MOMENTS_BLOCK + 5
    starts = np.arange(0, length, MOMENTS_BLOCK)
    offset = 1e9 + rng.random(length)  # the textbook cancellation case, first value near
    outlier = rng.standard_normal(length)
    outlier[starts] = 1e7  # every block starts on a far outlier: Σd² ≈ block size × M2
    missing = 1e9 + rng.standard_normal(length)
    missing[starts] = np.nan  # first value missing: the shift falls back on the mean so far
    missing[1] = -1e9
    steps = np.repeat([3.0, -7.5, 3.0, 1e-300], MOMENTS_BLOCK)[:length]  # all-equal blocks
    return {"offset": offset, "outlier": outlier, "missing": missing, "steps": steps}


@pytest.mark.parametrize("case", ["offset", "outlier", "missing", "steps"])
def test_row_variance_matches_exact_whatever_the_shift(rng, case):
    # One-pass shifted sums with a two-pass redo of any block whose check says cancelled,
    # within the worst-case bound of that algorithm (``_row_bounds``), whatever vector width
    # splits each block: 1e-12 of M2 for the offset row, where block means taken in absolute
    # terms were 3e-9 off. The offset row's squares have 23 significant bits and round with a
    # bias (an odd m² is 1 mod 8, so adding one drops the same low bits each time): its error
    # grows with the longest run of additions, 5e-14 with a scalar loop, 1e-15 with 16 AVX2
    # accumulators, so only a worst-case bound holds on every machine.
    values = _bad_shift_rows(rng)[case]
    want_n, want_mean, want_m2 = _exact_m2(values)
    mean_tol, m2_tol = _row_bounds(values)
    for skipna in (True, False) if case != "missing" else (True,):
        # without skipna: another compiled loop, other vector lanes, the same bound
        n, mean, m2 = _row_m2(values, skipna=skipna)
        assert n == want_n
        assert abs(mean - want_mean) <= mean_tol
        assert abs(m2 - want_m2) <= m2_tol


def _integer_block(rng, size, centre, first):
    """``size`` integers near ``centre`` after ``first``, their mean (NaN skipped) an integer."""
    block = np.concatenate([[first], centre + rng.integers(-50, 51, size - 1)]).astype(float)
    kept = block[~np.isnan(block)]
    block[-1] -= kept.sum() % kept.size  # the sum a multiple of the count: an integer mean
    return block


@pytest.mark.parametrize("case", ["outlier", "missing"])
def test_row_variance_redo_is_exact(rng, case):
    # Two blocks of integers with integer means: shifted by its mean, a block's sums are exact
    # integers below 2**53 in any order, and so are Chan's merge (halves) and the result. A
    # block left one-pass rounds: its first value 2**24 away (outlier), or the shift the
    # first block's mean, 1.3e6 away (missing first value), puts Σd² above 2**53.
    if case == "outlier":
        blocks = [_integer_block(rng, MOMENTS_BLOCK, m, m + 2**24) for m in (0, 1000)]
    else:
        blocks = [_integer_block(rng, MOMENTS_BLOCK, m, np.nan) for m in (0, 1_300_000)]
    values = np.concatenate(blocks)
    want_n, want_mean, want_m2 = _exact_m2(values)
    assert want_m2 < 2**53
    for skipna in (True, False) if case == "outlier" else (True,):
        assert _row_m2(values, skipna=skipna) == (want_n, want_mean, want_m2)


def test_row_variance_without_skipna_is_nan_with_a_nan():
    values = np.arange(2 * MOMENTS_BLOCK, dtype=float)
    values[MOMENTS_BLOCK + 3] = np.nan
    n, mean, m2 = _row_m2(values, skipna=False)
    assert n == values.size
    assert np.isnan(mean)
    assert np.isnan(m2)


NARROW = [e for e in ENCODINGS if e[1] in (8, 16)]


def _narrow_rows(spec, length, fill):
    """Two rows of ``length`` stored values at the type's extreme ``fill``, BLANKs at block ends."""
    stored = spec.stored
    info = np.iinfo(stored)
    raw = np.full((2, length), info.max if fill == "max" else info.min, stored)
    if spec.blank is not None:
        for i in (0, NARROW_BLOCK - 1, NARROW_BLOCK, length - 1):
            if i < length:
                raw[1, i] = spec.blank
    return raw


@pytest.mark.parametrize("fill", ["max", "min"])
@pytest.mark.parametrize("length", [1, NARROW_BLOCK - 1, NARROW_BLOCK, 2 * NARROW_BLOCK + 1])
@pytest.mark.parametrize("encoding", NARROW, ids=[e[0] for e in NARROW])
def test_narrow_integer_sums_are_exact_across_blocks(encoding, length, fill):
    # extreme values fill every int32 block sum to its largest magnitude; rows (axis 1) and
    # column tiles (axis 0, ``length`` rows of 6 columns: 4-row passes plus a remainder)
    spec = parse_decode_spec(*encoding[1:])[0]
    raw = _narrow_rows(spec, length, fill)
    for axis, stored in ((1, raw), (0, np.ascontiguousarray(np.repeat(raw.T, 3, axis=1)))):
        u = stored.view(f"u{stored.itemsize}")
        phys = oracle.decode(stored, spec)
        if spec.mode == "scaled":
            total, n = kernels.sum_count(u, spec, axis, skipna=True)
            valid = ~np.isnan(phys)
            np.testing.assert_array_equal(n, valid.sum(axis=axis))
            kept = np.where(valid, stored.astype(np.int64), 0).sum(axis=axis)
            np.testing.assert_array_equal(total, spec.bscale * kept + spec.bzero * n)
            # rounded once to float32, also past a block of rows; a BLANK makes a plain sum NaN
            narrow, _ = kernels.sum_count(u, spec, axis, skipna=True, dtype=np.float32)
            np.testing.assert_array_equal(narrow, total.astype(np.float32))
            sums_only, none = kernels.sum_count(u, spec, axis, skipna=True, counts=False)
            np.testing.assert_array_equal(sums_only, total)
            assert none is None
            plain, _ = kernels.sum_count(u, spec, axis, skipna=False)
            np.testing.assert_array_equal(plain, np.where(valid.all(axis=axis), total, np.nan))
        else:
            got = kernels.integer_sum(u, spec, axis)
            want = phys.sum(axis=axis)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("encoding", NARROW, ids=[e[0] for e in NARROW])
def test_narrow_integer_sums_do_not_widen_each_value(encoding, rng):
    spec = parse_decode_spec(*encoding[1:])[0]
    raw = make_stored(spec, (3, 40, 5000), rng)
    u = raw.view(f"u{raw.itemsize}")
    kind = kind_of(spec)
    for axis in (2, 1):  # row kernel, column kernel
        if spec.mode == "scaled":
            kernels.sum_count(u, spec, axis, skipna=True)
        else:
            kernels.integer_sum(u, spec, axis)
    factory = rawsum_kernels if spec.mode == "scaled" else isum_kernels
    for kernel in factory(kind):
        assert kernel.signatures, "a kernel was not compiled"
        for sig in kernel.signatures:
            asm = kernel.inspect_asm(sig)
            for widen in ("pmovsxwq", "pmovzxwq", "pmovsxbq", "pmovzxbq", "gather"):
                assert widen not in asm, f"an 8/16-bit integer sum compiled to {widen}"
