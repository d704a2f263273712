"""FFTs of dfits arrays read from FITS files: stored big-endian, scaled, and the corpus."""

from __future__ import annotations

import pickle
import warnings

import dask
import numpy as np
import pytest
from astropy.io import fits

import dfits
import dfits.fft as F
from tests.fft.checks import check


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.mark.parametrize(
    ("dtype", "scaling"),
    [(">f4", None), (">f8", None), (">i2", (0.5, 3.0)), (">i4", (1.0, 2**31))],
)
def test_fft_of_a_fits_image_equals_numpy_of_astropy(tmp_path, dtype, scaling):
    rng = np.random.default_rng(0)
    stored = (rng.standard_normal((3, 2000)) * 1000).astype(dtype)
    hdu = fits.PrimaryHDU(stored)
    if scaling is not None:
        hdu.header["BSCALE"], hdu.header["BZERO"] = scaling
    path = tmp_path / "series.fits"
    hdu.writeto(path)
    with fits.open(path) as ref:
        values = np.asarray(ref[0].data)
    x = dfits.open(path, chunks=(3, 250))[0].data
    assert len(x.chunks[1]) > 1
    y = F.fft(x, axis=1, block_size=8192)
    # tasks hold the path and offsets, never data: none pickles to more than a few hundred
    # bytes, where one chunk of values is 3 kB
    assert max(len(pickle.dumps(task)) for task in dict(y.dask).values()) < 1500
    check(y, np.fft.fft(values, axis=1))
    check(F.rfft(x, axis=1, block_size=8192), np.fft.rfft(values, axis=1))


def _corpus_images(corpus):
    """``(dfits array, astropy values)`` of small finite images in the corpus."""
    for path in sorted(corpus.rglob("*.fits")):
        try:
            f = dfits.open(path)
            ref = fits.open(path)
        except (dfits.DfitsError, OSError):
            continue
        with ref:
            for i, hdu in enumerate(f):
                if hdu.kind != "image" or not 2 <= len(hdu.shape) <= 3:
                    continue
                if min(hdu.shape) < 2 or np.prod(hdu.shape) > 1 << 18:
                    continue
                values = np.asarray(ref[i].data)
                if np.isfinite(values).all():
                    yield hdu.data, values


@pytest.mark.parametrize("limit", [3, pytest.param(None, marks=pytest.mark.slow)])
def test_fftn_of_corpus_images_equals_numpy_of_astropy(corpus, limit):
    seen = set()
    with warnings.catch_warnings():
        # odd headers in the corpus warn (dfits and astropy alike); the values are the point
        warnings.simplefilter("ignore")
        for x, values in _corpus_images(corpus):
            if (x.shape, values.dtype) in seen or len(seen) == limit:
                continue
            seen.add((x.shape, values.dtype))
            # lines of 32 values: the corpus' 40-62-pixel axes take the six-step
            x = x.rechunk(tuple(max(1, n // 3) for n in x.shape))
            check(F.fftn(x, block_size=512), np.fft.fftn(values))
    if not seen:
        pytest.skip("no small finite image HDU in the corpus")
