"""Rich reprs: render everything, read no data, stay fast on 10,000 HDUs, escape headers."""

from __future__ import annotations

import time

import pytest

import dfits
from dfits.array.image import ImageReader
from dfits.jupyter.repr import chunk_summary, file_html, hdu_html, header_html, wcs_axes
from dfits.section import Section
from tests.jupyter.conftest import CUBE_SHAPE, NHDU


@pytest.fixture
def no_data(monkeypatch):
    """Any data read or dask-array build fails the test."""

    def boom(*args, **kwargs):
        raise AssertionError("a repr touched data")

    monkeypatch.setattr(ImageReader, "read", boom)
    monkeypatch.setattr(Section, "__getitem__", boom)
    monkeypatch.setattr("dfits.file.dask_array", boom)
    monkeypatch.setattr("dfits.io.local.LocalSource.map", boom)


def _render_all(f):
    """Every HTML repr of the first 50 HDUs (the text reprs are rendered, not returned)."""
    out = [file_html(f)]
    repr(f)
    for hdu in f[:50]:
        out += [hdu_html(hdu), header_html(hdu.header)]
        repr(hdu)
        repr(hdu.header)
    return out


def test_cube_reprs(cube_path, no_data):
    f = dfits.open(cube_path)
    page = file_html(f)
    assert "PRIMARY" in page
    assert "(24, 48, 40)" in page
    assert "float32" in page
    assert "1 chunk of (24, 48, 40)" in page
    html = hdu_html(f[0])
    for text in ("RA---SIN", "DEC--SIN", "FREQ", "CDELT", "data at 2,880", "<details", "Jy/beam"):
        assert text in html
    assert "25 cards" in header_html(f[0].header)
    assert [a["ctype"] for a in wcs_axes(f[0].header)] == ["RA---SIN", "DEC--SIN", "FREQ"]


def test_chunks_match_dask(cube_path):
    f = dfits.open(cube_path, chunks=(5, -1, -1))
    data = f[0].data
    summary = chunk_summary(f[0], f.chunks)
    assert summary.startswith(f"{data.npartitions} chunks of {data.chunksize}")
    assert f"{data.chunksize}" in hdu_html(f[0])
    assert len(CUBE_SHAPE) == data.ndim


def test_escaping(nasty_path, no_data):
    f = dfits.open(nasty_path)
    pages = _render_all(f)
    joined = "".join(pages)
    for raw in ("<script>", "<img", "<i>RA", "<b>&amp"):
        assert raw not in joined
    assert "&lt;script&gt;" in hdu_html(f[1])
    assert "&lt;b&gt;&amp;amp" in file_html(f)


def test_many_hdus_fast(many_path, no_data):
    f = dfits.open(many_path)
    assert len(f) == NHDU
    _render_all(dfits.open(many_path))  # imports (dask config) happen once, here
    start = time.perf_counter()
    page = file_html(f)
    last = hdu_html(f[-1])
    head = header_html(f[NHDU // 2].header)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"reprs of a {NHDU}-HDU file took {elapsed:.3f} s"
    assert f"{NHDU - 40:,} more HDUs" in page
    assert f"{NHDU:,} HDUs (9,999 image, 1 primary)" in page
    assert str(NHDU - 1) in last
    assert "EXTVER" in head


def test_non_image_hdu(many_path, no_data):
    primary = dfits.open(many_path)[0]
    html = hdu_html(primary)
    assert "Chunks" not in html
    assert chunk_summary(primary) == ""


def test_hooks_when_installed(cube_path, no_data):
    """Once dfits.file / dfits.format.header carry the hooks, IPython finds them."""
    f = dfits.open(cube_path)
    objs = [f, f[0], f[0].header]
    hooked = [o for o in objs if hasattr(o, "_repr_html_")]
    if not hooked:
        pytest.skip("the _repr_html_ hooks are not installed yet")
    for o in hooked:
        assert 'class="dfits-repr"' in o._repr_html_()


def test_table_hdu_lists_columns(no_data):
    from dfits.tables.columns import ColumnReader

    def boom(*args, **kwargs):
        raise AssertionError("a repr read column data")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ColumnReader, "read", boom)
        mp.setattr(ColumnReader, "rows_and_nulls", boom)
        f = dfits.open("/work/shared/corpus/cfitsio/testprog.std")
        html = hdu_html(f[4])
        assert "10 columns" in html
        assert "<td>Xvalue</td><td>16X</td><td>cm</td><td>bool</td><td>(8, 2, 1)</td>" in html
        # TNULL4 = 99: the one decode makes it float64 with NaN for the nulls
        assert "<td>Ivalue</td><td>1I</td><td>km/s</td><td>float64</td>" in html
        vla = hdu_html(f[5])
        assert "<td>Jvalue</td><td>1PJ(20)</td><td></td><td>object (arrays of int32)</td>" in vla
        # a tile-compressed table lists the original table's columns
        compressed = dfits.open("/work/shared/corpus/nom-tam-fits/bt12.fits.fz")[1]
        html = hdu_html(compressed)
        assert "<td>col2</td><td>3I</td><td></td><td>int16</td><td>(3,)</td>" in html
