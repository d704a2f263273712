"""The eager route (:mod:`dfits.array.eager`) gives the dask route's values bit for bit.

Every entry of :data:`~dfits.array.AGGREGATIONS`, on plain, scaled, BLANK and tile-compressed
(RICE_1, GZIP_1, quantised) images and on every fixed-width numeric column kind of a table
(TNULL, scaled, unsigned, int8, logical, bits, array cells, TDIM, complex), over all axes and
over some, with many chunks per axis (dask's tree then has more than one level):
``reduce_hdu`` without a graph against
``dfits.array.reduce(hdu.data, ...).compute()`` on the same chunk plan, compared as bytes
(NaN payloads and signed zeros included), with the same dtype, shape and type.
"""

from __future__ import annotations

import dask
import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.array import AGGREGATIONS, reduce
from dfits.array import eager as eager_module
from dfits.array.eager import Blocks, limit, reduce_hdu
from tests.tables.generated import write_binary

#: small chunks (tables), so that every case has several blocks along each axis
CHUNK_SIZE = "2KiB"
#: the images' chunks (3 x 5 x 3 blocks: dask's tree has 2 or 3 levels); tiles not aligned
IMAGE_CHUNKS = (1, 9, 20)
PLAIN = sorted(h for h, agg in AGGREGATIONS.items() if not agg.positional)
POSITIONAL = sorted(h for h, agg in AGGREGATIONS.items() if agg.positional)


