"""Row filters (issue 44): ``hdu.where(expr)`` and ``where=`` on every frame route.

The oracle is numpy on astropy's values under dfits' one decode
(:func:`tests.tablefiles.astropy_decoded`: a null is NaN, so it compares False); every
scalar column kind of the generated tables is filtered, and every kind (arrays, TDIM, bits,
variable-length, nulls, scaled) is gathered through each route and compared with the same
rows of the unfiltered route.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dfits
from dfits.tables.columns import ColumnReader
from tests.tablefiles import astropy_decoded
from tests.tables.generated import write_ascii, write_binary

fits = pytest.importorskip("astropy.io.fits")
pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

ROWS = 97


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return write_binary(tmp_path_factory.mktemp("filters") / "b.fits", seed=5, nrows=ROWS)


@pytest.fixture(scope="module")
def ascii_table(tmp_path_factory):
    return write_ascii(tmp_path_factory.mktemp("filters") / "a.fits", seed=5, nrows=ROWS)


def _astropy(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NUL logicals: astropy warns and reads False
        with fits.open(path) as ref:
            data = ref[1].data
            hdu = dfits.open(path)[1]
            return {c.name: astropy_decoded(data, c) for c in hdu.columns if not c.shape}


def _expressions(name: str, values: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Filters on one column, each with numpy's answer on the oracle's values."""
    if values.dtype.kind == "b":
        return [(name, values), (f"~{name}", ~values), (f"not {name}", ~values)]
    if values.dtype.kind in "UO":
        text = [str(v) for v in values]
        pick = text[3]
        return [(f"{name} == {pick!r}", np.array([t == pick for t in text]))]
    if values.dtype.kind == "c":
        return [(f"abs({name}) > 10", np.abs(values) > 10)]
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    mid = np.sort(finite)[len(finite) // 2].item()
    out = [
        (f"{name} < {mid!r}", values < mid),
        (f"({name} >= {mid!r}) | ({name} != {name})", (values >= mid) | (values != values)),
        (f"1 < {name} <= {mid!r}", (values > 1) & (values <= mid)),
    ]
    if values.dtype.kind == "f":
        out.append((f"isnan({name})", np.isnan(values)))
    if values.dtype.kind in "iu":
        out.append((f"({name} & 4) == 0", (values & 4) == 0))
    return out


@pytest.mark.parametrize("which", ["binary", "ascii"])
def test_where_equals_numpy_on_astropys_values(which, binary, ascii_table):
    path = binary if which == "binary" else ascii_table
    hdu = dfits.open(path)[1]
    oracle = _astropy(path)
    seen = 0
    for name, values in oracle.items():
        c = next(c for c in hdu.columns if c.name == name)
        if c.code in "PQ" and c.form.element != "A":
            continue  # arrays are not filterable (tested below), but they are gathered
        values = np.asarray(values)
        if c.code in "PQ":
            values = np.array(["".join(np.asarray(v).astype(str)).rstrip() for v in values])
        elif values.dtype.kind in "SU":
            values = np.char.rstrip(values.astype(str))
        for expr, want in _expressions(name, values):
            got = hdu.where(expr)
            np.testing.assert_array_equal(got, np.flatnonzero(want), err_msg=expr)
            seen += 1
    assert seen >= (40 if which == "binary" else 15)


def _same_cells(a, b, what: str) -> None:
    assert len(a) == len(b), what
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=what)


@pytest.mark.parametrize("which", ["binary", "ascii"])
def test_every_kind_is_gathered_alike_on_every_route(which, binary, ascii_table):
    path = binary if which == "binary" else ascii_table
    hdu = dfits.open(path)[1]
    expr = "(E > 0) | isnan(D)" if which == "binary" else "(aF > 0) | (aI < 100)"
    rows = hdu.where(expr)
    assert 10 < len(rows) < ROWS
    whole = hdu.to_pandas()
    got = hdu.to_pandas(where=expr)
    assert list(got.index) == list(rows)
    assert list(got.dtypes) == list(whole.dtypes)
    lazy = hdu.to_dask_dataframe(rows_per_partition=20, where=expr).compute()
    arrow = hdu.to_arrow(where=expr)
    assert arrow.schema.equals(hdu.to_arrow().schema, check_metadata=True)
    for name in whole.columns:
        want = whole[name].loc[rows]
        if want.dtype == object:
            _same_cells(got[name], want, name)
            _same_cells(lazy[name], want, name)
        else:
            pd.testing.assert_series_equal(got[name], want, check_index_type=False)
            pd.testing.assert_series_equal(lazy[name], want, check_index_type=False)
        taken = hdu.to_arrow([name]).column(0).take(pa.array(rows))
        assert repr(arrow[name].to_pylist()) == repr(taken.to_pylist()), name


