"""The ASCII field parser is exact to the last bit against Python's float() and int()."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits.kernels import asciiparse

W = 30
_NONE = np.zeros(0, np.uint8)


def _parse(fields: list[bytes], floats: bool = True):
    buf = np.frombuffer(b"".join(f.rjust(W) for f in fields), np.uint8)
    out = np.empty(len(fields), np.float64 if floats else np.int64)
    status = np.empty(len(fields), np.uint8)
    parse = asciiparse.parse_floats if floats else asciiparse.parse_ints
    parse(buf, 0, W, len(fields), W, _NONE, False, out, status)
    return out, status


_decimal = st.builds(
    lambda sign, whole, frac, exp, letter: f"{sign}{whole}.{frac}{letter}{exp:+d}".encode(),
    st.sampled_from(["", "-", "+"]),
    st.integers(0, 10**12),
    st.text("0123456789", max_size=9),
    st.integers(-40, 40),
    st.sampled_from(["E", "e", "D"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_decimal, st.floats(allow_nan=False).map(lambda v: repr(v).encode())),
                min_size=1, max_size=20))  # fmt: skip
def test_floats_exact_against_python(fields):
    fields = [f for f in fields if len(f) <= W]
    out, status = _parse(fields)
    for text, value, s in zip(fields, out, status, strict=True):
        expected = float(text.replace(b"D", b"E"))
        if s == asciiparse.OK:
            assert value.hex() == expected.hex(), text
        else:
            assert s == asciiparse.SLOW, text  # the caller hands these to float()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20))
def test_ints_exact(values):
    out, status = _parse([str(v).encode() for v in values], floats=False)
    assert (status == asciiparse.OK).all()
    assert out.tolist() == values


def test_blank_bad_and_overflow():
    _, status = _parse([b"", b"1.2.3", b"1e", b"nan"])
    assert status.tolist() == [asciiparse.NULL, asciiparse.BAD, asciiparse.BAD, asciiparse.SLOW]
    _, status = _parse([b"9223372036854775808", b"12a"], floats=False)
    assert status.tolist() == [asciiparse.BAD, asciiparse.BAD]
