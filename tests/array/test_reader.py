"""The reader seam: any source that returns stored chunks becomes a fused dask array."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.array import Reader, dask_array
from dfits.format.dtypes import DecodeSpec, parse_decode_spec
from dfits.stored.stored import StoredChunk


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


@dataclass(frozen=True)
class RecordingReader:
    """A memory reader that notes each region it is asked for."""

    inner: MemoryReader
    log: list

    shape = property(lambda self: self.inner.shape)
    dtype = property(lambda self: self.inner.dtype)

    def read(self, index):
        self.log.append(tuple((s.start, s.stop) for s in index))
        return self.inner.read(index)


def _axis_index(n: int):
    ints = st.integers(-n, n - 1)
    ends = st.none() | st.integers(-n - 2, n + 2)
    steps = st.none() | st.integers(-3, 3).filter(bool)
    picks = st.lists(ints, min_size=1, max_size=4)
    return ints | st.builds(slice, ends, ends, steps) | picks


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_regions_take_any_index_and_read_only_its_bounds(source, data):
    """Steps, integers, negative steps and lists: the values numpy gives, from one read of
    the smallest step-1 region holding them."""
    from dfits.array.reader import _Regions

    reader, values = source
    axes = data.draw(st.integers(1, 3))
    index = tuple(data.draw(_axis_index(n)) for n in values.shape[:axes])
    if sum(isinstance(i, list) for i in index) > 1:
        index = tuple(i[0] if isinstance(i, list) else i for i in index)
    log = []
    got = _Regions(RecordingReader(reader, log))[index]
    want = values[index]
    np.testing.assert_array_equal(np.asarray(got), want)
    (region,) = log
    for (lo, hi), i, n in zip(region, index, values.shape, strict=False):
        picked = np.arange(n)[i]
        if np.size(picked):
            assert (lo, hi) == (picked.min(), picked.max() + 1), (index, region)
        else:
            assert lo == hi


def test_narrow_array_slices_read_only_their_rows(source):
    reader, values = source
    log = []
    x = dask_array(RecordingReader(reader, log), ((3, 3), (8,), (10,)), "narrow", narrow=True)
    np.testing.assert_array_equal(x[1:2, 3:5].compute(), values[1:2, 3:5])
    assert log == [((1, 2), (3, 5), (0, 10))]
    log.clear()
    total = x[4, ::3].sum().compute()
    assert total == pytest.approx(np.sum(values[4, ::3], dtype=np.float64), rel=1e-6)
    assert log == [((4, 5), (0, 7), (0, 10))]
    log.clear()
    # without narrow, each chunk is read whole and sliced afterwards
    y = dask_array(RecordingReader(reader, log), ((3, 3), (8,), (10,)), "wide")
    np.testing.assert_array_equal(y[1:2, 3:5].compute(), values[1:2, 3:5])
    assert log == [((0, 3), (0, 8), (0, 10))]


def test_reductions_import_no_reader():
    """The reductions know the Reader contract (a stored chunk, perhaps holding a pending
    region), never which reader fed them."""
    import ast
    import pathlib

    src = pathlib.Path(__file__).resolve().parents[2] / "src" / "dfits"
    readers = ("dfits.array.image", "dfits.tiles", "dfits.tables", "dfits.array.reader")
    modules = [src / "array" / f"{m}.py" for m in ("aggregations", "steps", "argsteps", "weighted")]
    modules += sorted((src / "stored").glob("*.py"))  # the stored-chunk layer, whole
    for path in modules:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(readers), (path.name, node.module)


def test_pending_regions_implement_the_contract():
    import dataclasses

    from dfits.array.image import Pending
    from dfits.array.reader import PendingRegion
    from dfits.tiles.quantised import QuantisedTiles

    for cls in (Pending, QuantisedTiles):
        assert "shape" in {f.name for f in dataclasses.fields(cls)}, cls
        for method in ("fetch", "narrow"):
            assert callable(getattr(cls, method)), (cls, method)
    spec = parse_decode_spec(-32)[0]
    tiles = QuantisedTiles(np.zeros(0), np.zeros(0), np.zeros(0), (), (2, 3), spec)
    assert isinstance(tiles, PendingRegion)
    assert tiles.narrow((slice(0, 1),)) is None  # never narrowed: the chunk fetches
