"""The several-fields sum kernel against its numpy oracle: each field cut out of the rows,
viewed big-endian and summed (exactly for integers, in float64 for floats)."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.fieldsums import K_AS_FLOAT, KINDS, field_sums

_STORED = {"B": ">u1", "I": ">i2", "J": ">i4", "K": ">i8", "E": ">f4", "D": ">f8"}


def _rows(codes: str, n: int, seed: int, pad: int = 3) -> tuple[np.ndarray, list[int]]:
    """``n`` rows holding one field of each code at odd (unaligned) offsets, random bytes."""
    rng = np.random.default_rng(seed)
    offsets, at = [], pad
    for c in codes:
        offsets.append(at)
        at += np.dtype(_STORED[c]).itemsize + pad
    rows = np.zeros((n, at), np.uint8)
    for c, o in zip(codes, offsets, strict=True):
        dt = np.dtype(_STORED[c])
        if dt.kind == "f":
            values = (rng.standard_normal(n) * 1e3).astype(dt)
        else:
            info = np.iinfo(dt)
            values = rng.integers(info.min, info.max, n, endpoint=True).astype(dt)
        rows[:, o : o + dt.itemsize] = values.view(np.uint8).reshape(n, dt.itemsize)
    return rows, offsets


def _oracle(rows, codes, offsets, skipna):
    for c, o in zip(codes, offsets, strict=True):
        dt = np.dtype(_STORED[c])
        v = rows[:, o : o + dt.itemsize].copy().view(dt).reshape(-1)
        if dt.kind == "f":
            v = v.astype(np.float64)
            keep = ~np.isnan(v) if skipna else np.ones(v.size, bool)
            yield int(keep.sum()), float(np.sum(v[keep])), 0
        else:
            yield v.size, 0.0, int(np.sum(v.astype(np.int64)))


@pytest.mark.parametrize("n", [0, 1, 63, 5000], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
def test_field_sums_equal_numpy(n, skipna):
    codes = "BIJKEDDJE"
    rows, offsets = _rows(codes, n, seed=n)
    if n:
        rows[n // 2, offsets[4] : offsets[4] + 4] = np.array([np.nan], ">f4").view(np.uint8)
    counts, fsums, isums = field_sums(
        rows, np.array(offsets), np.array([KINDS[c] for c in codes]), skipna
    )
    for j, (cnt, fs, is_) in enumerate(_oracle(rows, codes, offsets, skipna)):
        assert counts[j] == cnt, codes[j]
        assert isums[j] == is_, codes[j]
        np.testing.assert_allclose(fsums[j], fs, rtol=1e-12, err_msg=codes[j])
    if n and not skipna:
        assert np.isnan(fsums[4])  # a NaN makes the plain sum NaN, as numpy's


def test_field_sums_infinities_and_strided_rows():
    rows, offsets = _rows("DE", 10, seed=1)
    rows[2, offsets[0] : offsets[0] + 8] = np.array([np.inf], ">f8").view(np.uint8)
    # a non-contiguous block of rows (every other row) is copied, then summed the same way
    counts, fsums, _ = field_sums(rows[::2], np.array(offsets), np.array([5, 4]), False)
    assert counts.tolist() == [5, 5]
    assert fsums[0] == np.inf
    want = rows[::2, offsets[1] : offsets[1] + 4].copy().view(">f4").astype(np.float64).sum()
    np.testing.assert_allclose(fsums[1], want, rtol=1e-12)


def test_field_sums_refuses_fields_past_the_row():
    rows = np.zeros((4, 8), np.uint8)
    with pytest.raises(ValueError, match="past"):
        field_sums(rows, np.array([4]), np.array([KINDS["D"]]), False)


def test_k_as_float_sums_int64_in_float64():
    """A mean's K field (code K_AS_FLOAT): its float64 sum, where the int64 one wraps."""
    rows, offsets = _rows("KK", 5000, seed=7)
    v = rows[:, offsets[0] : offsets[0] + 8].copy().view(">i8").reshape(-1)
    counts, fsums, isums = field_sums(rows, np.array(offsets), np.array([K_AS_FLOAT, 3]), True)
    assert counts.tolist() == [5000, 5000]
    assert isums[0] == 0
    np.testing.assert_allclose(fsums[0], np.sum(v.astype(np.float64)), rtol=1e-12)
    assert fsums[1] == 0


@pytest.mark.parametrize("n", [0, 1, 5000], ids=lambda n: f"n{n}")
def test_null_kinds_leave_out_the_tnull_values(n):
    """B and I fields with TNULLn (codes NULL_KINDS): the other values' count and exact
    int64 sum, beside plain fields of the same rows; a null never matching counts all."""
    from dfits.kernels.fieldsums import NULL_KINDS

    rows, offsets = _rows("BIIBJ", n, seed=n)
    b = rows[:, offsets[0]].copy()
    i = rows[:, offsets[1] : offsets[1] + 2].copy().view(">i2").reshape(-1).astype(np.int64)
    if n:  # make sure the nulls occur
        rows[::3, offsets[0]] = 200
        rows[::4, offsets[1] : offsets[1] + 2] = np.array([-7], ">i2").view(np.uint8)
        b = rows[:, offsets[0]].astype(np.int64)
        i = rows[:, offsets[1] : offsets[1] + 2].copy().view(">i2").reshape(-1).astype(np.int64)
    kinds = [NULL_KINDS["B"], NULL_KINDS["I"], NULL_KINDS["I"], KINDS["B"], KINDS["J"]]
    nulls = np.array([200, -7, 2**40, 0, 0])  # 2**40: no I value can be it
    for skipna in (False, True):  # counts leave the nulls out either way
        counts, fsums, isums = field_sums(rows, np.array(offsets), np.array(kinds), skipna, nulls)
        i2 = rows[:, offsets[2] : offsets[2] + 2].copy().view(">i2").reshape(-1).astype(np.int64)
        assert counts.tolist()[:3] == [int((b != 200).sum()), int((i != -7).sum()), n]
        assert isums.tolist()[:3] == [int(b[b != 200].sum()), int(i[i != -7].sum()), int(i2.sum())]
        assert fsums.tolist()[:3] == [0.0, 0.0, 0.0]
        assert isums[3] == rows[:, offsets[3]].astype(np.int64).sum()
