"""arg reductions along an axis keep (value, index) partials apart and combine them part by part."""

from __future__ import annotations

import pickle
import warnings

import dask.array as da
import numpy as np
import pytest

from dfits.array import argpartials
from dfits.array.argpartials import ArgPair, ArgStack, concatenate_pairs
from tests.array.helpers import encoded_case

ENCODINGS = {
    "f32-nan": (-32, None, None, None),
    "f64": (-64, None, None, None),
    "i16-scaled-blank": (16, 0.5, 3.0, -5),
    "u16": (16, 1, 32768, None),
    "i32": (32, None, None, None),
}

FUNCS = {
    "argmax": (da.argmax, np.argmax),
    "argmin": (da.argmin, np.argmin),
    "nanargmax": (da.nanargmax, np.nanargmax),
    "nanargmin": (da.nanargmin, np.nanargmin),
}


@pytest.fixture
def pairs_everywhere(monkeypatch):
    """Every partial takes the pair path, and the combines that ran are counted."""
    monkeypatch.setattr(argpartials, "MIN_BYTES", 0)
    seen = {"stacks": 0}
    real = ArgStack.of.__func__

    def counting(cls, parts, axis):
        stack = real(cls, parts, axis)
        seen["stacks"] += stack is not None
        return stack

    monkeypatch.setattr(ArgStack, "of", classmethod(counting))
    return seen


def _stored(encoding, rng):
    bitpix = encoding[0]
    shape = (21, 6, 7)
    if bitpix < 0:
        data = rng.standard_normal(shape).astype(f">f{-bitpix // 8}")
        data[4, 2, 3] = np.nan  # argmax: the first NaN wins; nanargmax skips it
        data[17, 2, 3] = np.nan
        data[:, 5, 6] = data[0, 5, 6]  # a column of ties: index 0
        data[9, 1, 1] = np.inf
        data[8:12, 0, 0] = np.nan  # a chunk's whole slice: dask's nanarg fallback decodes it
        data[2, 0:2, 0] = np.nan
        return data
    data = rng.integers(-300, 300, shape).astype(f">i{bitpix // 8}")
    data[:, 5, 6] = 11
    if encoding[3] is not None:
        data[3, 0, 0] = encoding[3]
    return data


@pytest.mark.parametrize("enc", list(ENCODINGS))
@pytest.mark.parametrize("func", list(FUNCS))
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_against_numpy(tmp_path, pairs_everywhere, enc, func, axis):
    data = _stored(ENCODINGS[enc], np.random.default_rng(axis))
    x, ref = encoded_case(tmp_path, data, ENCODINGS[enc], chunks=(4, 2, 3))
    lazy, eager = FUNCS[func]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN chunk slices, as numpy says
        got = lazy(x, axis=axis, split_every=2).compute()
        flat = lazy(x, axis=axis).compute()
    want = eager(ref, axis=axis)
    assert type(got) is np.ndarray
    assert got.dtype == np.intp
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(flat, want)
    assert pairs_everywhere["stacks"] > 0


@pytest.mark.parametrize("func", ["nanargmax", "nanargmin"])
@pytest.mark.parametrize("threshold", [0, 1 << 30], ids=["pairs", "structured"])
def test_nan_slices_of_a_chunk_stay_stored(tmp_path, monkeypatch, no_decode, func, threshold):
    # dask's nanarg chunk step decodes a chunk whose slice is all NaN (to fill it with -inf);
    # a stored chunk answers index 0 there instead, on either combine path
    monkeypatch.setattr(argpartials, "MIN_BYTES", threshold)
    data = _stored(ENCODINGS["f32-nan"], np.random.default_rng(9))
    data[4:8, 3:5, :] = np.nan  # one chunk's slices along axis 0, some NaN-only
    if threshold == 0:
        # only NaN and -inf (or +inf for nanargmin) in a column: numpy fills NaN with -inf
        # and so answers the first NaN (0); dask's structured combine does the same and then
        # raises "All NaN slice". dfits answers the first real extreme (9).
        data[:, 3, 1] = np.nan
        data[9:11, 3, 1] = -np.inf if func == "nanargmax" else np.inf
    x, ref = encoded_case(tmp_path, data, ENCODINGS["f32-nan"], chunks=(4, 6, 7))
    lazy, eager = FUNCS[func]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's all-NaN slice warnings
        got = lazy(x, axis=0, split_every=2).compute()
        want = eager(ref, axis=0)
    if threshold == 0:
        assert want[3, 1] == 0
        want[3, 1] = 9
    np.testing.assert_array_equal(got, want)


