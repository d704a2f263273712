from __future__ import annotations

import numpy as np
import pytest

from dfits.format.dtypes import parse_decode_spec

#: (id, BITPIX, BSCALE, BZERO, BLANK): every BITPIX, raw / scaled / offset, with and without
#: BLANK (BLANK = 0 and the type minimum included)
ENCODINGS = [
    ("u8", 8, None, None, None),
    ("u8-blank", 8, 2.0, 1.0, 0),
    ("i8-offset", 8, 1, -128, None),
    ("i16", 16, None, None, None),
    ("i16-scaled-blank", 16, 0.5, 3.0, -5),
    ("i16-blank-min", 16, None, None, -32768),
    ("u16-offset", 16, 1, 32768, None),
    ("i32", 32, None, None, None),
    ("i32-scaled-blank", 32, 2.5, -1.0, 7),
    ("u32-offset", 32, 1, 2**31, None),
    ("i64", 64, None, None, None),
    ("i64-blank-min", 64, None, None, -(2**63)),
    ("u64-offset", 64, 1, 2**63, None),
    ("f32", -32, None, None, None),
    ("f32-scaled", -32, 2.0, 1.0, None),
    ("f64", -64, None, None, None),
]


def make_stored(spec, shape, rng, missing=True):
    """Random stored (big-endian) values for ``spec``, with NaNs / BLANKs sprinkled in."""
    stored = spec.stored
    if spec.bitpix < 0:
        raw = (rng.standard_normal(shape) * 100).astype(stored)
        if missing and raw.size:
            raw.flat[rng.integers(0, raw.size, max(1, raw.size // 20))] = np.nan
    else:
        info = np.iinfo(stored)
        raw = rng.integers(
            info.min, info.max, shape, dtype=stored.newbyteorder("="), endpoint=True
        ).astype(stored)
        if spec.blank is not None and missing and raw.size:
            raw.flat[rng.integers(0, raw.size, max(1, raw.size // 20))] = spec.blank
    return raw


#: one encoding per stored width and mode (BLANK, scaled, offset bit-flip, NaN), for kernels
#: whose loaders the other tests already run on every encoding (``sampled_encodings``)
SAMPLE = ["u8-blank", "i16-scaled-blank", "u32-offset", "i64-blank-min", "f32-scaled", "f64"]


def sampled_encodings() -> list:
    """``ENCODINGS`` for ``parametrize("spec", ..., indirect=True)``, outside SAMPLE slow."""
    return [
        pytest.param(e, id=e[0], marks=() if e[0] in SAMPLE else pytest.mark.slow)
        for e in ENCODINGS
    ]


@pytest.fixture(params=ENCODINGS, ids=[e[0] for e in ENCODINGS])
def spec(request):
    _, bitpix, bscale, bzero, blank = request.param
    return parse_decode_spec(bitpix, bscale, bzero, blank)[0]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def encoding_matrix(cases, sample, everywhere=(), ids=str) -> list:
    """``(encoding, *case)`` params for ``parametrize(..., indirect=["spec"])``.

    The default run takes each case in ``everywhere`` on every encoding (what depends on the
    encoding: its loader, its type's identities) and each case in ``sample`` on the SAMPLE
    encodings (what depends on the loop: axes, layouts, output types); ``-m slow`` runs the
    rest of ``ENCODINGS × cases``. A case is a tuple of the other arguments' values.
    """
    params = []
    for enc in ENCODINGS:
        for case in cases:
            default = case in everywhere or (enc[0] in SAMPLE and case in sample)
            marks = () if default else pytest.mark.slow
            name = "-".join([enc[0], *(ids(v) for v in case)])
            params.append(pytest.param(enc, *case, id=name, marks=marks))
    return params
