"""Write small FITS files with astropy and expose them through ImageReader, layout-free."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits

from dfits.array.chunks import normalize
from dfits.array.image import ImageReader
from dfits.array.reader import dask_array
from dfits.format.dtypes import parse_decode_spec
from dfits.io import open_source


def sampled_pairs(cases, values, default) -> list:
    """``(case, value)`` params for ``parametrize(("case", ...), ..., indirect=["case"])``.

    The pairs that ``default(case, value)`` accepts run by default, the others under
    ``-m slow``: for tests whose every (encoding, reduction) pair compiles its own kernel
    variant (seconds each on a cold cache) where a sample shows the behaviour.
    """
    return [
        pytest.param(c, v, id=f"{c}-{v}", marks=() if default(c, v) else pytest.mark.slow)
        for c in cases
        for v in values
    ]


def write_image(path, data, bscale=None, bzero=None, blank=None):
    """Write ``data`` (stored values) as a primary HDU with the given scaling keywords."""
    hdu = fits.PrimaryHDU(data)
    for key, value in (("BSCALE", bscale), ("BZERO", bzero), ("BLANK", blank)):
        if value is not None:
            hdu.header[key] = value
    hdu.writeto(path, overwrite=True)
    with fits.open(path, do_not_scale_image_data=True) as hl:
        offset = hl[0]._data_offset
    return offset


def block_array(path, offset, shape, bitpix, bscale=None, bzero=None, blank=None, chunks=None):
    spec = parse_decode_spec(bitpix, bscale, bzero, blank)[0]
    block = ImageReader(open_source(path), offset, shape, spec)
    norm = normalize(chunks, shape, spec.physical, spec.itemsize)
    return dask_array(block, norm, f"test-{path}-{norm}"), spec


def encoded_case(tmp_path, data, encoding, chunks):
    """Write stored ``data`` with ``encoding`` (BITPIX, BSCALE, BZERO, BLANK); return its dfits
    dask array under ``chunks`` and astropy's values of it."""
    bitpix, bscale, bzero, blank = encoding
    path = str(tmp_path / "case.fits")
    offset = write_image(path, data, bscale, bzero, blank)
    x, _ = block_array(path, offset, data.shape, bitpix, bscale, bzero, blank, chunks=chunks)
    return x, astropy_data(path)


def astropy_data(path):
    with fits.open(path) as hl:
        data = hl[0].data
        return data.astype(data.dtype.newbyteorder("="))


#: Shape of the small sample cube the encoding tests share.
SAMPLE_SHAPE = (9, 6, 5)


def stored_sample(bitpix, blank=None, *, seed, scale=1.0, span=1000, nan=False, inf=False):
    """Random stored values of the sample cube: normal floats times ``scale`` (``nan``: a
    scattered NaN, a NaN row and a NaN plane; ``inf``: +inf and -inf), uint8 over 0..255,
    or integers in ``[-span, span)`` with ``blank`` in the same places as the NaN."""
    rng = np.random.default_rng(seed)
    if bitpix < 0:
        data = (rng.standard_normal(SAMPLE_SHAPE) * scale).astype(f"f{-bitpix // 8}")
        if nan:
            data[0, 1, 2] = data[4, :, 3] = np.nan
            data[7] = np.nan  # a whole plane missing
        if inf:
            data[2, 2, 2], data[3, 3, 3] = np.inf, -np.inf
    elif bitpix == 8:
        data = rng.integers(0, 256, SAMPLE_SHAPE).astype(np.uint8)
    else:
        data = rng.integers(-span, span, SAMPLE_SHAPE).astype(f"i{bitpix // 8}")
        if blank is not None:
            data[0, 1, 2] = data[4, :, 3] = blank
    return data


def float32_cube(tmp_path, shape, chunks, nan_at, seed):
    """A float32 cube file with one NaN, its dfits dask array and the values written."""
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    data[nan_at] = np.nan
    path = str(tmp_path / "cube.fits")
    offset = write_image(path, data, None, None, None)
    x, _ = block_array(path, offset, data.shape, -32, None, None, None, chunks=chunks)
    return x, data


def replan(x, chunks, name):
    """``x``'s file block under other chunks (``rechunk`` would decode and concatenate)."""
    from dask.array.core import normalize_chunks

    block = reader_of(x).reader
    return dask_array(block, normalize_chunks(chunks, x.shape), f"{name}-{chunks}")


def reader_of(x):
    """The reader behind a dfits dask array, indexable as dask indexes it (the graph's
    ``from_array`` source)."""
    from dfits.array.reader import _Regions

    return next(v for v in x.dask.values() if isinstance(v, _Regions))


#: the means and spreads numpy accumulates in float64 (64-bit integer totals would wrap)
WIDE_MOMENTS = ("mean", "nanmean", "var", "nanvar", "std", "nanstd")


def wide_integers(dtype):
    """A hypothesis strategy of int64 or uint64 values, mostly near the type's limits, so
    that sums pass 2**63 (and wrap) in most draws."""
    from hypothesis import strategies as st

    info = np.iinfo(dtype)
    quarter = (int(info.max) - int(info.min)) // 4
    return st.one_of(
        st.integers(int(info.max) - quarter, int(info.max)),
        st.integers(int(info.min), int(info.min) + quarter),
        st.integers(-1000 if info.min else 0, 1000),
    )


def check_wide(got, values: np.ndarray, how: str, axis=None, what: str = "") -> None:
    """``got`` equals numpy's ``how`` of the 64-bit integers ``values`` over ``axis``.

    Sums wrap as numpy's do and are compared exactly. Moments are float64 sums in another
    order than numpy's, so they may differ by rounding: the tolerance is that of summing
    ``n`` values of the largest magnitude (a wrapped total is off by 2**64 / n in a mean).
    """
    want = getattr(np, how)(values, axis=axis)
    got = np.asarray(got)
    if how in ("sum", "nansum"):
        assert got.dtype == want.dtype, what
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    assert got.dtype == np.float64, what
    n = values.size
    big = float(np.max(np.abs(values.astype(np.float64)))) if n else 0.0
    scale = {"mean": big, "var": big * big, "std": big}[how.removeprefix("nan")]
    atol = 1e-12 * n * scale
    if how.removeprefix("nan") == "std":
        atol = np.sqrt(1e-12 * n) * big  # a sqrt of the variance's tolerance
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=atol, err_msg=what)
