"""HDU-like views over dask arrays: the attributes the figures read; sections read lazily."""

from __future__ import annotations

import dask.array as da
import numpy as np

from dfits.format.header import Header
from dfits.xarray.views import ArrayHDU


def test_array_hdu_offers_what_figures_read():
    data = da.arange(24, chunks=6).reshape(2, 3, 4)
    view = ArrayHDU(data, Header(b""), "cube")
    assert (view.shape, view.dtype, view.name) == ((2, 3, 4), data.dtype, "cube")
    assert (view.kind, view.is_image, view.index) == ("image", True, 0)
    got = view.section[1, ::2]
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, np.arange(24).reshape(2, 3, 4)[1, ::2])
