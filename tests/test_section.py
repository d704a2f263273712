"""hdu.section: eager basic-index reads equal numpy indexing of astropy's data, alike for a
plain image and a tile-compressed copy of it (one Section class, one reading seam)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dfits
from dfits.io.ranges import bounding as _bounding
from dfits.io.writer import ImageWriter

SHAPE = (6, 7, 8)


def _stored() -> np.ndarray:
    return np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE) - 100


def _plain(path) -> dfits.file.HDU:
    with ImageWriter(path, SHAPE, ">i4", [("BSCALE", 2.0), ("BZERO", 1.0)]) as out:
        out.write(_stored())
    return dfits.open(path)[0]


def _compressed(path, tile=(2, 3, 5)) -> dfits.file.HDU:
    from astropy.io import fits

    hdu = fits.CompImageHDU(data=_stored(), compression_type="RICE_1", tile_shape=tile)
    hdu.header["BSCALE"] = 2.0
    hdu.header["BZERO"] = 1.0
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    return dfits.open(path)[1]


@pytest.fixture(scope="module", params=["plain", "compressed"])
def image(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("sec") / "s.fits"
    hdu = _plain(path) if request.param == "plain" else _compressed(path)
    return hdu, _stored() * 2.0 + 1.0


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


def _astropy_copies(tmp_path, quantised: bool):
    """A plain and a tile-compressed file of the same values, and astropy's HDUs of both."""
    from astropy.io import fits

    if quantised:
        rng = np.random.default_rng(5)
        floats = rng.normal(10, 3, SHAPE).astype(np.float32)
        floats[2, 3, :4] = np.nan
        comp = fits.CompImageHDU(floats, compression_type="RICE_1", tile_shape=(1, 7, 8))
        fits.HDUList([fits.PrimaryHDU(), comp]).writeto(tmp_path / "c.fits")
        with fits.open(tmp_path / "c.fits") as f:
            fits.PrimaryHDU(np.array(f[1].data)).writeto(tmp_path / "p.fits")
    else:
        _plain(tmp_path / "p.fits")
        _compressed(tmp_path / "c.fits")
    return (
        (dfits.open(tmp_path / "p.fits")[0], dfits.open(tmp_path / "c.fits")[1]),
        (fits.open(tmp_path / "p.fits"), fits.open(tmp_path / "c.fits")),
    )


INDICES = [
    (1, 2, 3),
    (-1, -7, -8),
    (-1,),
    (slice(None, None, -2),),
    (Ellipsis, 3),
    (2, Ellipsis),
    (slice(1, 5, 2), Ellipsis, slice(-1, -8, -3)),
    (2, slice(9, 2, -1)),
    (slice(-4, None), slice(1, 6), slice(2, 7)),  # a stamp: RICE tiles decoded as one group
    (slice(10, 20),),
    (np.int64(3), slice(None, None, 3)),
]


@pytest.mark.parametrize("quantised", [False, True], ids=["scaled-int", "quantised-float"])
def test_plain_and_compressed_sections_agree_with_astropy(tmp_path, quantised):
    (plain, comp), (ap, ac) = _astropy_copies(tmp_path, quantised)
    with ap, ac, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        astro_plain, astro_comp = ap[0], ac[1]
        assert plain.section.dtype == comp.section.dtype == astro_comp.data.dtype
        for index in INDICES:
            got_plain, got_comp = plain.section[index], comp.section[index]
            assert type(got_plain) is type(got_comp), index
            assert got_plain.dtype == got_comp.dtype == plain.section.dtype, index
            np.testing.assert_array_equal(got_plain, got_comp, err_msg=str(index))
            np.testing.assert_array_equal(got_comp, astro_comp.section[index], err_msg=str(index))
            np.testing.assert_array_equal(got_plain, astro_plain.section[index], str(index))
        for index in [(6,), (0, -8), (0, 0, 8)]:
            errors = []
            for section in (plain.section, comp.section, astro_plain.section, astro_comp.section):
                with pytest.raises(IndexError) as err:
                    section[index]
                errors.append(str(err.value))
            assert errors[0] == errors[1], index  # dfits: the same error for both readers


@pytest.mark.parametrize(
    ("index", "match"),
    [
        ([1, 2], "basic indices"),
        ((True,), "basic indices"),
        ((np.array([1]),), "basic indices"),
        ((1, 2, 3, 4), "too many indices"),
        ((Ellipsis, 1, Ellipsis), "single ellipsis"),
    ],
    ids=["list", "bool", "array", "too-many", "two-ellipses"],
)
def test_both_readers_refuse_the_same_indices(image, index, match):
    hdu, _ = image
    with pytest.raises(IndexError, match=match):
        hdu.section[index]