def test_keepdims_and_blank_columns(tmp_path, pairs_everywhere):
    data = _stored(ENCODINGS["i16-scaled-blank"], np.random.default_rng(7))
    data[:, 1, 2] = -5  # BLANK all the way: NaN everywhere in that column
    x, ref = encoded_case(tmp_path, data, ENCODINGS["i16-scaled-blank"], chunks=(5, 6, 7))
    got = da.argmin(x, axis=0, keepdims=True).compute()
    np.testing.assert_array_equal(got, np.argmin(ref, axis=0, keepdims=True))
    peaks = da.nanargmax(x, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="All NaN slice"):
            peaks.compute()


def test_mixed_with_numpy_blocks(tmp_path, pairs_everywhere):
    # pairs from stored chunks and dask's structured partials from numpy blocks, combined
    data = _stored(ENCODINGS["f32-nan"], np.random.default_rng(3))
    x, ref = encoded_case(tmp_path, data, ENCODINGS["f32-nan"], chunks=(4, 6, 7))
    other = np.random.default_rng(4).standard_normal(ref.shape).astype(np.float32) + 1
    both = da.concatenate([x, da.from_array(other, chunks=(5, 6, 7))], axis=0)
    got = da.argmax(both, axis=0, split_every=3).compute()
    np.testing.assert_array_equal(got, np.argmax(np.concatenate([ref, other]), axis=0))


def test_default_threshold_keeps_small_partials_structured(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(ArgPair, "__init__", lambda *a: made.append(a))
    data = _stored(ENCODINGS["f64"], np.random.default_rng(2))
    x, ref = encoded_case(tmp_path, data, ENCODINGS["f64"], chunks=(4, 6, 7))
    np.testing.assert_array_equal(x.argmax(axis=0).compute(), ref.argmax(axis=0))
    assert made == []  # 42 values per partial: below MIN_BYTES


def test_pair_behaves_as_its_structured_array():
    dtype = [("vals", "f4"), ("arg", "i8")]
    pair = ArgPair((1, 3), dtype)
    pair["vals"] = np.array([[1.5, np.nan, -2.0]], np.float32)
    pair["arg"] = np.array([[4, 5, 6]])
    dense = np.asarray(pair)
    assert dense.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(dense["arg"], [[4, 5, 6]])
    back = pickle.loads(pickle.dumps(pair))  # another process sees plain numpy
    assert type(back) is np.ndarray
    assert back.tobytes() == dense.tobytes()
    with pytest.raises(TypeError, match="whole fields"):
        pair[0] = 1
    # unalike parts (here: 2 deep along the axis) are concatenated as numpy would
    out = concatenate_pairs([dense, np.concatenate([dense, dense])], axis=0)
    assert type(out) is np.ndarray
    assert out.shape == (3, 3)


def test_stack_answers_other_questions_densely():
    dtype = [("vals", "f8"), ("arg", "i8")]
    parts = []
    for k in range(3):
        p = ArgPair((1, 4), dtype)
        p["vals"] = np.arange(4.0)[None] * (k - 1)
        p["arg"] = np.full((1, 4), k)
        parts.append(p)
    stack = concatenate_pairs(parts, axis=0)
    assert isinstance(stack, ArgStack)
    dense = np.concatenate([np.asarray(p) for p in parts])
    vals = stack["vals"]
    np.testing.assert_array_equal(np.argmax(vals, axis=0), np.argmax(dense["vals"], axis=0))
    np.testing.assert_array_equal(np.argmax(vals, axis=None), np.argmax(dense["vals"]))
    np.testing.assert_array_equal(vals[1:], dense["vals"][1:])
    np.testing.assert_array_equal(stack["arg"].sum(), dense["arg"].sum())
    np.testing.assert_array_equal(np.asarray(stack), dense)


@pytest.mark.parametrize("threshold", [0, 1 << 30], ids=["pairs", "structured"])
def test_no_all_nan_warning_without_an_all_nan_slice(tmp_path, monkeypatch, threshold):
    # the extreme of many slices sits at index 0 of its chunk: that is no "All-NaN slice"
    monkeypatch.setattr(argpartials, "MIN_BYTES", threshold)
    data = _stored(ENCODINGS["f32-nan"], np.random.default_rng(11))
    data[8:12, 0, 0] = 1.0  # no slice of a chunk is all NaN
    data[0::4] += 10  # every chunk's first row holds its maxima
    x, ref = encoded_case(tmp_path, data, ENCODINGS["f32-nan"], chunks=(4, 6, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = da.nanargmax(x, axis=0).compute()
    np.testing.assert_array_equal(got, np.nanargmax(ref, axis=0))