def _cube(seed: int, dtype, shape=(3, 40, 50)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(100, 30, shape)
    return values.astype(dtype) if np.dtype(dtype).kind == "f" else np.rint(values).astype(dtype)


def _image_files(tmp) -> dict[str, tuple[str, int]]:
    """name -> (path, HDU index) of every image case."""
    out = {}

    def put(name, hdus):
        path = str(tmp / f"{name}.fits")
        fits.HDUList(hdus).writeto(path)
        out[name] = (path, len(hdus) - 1)

    floats = _cube(0, np.float32)
    floats[1, 7, 3] = floats[2, :, 9] = np.nan
    floats[0, 0, 0] = -0.0
    put("float32", [fits.PrimaryHDU(floats)])
    put("int32", [fits.PrimaryHDU(_cube(1, np.int32) * 1000)])
    scaled = fits.PrimaryHDU(_cube(2, np.int16))
    scaled.header["BSCALE"], scaled.header["BZERO"] = 0.25, 7.5
    put("scaled", [scaled])
    blank = _cube(3, np.int16)
    blank[0, 5, :] = blank[2, 11, 4] = -999
    blanked = fits.PrimaryHDU(blank)
    blanked.header["BLANK"] = -999
    put("blank", [blanked])
    put("unsigned", [fits.PrimaryHDU(_cube(4, np.uint16) + 30000)])
    ints = _cube(5, np.int16)
    put("rice", [fits.PrimaryHDU(), fits.CompImageHDU(ints, compression_type="RICE_1",
                                                      tile_shape=(1, 5, 50))])  # fmt: skip
    put("gzip", [fits.PrimaryHDU(), fits.CompImageHDU(_cube(6, np.int32), compression_type="GZIP_1",
                                                      tile_shape=(1, 8, 50))])  # fmt: skip
    quant = _cube(7, np.float32)
    quant[1, 3, 3] = np.nan
    put("quantised", [fits.PrimaryHDU(), fits.CompImageHDU(quant, compression_type="RICE_1",
                                                           quantize_level=16,
                                                           tile_shape=(1, 4, 50))])  # fmt: skip
    return out


#: every fixed-width column kind that holds numbers (tests/tables/generated.py's names)
COLUMNS = ["B", "I", "J", "K", "E", "D", "nB", "nI", "nJ", "nK", "sI", "sJ", "sK", "sE", "uI",
           "uJ", "uK", "i8", "L", "X", "E3", "nJd", "sIa", "C", "M"]  # fmt: skip


def _table_file(tmp) -> str:
    return str(write_binary(tmp / "table.fits", 9, 700, COLUMNS))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eager")
    return _image_files(tmp), _table_file(tmp)


@pytest.fixture(autouse=True)
def small_chunks():
    with dask.config.set({"array.chunk-size": CHUNK_SIZE}):
        yield


def _outcome(call):
    """The value, or the exception's type and message (both routes must raise alike)."""
    try:
        return call()
    except Exception as err:  # any error: the other route must raise it too
        return type(err), str(err)


def _same(got, want, what: str) -> None:
    if isinstance(want, tuple):  # an exception
        assert got == want, what
        return
    assert type(got) is type(want) is np.ndarray, what
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    assert got.tobytes() == want.tobytes(), f"{what}: {got!r} != {want!r}"


#: the default run's requests on every kind (the slow run asks every entry, every way)
QUICK = [("sum", None, {}), ("nanmean", -1, {}), ("nanstd", None, {"ddof": 1}),
         ("max", 0, {}), ("nanargmax", -1, {"allnan": -1}), ("nanvar", (0, -1), {})]  # fmt: skip
EVERY = [pytest.param(True, marks=pytest.mark.slow, id="every"), pytest.param(False, id="quick")]


def _requests(ndim: int, every: bool = True) -> list[tuple[str, object, dict]]:
    """(how, axis, options) of every entry: plain ones over all axes, the last one and the
    first and last; the positional ones over all or one axis (``nan`` forms with ``allnan``).
    Not ``every``: :data:`QUICK` (its axes cut to ``ndim``)."""
    if not every:
        axes = {-1: ndim - 1, (0, -1): (0, ndim - 1) if ndim > 1 else None}
        return [(how, axes.get(axis, axis), o) for how, axis, o in QUICK]  # type: ignore[arg-type]
    out = []
    for axis in dict.fromkeys([None, ndim - 1, (0, ndim - 1) if ndim > 1 else None]):
        out += [(how, axis, {}) for how in PLAIN]
    for axis in dict.fromkeys([None, 0, ndim - 1]):
        out += [(h, axis, {"allnan": -1} if h.startswith("nan") else {}) for h in POSITIONAL]
    return [
        *out,
        ("std", None, {"ddof": 1}),
        ("nanvar", 0, {"ddof": 1, "keepdims": True}),
        ("nanmean", ndim - 1, {"band": (90.0, 110.0)}),
        ("sum", None, {"split_every": 2}),
    ]


def _dask_route(x, request):
    """``reduce(x, ...).compute()``, each request in a graph of its own."""
    how, axis, options = request
    return _outcome(lambda: reduce(x, how, axis, **options).compute(scheduler="sync"))


def _compare(hdu, column=None, every: bool = True) -> int:
    x = hdu.data if column is None else hdu.column(column)
    requests = _requests(x.ndim, every)
    for how, axis, options in requests:
        want = _dask_route(x, (how, axis, options))
        got = _outcome(
            lambda r=(how, axis, options): reduce_hdu(hdu, *r[:2], column=column, **r[2])
        )
        _same(got, want, f"{hdu.name} {column or ''} {how} axis={axis} {options}")
    return len(requests)


@pytest.mark.parametrize(
    "case", ["float32", "int32", "scaled", "blank", "unsigned", "rice", "gzip", "quantised"]
)
@pytest.mark.parametrize("every", EVERY)
def test_every_entry_on_images_is_the_dask_routes(files, case, every, monkeypatch):
    images, _ = files
    path, index = images[case]
    hdu = dfits.open(path, chunks=IMAGE_CHUNKS)[index]
    reader, chunks = hdu._plan(False)
    assert all(len(c) > 1 for c in chunks), chunks  # several blocks on every axis
    assert max(len(c) for c in chunks) > 4  # and a tree of more than one level
    assert Blocks(reader, chunks).stored_bytes <= limit()
    calls = []
    real = eager_module.run
    monkeypatch.setattr(eager_module, "run", lambda *a, **k: calls.append(1) or real(*a, **k))
    n = _compare(hdu, every=every)
    assert len(calls) == n  # every request took the eager route


@pytest.mark.parametrize("case", ["rice", "quantised"])
def test_default_plans_of_tiles_are_the_dask_routes(files, case):
    """The file's own plan (whole tiles per chunk, ``align_chunks``), not an explicit one."""
    images, _ = files
    path, index = images[case]
    hdu = dfits.open(path)[index]
    assert len(list(np.ndindex(*Blocks(*hdu._plan(False)).numblocks))) > 4
    for how, axis in [("sum", None), ("nanstd", 1), ("max", (0, 2)), ("nanargmax", 1)]:
        want = _dask_route(hdu.data, (how, axis, {}))
        _same(reduce_hdu(hdu, how, axis), want, f"{case} {how} {axis}")


@pytest.mark.parametrize("every", EVERY)
@pytest.mark.parametrize("column", COLUMNS)
def test_every_entry_on_table_columns_is_the_dask_routes(files, column, every):
    _, path = files
    hdu = dfits.open(path)[1]
    _, chunks = hdu._column_plan(column)
    assert len(chunks[0]) > 4, chunks
    _compare(hdu, column, every)


def test_several_requests_share_each_read(files, counted):
    """``dfits stats``'s requests: each chunk read once, its passes memoised across them."""
    images, _ = files
    path, index = images["float32"]
    hdu = dfits.open(path)[index]
    hows = ["count", "nansum", "nanmean", "nanstd", "nanmin", "nanmax"]
    blocks = len(list(np.ndindex(*Blocks(*hdu._plan(False)).numblocks)))
    got = reduce_hdu(hdu, hows, axis=None)
    assert counted["moments"] == blocks
    assert counted["extrema"] <= 2 * blocks
    assert counted.get("sum_count", 0) <= blocks
    for g, h in zip(got, hows, strict=True):
        # each alone: the eager route's requests meet each block in order (the sum pass
        # first), a shared dask graph's in whichever order its threads run them
        _same(g, reduce(hdu.data, h).compute(), h)


def test_over_the_limit_takes_the_dask_route(files, monkeypatch):
    images, _ = files
    path, index = images["rice"]
    hdu = dfits.open(path)[index]
    monkeypatch.setattr(eager_module, "run", None)  # the eager runner must not be called
    with dask.config.set({"dfits.eager-bytes": 0}):
        assert limit() == 0
        got = reduce_hdu(hdu, ["sum", "nanmax"], axis=1)
    want = [reduce(hdu.data, h, 1).compute() for h in ("sum", "nanmax")]
    for g, w in zip(got, want, strict=True):
        _same(g, w, "dask route")


def test_the_limit_is_a_dask_setting():
    assert limit() == 256 * 2**20
    with dask.config.set({"dfits.eager-bytes": "3 kB"}):
        assert limit() == 3000
    with dask.config.set({"dfits.eager-bytes": 4096}):
        assert limit() == 4096


def test_bad_requests_raise_as_the_dask_route_does(files):
    images, _ = files
    path, index = images["blank"]
    hdu = dfits.open(path)[index]
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        reduce_hdu(hdu, "median")
    with pytest.raises(TypeError, match="single axis"):
        reduce_hdu(hdu, "argmax", axis=(0, 1))
    with pytest.raises(np.exceptions.AxisError):
        reduce_hdu(hdu, "sum", axis=5)
    table = dfits.open(files[1])[1]
    for column in ("C", "M"):  # complex: the steps are real (an imaginary part would be lost)
        with pytest.raises(TypeError, match="complex values"):
            reduce_hdu(table, "sum", column=column)
        with pytest.raises(TypeError, match="complex values"):
            reduce(table.column(column), "nanmean")
    with pytest.raises(KeyError, match="no column"):
        reduce_hdu(dfits.open(files[1])[1], "sum", column="NOPE")
