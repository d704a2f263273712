"""The reader seam: any source that returns stored chunks becomes a fused dask array."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import dask.array as da
import numpy as np
import pytest

from dfits.array import Reader, dask_array
from dfits.array.stored import StoredChunk
from dfits.format.dtypes import DecodeSpec, parse_decode_spec


@dataclass(frozen=True)
class MemoryReader:
    """Big-endian stored values held in memory (a stand-in for a tile or column reader),
    as the native unsigned view of their bytes that kernels read."""

    bits: np.ndarray
    spec: DecodeSpec

    @property
    def shape(self):
        return self.bits.shape

    @property
    def dtype(self):
        return self.spec.physical

    def read(self, index):
        return StoredChunk(self.bits[index], self.spec)


@pytest.fixture
def source():
    rng = np.random.default_rng(4)
    raw = rng.integers(-300, 300, (6, 8, 10)).astype(">i2")
    raw[1, 2, 3] = -32768
    spec, _ = parse_decode_spec(16, 0.5, 10.0, -32768)
    values = raw.astype(np.float32) * np.float32(0.5) + np.float32(10.0)
    values[1, 2, 3] = np.nan
    return MemoryReader(raw.view("=u2"), spec), values


def test_any_reader_is_a_lazy_dask_array(source, no_decode):
    reader, values = source
    assert isinstance(reader, Reader)
    x = dask_array(reader, ((2, 2, 2), (8,), (5, 5)), "memory-reader")
    assert x.dtype == np.float32
    assert x.shape == values.shape
    # reductions reach the kernels through the seam, whichever reader fed them
    np.testing.assert_allclose(da.nansum(x, axis=0).compute(), np.nansum(values, axis=0),
                               rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(da.nanstd(x).compute(), np.nanstd(values.astype(float)),
                               rtol=1e-6)  # fmt: skip


def test_reader_regions_and_values(source):
    reader, values = source
    x = dask_array(reader, ((3, 3), (4, 4), (10,)), "memory-reader-2")
    got = x.compute()
    assert type(got) is np.ndarray
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, values)
    np.testing.assert_array_equal(x[1:5, ::3, 2].compute(), values[1:5, ::3, 2])
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y.compute(), values)


def test_chunk_regions_must_be_slices(source):
    from dfits.array.reader import _Regions

    reader, _ = source
    with pytest.raises(ValueError, match="step 1"):
        _Regions(reader)[::2]
    with pytest.raises(TypeError, match="slices"):
        _Regions(reader)[0]
