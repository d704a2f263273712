"""Every route to an image's values gives the same values (issue 43: one decode semantics).

Generated images of every BITPIX, with and without BSCALE/BZERO/BLANK (the unsigned and int8
conventions, BLANK on scaled and unscaled integers, NaN and infinities in floats), plain and
tile-compressed (a compressed copy of the plain file's physical values, written by astropy:
losslessly for integers, GZIP_2 without quantisation for floats). astropy's ``hdu.data`` is the
oracle. The routes: ``hdu.data`` computed in the file's chunks and in small ones,
``hdu.section`` whole and stepped, xarray (lazily indexed, and with ``chunks={}``), and the
reduction table against numpy on the decoded values. (Tables: ``tests/tables/test_routes.py``.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dfits
from dfits.array import reduce
from tests.profiles import examples

fits = pytest.importorskip("astropy.io.fits")
xr = pytest.importorskip("xarray")

#: BITPIX -> the (BSCALE, BZERO, BLANK) drawn for it (None: no such card)
SCALINGS = {
    8: [(None, None, None), (1.0, -128.0, None), (2.0, 1.0, 7)],
    16: [(None, None, None), (1.0, 32768.0, None), (0.5, -3.0, -32768), (None, None, 5)],
    32: [(None, None, None), (1.0, 2.0**31, None), (1e-3, 10.0, 99)],
    64: [(None, None, None), (1.0, 2.0**63, None), (2.0, None, -1)],
    -32: [(None, None, None), (2.0, 1.0, None)],
    -64: [(None, None, None)],
}
_STORED = {8: ">u1", 16: ">i2", 32: ">i4", 64: ">i8", -32: ">f4", -64: ">f8"}
_HOW = ("nansum", "nanmean", "nanmin", "nanmax", "count", "nanstd")


@st.composite
def images(draw):
    bitpix = draw(st.sampled_from(sorted(SCALINGS)))
    scaling = draw(st.sampled_from(SCALINGS[bitpix]))
    shape = draw(st.sampled_from([(7,), (5, 6), (3, 4, 5), (2, 1, 3, 4)]))
    dtype = np.dtype(_STORED[bitpix])
    n = int(np.prod(shape))
    if dtype.kind == "f":
        special = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0])
        elems = st.floats(-1e6, 1e6, width=dtype.itemsize * 8) | special
    else:
        info = np.iinfo(dtype)
        elems = st.integers(int(info.min), int(info.max))
    stored = np.array(draw(st.lists(elems, min_size=n, max_size=n)), dtype).reshape(shape)
    if scaling[2] is not None:
        stored.flat[draw(st.integers(0, n - 1))] = scaling[2]  # one BLANK cell at least
    return bitpix, scaling, stored


def write_plain(path, bitpix, scaling, stored):
    """The stored values as they are, under the scaling cards (no rescaling by astropy)."""
    h = fits.Header()
    h["SIMPLE"], h["BITPIX"], h["NAXIS"] = True, bitpix, stored.ndim
    for i, n in enumerate(reversed(stored.shape)):
        h[f"NAXIS{i + 1}"] = n
    for key, value in zip(("BSCALE", "BZERO", "BLANK"), scaling, strict=True):
        if value is not None:
            h[key] = value
    data = stored.tobytes()
    with open(path, "wb") as fh:
        fh.write(h.tostring().encode("ascii"))
        fh.write(data + b"\0" * (-len(data) % 2880))


def write_compressed(path, values):
    kw = {"compression_type": "RICE_1"}
    if values.dtype.kind == "f":
        kw = {"compression_type": "GZIP_2", "quantize_level": 0.0}
    elif values.dtype.itemsize == 8:
        kw = {"compression_type": "GZIP_1"}  # RICE takes at most 32 bits
    fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(values, **kw)]).writeto(path)


def astropy_values(path, index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path) as hdul:
            data = np.asarray(hdul[index].data)
            return data.astype(data.dtype.newbyteorder("="))  # dfits hands out native order


def check_same(got, want, route):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{route}: dtype {got.dtype} != astropy's {want.dtype}"
    assert got.shape == want.shape, f"{route}: shape {got.shape} != {want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=route)


def check_routes(path, index, want):
    hdu = dfits.open(path)[index]
    assert hdu.dtype == want.dtype
    check_same(hdu.data.compute(), want, "hdu.data")
    small = dfits.open(path, chunks=(1,) * (want.ndim - 1) + (2,))[index].data
    check_same(small.compute(), want, "hdu.data in small chunks")
    check_same(hdu.section[...], want, "hdu.section[...]")
    step = (slice(None),) * (want.ndim - 1) + (slice(None, None, 2),)
    check_same(hdu.section[step], want[step], "hdu.section stepped")
    opened = xr.open_dataarray(path, engine="dfits", hdu=index, decode_wcs=False)
    check_same(opened.values, want, "xarray")
    lazy = xr.open_dataarray(path, engine="dfits", hdu=index, decode_wcs=False, chunks={})
    check_same(lazy.data.compute(), want, "xarray chunks={}")
    for x in (hdu.data, small):
        check_reductions(x, want)


def check_reductions(x, want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's all-NaN and inf - inf
        for how in _HOW:
            got = np.asarray(reduce(x, how).compute())
            if how == "count":
                expect = np.count_nonzero(~np.isnan(want)) if want.dtype.kind == "f" else want.size
                assert int(got) == expect, how
                continue
            expect = getattr(np, how)(want.astype(np.float64) if want.dtype.kind in "iu"
                                      and how in ("nanmean", "nanstd") else want)  # fmt: skip
            np.testing.assert_allclose(got, expect, rtol=1e-6, atol=0, equal_nan=True,
                                       err_msg=how)  # fmt: skip


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(image=images())
def test_every_image_route_agrees_with_astropy(image, tmp_path):
    bitpix, scaling, stored = image
    plain = tmp_path / "plain.fits"
    write_plain(plain, bitpix, scaling, stored)
    if bitpix == 8 and scaling[:2] == (1.0, -128.0):
        # astropy 7 cannot read the int8 convention (numpy refuses its in-place add of
        # -128.0 to int8): the standard's value, stored - 128, as int8 is the oracle
        want = (stored.astype(np.int16) - 128).astype(np.int8)
    else:
        want = astropy_values(plain, 0)
    check_routes(plain, 0, want)
    packed = tmp_path / "packed.fits"
    packed.unlink(missing_ok=True)
    write_compressed(packed, want)
    got = astropy_values(packed, 1)
    np.testing.assert_array_equal(got, want)  # the compressed copy is lossless
    check_routes(packed, 1, got)
