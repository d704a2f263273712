"""``dfits.explore`` and ``da.fits.explore()`` build the anywidget headless; its message loop
answers requests with the model's replies and keeps errors in the widget."""

from __future__ import annotations

import numpy as np
import pytest

import dfits
from dfits.errors import DataError, DfitsError

pytest.importorskip("anywidget")


@pytest.fixture
def sent(monkeypatch):
    from dfits.jupyter.explore_widget import Explorer

    log: list = []
    monkeypatch.setattr(Explorer, "send", lambda self, content, buffers=None: log.append(
        (content, buffers)))  # fmt: skip
    return log


def test_explore_builds_headless(cube_path):
    w = dfits.explore(cube_path, view=(100, 80))
    assert w.info["nchan"] == 24
    assert w.info["spectral_unit"] == "km/s"
    assert w.limits[0] < w.limits[1]
    assert w.view == [100, 80]
    assert "export default" in str(w._esm)  # anywidget reads explore.js into the trait


def test_messages_round_trip(cube_path, sent):
    w = dfits.explore(cube_path)
    w._on_msg(w, {"kind": "plane", "channel": 3, "id": 1}, [])
    reply, buffers = sent[-1]
    assert reply["id"] == 1
    assert reply["label"] == w.model.channel_label(3)
    assert len(buffers[0]) == 48 * 40 * 4
    w._on_msg(w, {"kind": "spectrum", "y": 4, "x": 5, "id": 2}, [])
    sp = w.spectrum_dataarray()
    np.testing.assert_array_equal(sp.values, dfits.open(cube_path)[0].section[:, 4, 5])
    assert sp.dims == ("vrad",)
    assert sp["vrad"].attrs["units"] == "km/s"
    np.testing.assert_array_equal(w.spectrum_at(6, 7).values, w.model.spectrum(6, 7).values)
    assert sent[-1][0]["where"] == [6, 7]
    w._on_msg(w, {"kind": "png"}, [memoryview(b"\x89PNG")])
    assert w.png == b"\x89PNG"


def test_errors_stay_in_the_widget(cube_path, sent):
    w = dfits.explore(cube_path)
    with pytest.raises(DataError, match="no spectrum"):
        w.spectrum_dataarray()
    w._on_msg(w, {"kind": "bogus", "id": 9}, [])
    assert sent[-1][0]["kind"] == "error"
    assert "bogus" in w.error
    with pytest.raises(DfitsError, match="stretch"):
        dfits.explore(cube_path, stretch="cubic")


def test_accessor_forwards(cube_path):
    import xarray as xr

    w = xr.open_dataarray(cube_path, engine="dfits").fits.explore(view=(64, 64))
    assert w.info["celestial"]
    assert w.info["nchan"] == 24
