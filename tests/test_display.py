"""The display registry: lower layers render through it, dfits.jupyter fills it on import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dfits
from dfits import _display
from dfits.io.writer import ImageWriter


@pytest.fixture
def image(tmp_path):
    import numpy as np

    path = tmp_path / "img.fits"
    with ImageWriter(path, (3, 4), ">f4", [("EXTNAME", "SCI")]) as out:
        out.write(np.arange(12, dtype=np.float32).reshape(3, 4))
    return path


@pytest.fixture
def empty_registry(monkeypatch):
    """No renderings and no figures registered, as if dfits.jupyter had never loaded."""
    monkeypatch.setattr(_display, "_HTML", {})
    monkeypatch.setattr(_display, "_FIGURES", {})


def test_import_dfits_registers_reprs_without_heavy_imports(image):
    code = (
        "import sys, dfits\n"
        "heavy = [m for m in ('numpy', 'dask', 'numba', 'matplotlib', 'astropy', 'xarray',\n"
        "         'dfits.file', 'dfits.jupyter.figures') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        f"f = dfits.open({str(image)!r})\n"
        "for obj in (f, f[0], f[0].header):\n"
        "    html = obj._repr_html_()\n"
        "    assert html and 'dfits-repr' in html, type(obj)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_reprs_come_from_the_registry(image):
    f = dfits.open(image)
    assert "SCI" in f._repr_html_()
    assert "(3, 4)" in f[0]._repr_html_()
    assert "EXTNAME" in f[0].header._repr_html_()


def test_without_registrations_reprs_fall_back_to_text(image, empty_registry):
    f = dfits.open(image)
    assert f._repr_html_() is None
    assert f[0]._repr_html_() is None
    assert f[0].header._repr_html_() is None
    assert "dfits.HDU" in repr(f[0])
    with pytest.raises(dfits.UnsupportedError, match="quicklook"):
        f[0].quicklook()


def test_registration_by_class_reaches_subclasses(empty_registry):
    class Base:
        pass

    class Child(Base):
        pass

    _display.register_html(Base, lambda obj: f"<i>{type(obj).__name__}</i>")
    assert _display.html_for(Child()) == "<i>Child</i>"
    _display.register_html(f"{Child.__module__}.{Child.__qualname__}", lambda obj: "<b>c</b>")
    assert _display.html_for(Child()) == "<b>c</b>"  # the nearest class wins
    _display.unregister_html(Child)
    assert _display.html_for(Child()) == "<i>Child</i>"


def test_quicklook_goes_through_the_registered_figure(image, empty_registry):
    calls = []
    _display.register_figure("quicklook", lambda *args: calls.append(args) or "figure")
    hdu = dfits.open(image)[0]
    assert hdu.quicklook(full=True, max_bytes=123) == "figure"
    assert calls == [(hdu, True, 123)]


def test_jupyter_registers_again_after_a_reset(image, empty_registry):
    from dfits.jupyter import _register

    _register.register()
    assert "dfits-repr" in dfits.open(image)[0]._repr_html_()
