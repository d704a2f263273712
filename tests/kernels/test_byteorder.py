"""Every kernel entry point reads native-order values as it reads big-endian ones.

Decoded compressed tiles arrive in native order (``DecodeSpec.byteorder = "="``), image bytes
big-endian (``">"``). The same values in either order must give the same results: identical
decoded values, extrema, indices, counts and integer sums, NaN and BLANK in the same places.
Float sums and moments are compared within the bound of any summation order (``checks``):
the two variants compile to different machine code (with and without the byte shuffle), and
with reassociation allowed LLVM may add their lanes up in different orders.

Kernels compile per encoding, byte order and layout (a column kernel takes seconds), so every
encoding runs every entry point's row kernel (``axis=-1``) and the encodings in
:data:`COLUMN_CASES` (one per stored width, each a mode that compares or flips raw bits) its
column kernel too, on the NaN/BLANK-skipping path: the loaders they share are the same.
The default run takes a sample of those (:data:`DEFAULT`); ``-m slow`` runs the rest.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
from tests.kernels.checks import assert_within, moment_tolerances, physical64, sum_tolerance
from tests.kernels.conftest import ENCODINGS, make_stored

#: every encoding of the other tests, and a BLANK above int8's range on unsigned bytes
CASES = [*ENCODINGS, ("u8-blank-255", 8, 1.5, -3.0, 255)]

#: encodings whose column kernels are compared too: 16-bit BLANK (the stored-integer routes),
#: 32-bit offset (the top bit flipped after the swap), 64-bit BLANK = minimum, float32 NaN
COLUMN_CASES = {"i16-scaled-blank", "u32-offset", "i64-blank-min", "f32"}


def _both(encoding, rng):
    """``raw`` and ``(u, spec)`` for its big-endian values and for the same values native."""
    spec = parse_decode_spec(*encoding[1:])[0]
    raw = make_stored(spec, (5, 3, 37), rng)
    native_spec = dataclasses.replace(spec, byteorder="=")
    native = raw.astype(native_spec.stored)
    assert native.dtype.isnative
    assert native_spec.stored == raw.dtype.newbyteorder("=")
    np.testing.assert_array_equal(native, raw)  # the same values, other bytes
    view = f"u{raw.itemsize}"
    return raw, (raw.view(view), spec), (native.view(view), native_spec)


def _same(big, native, tol=None):
    """Identical (``tol`` None: same dtype, NaN where NaN) or within ``tol``, nested alike."""
    if isinstance(big, tuple | list):
        assert len(big) == len(native)
        tols = tol if isinstance(tol, tuple | list) else [tol] * len(big)
        for b, n, t in zip(big, native, tols, strict=True):
            _same(b, n, t)
        return
    if big is None:
        assert native is None
        return
    big, native = np.asarray(big), np.asarray(native)
    assert big.dtype == native.dtype
    if tol is None:
        np.testing.assert_array_equal(native, big)
    else:
        assert_within(native, big, tol)


def _band(raw, spec):
    """A band around the middle of the values (ties at stored values included)."""
    v = physical64(raw, spec)
    finite = np.sort(v[np.isfinite(v)])
    lo, hi = finite[finite.size // 4], finite[3 * finite.size // 4]
    with np.errstate(invalid="ignore"):
        return float(lo), float(hi), (v >= lo) & (v <= hi)


def _decode(raw, u, spec, axis):
    # decoding has no axis: a whole block, and a stepped, reversed view of it
    return [(kernels.decode(u, spec), None), (kernels.decode(u[:, ::-2, 3:30:3], spec), None)]


def _decode_rows(raw, u, spec, axis):
    base = u.reshape(-1)
    geometries = [(3, 5, 7, 37), (4, 9, 150, -37)]
    return [(kernels.decode_rows(base, geo, spec), None) for geo in geometries]


def _sums(raw, u, spec, axis):
    # two kernel results, each within the any-order bound of the oracle: twice the bound
    tol = 2 * sum_tolerance(raw, spec, axis)
    return [(kernels.sum_count(u, spec, axis, skipna=True), (tol, None))]


def _integer_sums(raw, u, spec, axis):
    if not kernels.is_integer_kind(spec):
        pytest.skip("physical values are not integers")
    return [(kernels.integer_sum(u, spec, axis), None)]


def _moments(raw, u, spec, axis):
    mean_tol, m2_tol, _ = moment_tolerances(raw, spec, axis)
    return [(kernels.moments(u, spec, axis, skipna=True), (None, 2 * mean_tol, 2 * m2_tol))]


def _extrema(raw, u, spec, axis):
    return [
        (kernels.extrema(u, spec, axis, want_max=True, with_index=index), None)
        for index in (True, False)
    ]


def _band_sums(raw, u, spec, axis):
    # scaled 8/16-bit data take the stored-integer route, the others the per-value kernel
    lo, hi, keep = _band(raw, spec)
    tol = 2 * sum_tolerance(raw, spec, axis, keep)
    return [(kernels.band_sum_count(u, spec, axis, lo=lo, hi=hi), (tol, None))]


def _band_moments(raw, u, spec, axis):
    lo, hi, keep = _band(raw, spec)
    mean_tol, m2_tol, _ = moment_tolerances(raw, spec, axis, keep)
    result = kernels.band_moments(u, spec, axis, lo=lo, hi=hi)
    return [(result, (None, 2 * mean_tol, 2 * m2_tol))]


def _weighted(raw, u, spec, axis):
    # weighted sums reduce one axis with the column kernel whatever it is: axis 1, then 0
    axis = 1 if axis == -1 else 0
    w = np.linspace(-2.0, 3.0, u.shape[axis])
    shape = [1, 1, 1]
    shape[axis] = w.size
    wide = np.broadcast_to(np.abs(w).reshape(shape), raw.shape)
    with np.errstate(invalid="ignore"):
        keep = physical64(raw, spec) >= 0.0
    tol = [2 * sum_tolerance(raw, spec, axis, keep, weights=wide**p) for p in range(3)]
    return [(kernels.weighted_sums(u, spec, axis, w, threshold=0.0), tol)]


ENTRY_POINTS = {
    "decode": _decode,
    "decode_rows": _decode_rows,
    "sum_count": _sums,
    "integer_sum": _integer_sums,
    "moments": _moments,
    "extrema": _extrema,
    "band_sum_count": _band_sums,
    "band_moments": _band_moments,
    "weighted_sums": _weighted,
}


#: (encoding, axis): every encoding's row kernels, and the column kernels of a few
LAYOUTS = [(c, -1) for c in CASES] + [(c, 0) for c in CASES if c[0] in COLUMN_CASES]

#: the default run's sample (each native-order kernel compiles for seconds on a cold cache):
#: the row kernels of one encoding per stored width and mode, the column kernels of two
DEFAULT = {
    ("u8-blank-255", -1),
    ("i16-scaled-blank", -1),
    ("u16-offset", -1),
    ("u32-offset", -1),
    ("i64-blank-min", -1),
    ("f32-scaled", -1),
    ("f64", -1),
    ("i16-scaled-blank", 0),
    ("f32", 0),
}


def _layout(case):
    encoding, axis = case
    name = f"{encoding[0]}-{'rows' if axis else 'cols'}"
    slow = () if (encoding[0], axis) in DEFAULT else pytest.mark.slow
    return pytest.param(encoding, axis, id=name, marks=slow)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize(("encoding", "axis"), [_layout(c) for c in LAYOUTS])
def test_native_order_gives_the_same_results(encoding, axis, entry, rng):
    if entry.startswith("decode") and axis == 0:
        pytest.skip("decoding has no reduced axis")
    raw, (big, spec), (native, native_spec) = _both(encoding, rng)
    call = ENTRY_POINTS[entry]
    for (got_big, tol), (got_native, _) in zip(
        call(raw, big, spec, axis), call(raw, native, native_spec, axis), strict=True
    ):
        _same(got_big, got_native, tol)


def test_byteorder_is_validated():
    spec = parse_decode_spec(16)[0]
    assert spec.byteorder == ">"
    assert spec.stored == np.dtype(">i2")
    with pytest.raises(ValueError, match="byte order"):
        dataclasses.replace(spec, byteorder="<>")
    native = dataclasses.replace(spec, byteorder="=")
    assert native.stored == np.dtype("=i2")
    assert len({spec, native}) == 2  # frozen, hashable, told apart
