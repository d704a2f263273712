"""hdu.section: eager basic-index reads equal numpy indexing of astropy's data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dfits
from dfits.io.ranges import bounding as _bounding
from dfits.io.writer import ImageWriter

SHAPE = (6, 7, 8)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    path = tmp_path_factory.mktemp("sec") / "s.fits"
    data = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    with ImageWriter(path, SHAPE, ">i4", [("BSCALE", 2.0), ("BZERO", 1.0)]) as out:
        out.write(data)
    return dfits.open(path)[0], data * 2.0 + 1.0


def _index_strategy():
    def axis_item(n):
        return st.one_of(
            st.integers(-n, n - 1),
            st.builds(
                slice,
                st.none() | st.integers(-n - 2, n + 2),
                st.none() | st.integers(-n - 2, n + 2),
                st.none() | st.integers(-3, 3).filter(lambda s: s != 0),
            ),
        )

    return st.tuples(*(axis_item(n) for n in SHAPE))


@settings(max_examples=200, deadline=None)
@given(index=_index_strategy())
def test_section_matches_numpy(image, index):
    hdu, ref = image
    got = hdu.section[index]
    np.testing.assert_array_equal(got, ref[index])
    bound, rel = _bounding(index, SHAPE)
    np.testing.assert_array_equal(ref[bound][rel], ref[index])


def test_ellipsis_newaxis_and_scalars(image):
    hdu, ref = image
    np.testing.assert_array_equal(hdu.section[..., 3], ref[..., 3])
    np.testing.assert_array_equal(hdu.section[None, 2, ..., ::2], ref[None, 2, ..., ::2])
    assert hdu.section[1, 2, 3] == ref[1, 2, 3]
    assert type(hdu.section[1:3, 2]) is np.ndarray


def test_fancy_index_is_refused(image):
    hdu, _ = image
    with pytest.raises(IndexError, match="basic indices"):
        hdu.section[[1, 2]]
    with pytest.raises(IndexError, match="out of bounds"):
        _bounding((9,), SHAPE)