def test_one_map_per_span_and_only_the_named_fields_are_read(binary, monkeypatch):
    """The filter and the gather share one map of each span of rows: the filter decodes
    only the fields it names over every row of the span, and the selected columns are
    decoded for the matching rows only (the field kernel takes D, ``values_at`` the rest)."""
    from dfits.io.local import LocalSource
    from dfits.kernels import fielddecode
    from dfits.tables import rowdecode

    hdu = dfits.open(binary)[1]
    row_bytes = hdu.layout.shape[1]
    monkeypatch.setattr(rowdecode, "SPAN_BYTES", 40 * row_bytes)  # spans of 40, 40, 17 rows
    offsets = {c.offset: c.name for c in hdu.columns}
    # the matching rows are copied from the first selected field's byte to the last's
    lo = min(c.offset for c in hdu.columns if c.name in ("D", "PJ"))
    hi = max(c.offset + c.width for c in hdu.columns if c.name in ("D", "PJ"))
    widths = []
    decoded, maps = [], []
    values_at, decode_fields, mapped = (
        ColumnReader.values_at,
        fielddecode.decode_fields,
        LocalSource.map,
    )

    def counting_values_at(self, buf, start, stride, n, *args, **kwargs):
        decoded.append((self.column.name, n))
        return values_at(self, buf, start, stride, n, *args, **kwargs)

    def counting_decode(rows, where, *args):
        widths.append(rows.shape[1])
        shift = 0 if rows.shape[1] == row_bytes else lo
        decoded.extend((offsets[int(o) + shift], rows.shape[0]) for o in where)
        return decode_fields(rows, where, *args)

    def counting_map(self, offset, nbytes, **kwargs):
        maps.append(nbytes)
        return mapped(self, offset, nbytes, **kwargs)

    rows = hdu.where("(E > 100) & ~L")
    assert 0 < len(rows) < ROWS
    monkeypatch.setattr(ColumnReader, "values_at", counting_values_at)
    monkeypatch.setattr(fielddecode, "decode_fields", counting_decode)
    monkeypatch.setattr(LocalSource, "map", counting_map)
    frame = hdu.to_pandas(["D", "PJ"], where="(E > 100) & ~L", threads=1)
    assert list(frame.index) == list(rows)
    spans = [40, 40, 17]
    # each span of rows is mapped once (the other maps are PJ's heap, one per span)
    assert [m for m in maps if m % row_bytes == 0] == [n * row_bytes for n in spans]
    assert len(maps) == 2 * len(spans)
    assert sorted({name for name, _ in decoded}) == ["D", "E", "L", "PJ"]
    for name in ("E", "L"):  # the filter's fields: every row of each span
        assert [n for got, n in decoded if got == name] == spans
    for name in ("D", "PJ"):  # the selected columns: the matching rows only, once
        assert sum(n for got, n in decoded if got == name) == len(rows)
    assert set(widths) == {row_bytes, hi - lo}  # whole rows, then only the selected bytes


BAD = [
    ("E >", "syntax error"),
    ("EE > 1", "no column 'EE'; columns: B, I"),
    ("E.real > 0", "'E.real' is not allowed"),
    ("__import__('os').system('true')", "is not allowed"),
    ("[E][0] > 1", "is not allowed"),
    ("E + 1", "gives float32 values, not True/False"),
    ("E3 > 0", "column 'E3' holds arrays"),
    ("PJ > 0", "column 'PJ' holds arrays"),
    ("E & 1", "bitwise_and cannot take float32"),
]


@pytest.mark.parametrize(("expr", "match"), BAD)
def test_a_bad_expression_names_its_token(binary, expr, match):
    hdu = dfits.open(binary)[1]
    for call in (hdu.where, lambda e: hdu.to_pandas(where=e), lambda e: hdu.to_arrow(where=e)):
        with pytest.raises(dfits.ExpressionError, match="HDU 1") as info:
            call(expr)
        assert match in str(info.value), (expr, str(info.value))
    assert isinstance(info.value, ValueError)


def test_backquoted_names_and_case(tmp_path):
    cols = [
        fits.Column("FLUX-1", "E", array=np.array([1, 5, 3], np.float32)),
        fits.Column("flag", "J", array=np.array([0, 4, 6], np.int32)),
    ]
    path = tmp_path / "q.fits"
    fits.BinTableHDU.from_columns(cols).writeto(path)
    hdu = dfits.open(path)[1]
    np.testing.assert_array_equal(hdu.where("(`FLUX-1` > 2) & ((FLAG & 2) == 0)"), [1])
    assert hdu.where("flag < 0").dtype == np.int64
    assert len(hdu.to_pandas(where="flag < 0")) == 0
    assert hdu.to_dask_dataframe(where="flag < 0").compute().empty
