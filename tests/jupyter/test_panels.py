"""The quick look's figure: panels inside the figure, shaped like the image, and fast PNGs."""

from __future__ import annotations

import io

import numpy as np
import pytest

from dfits.jupyter.panels import canvas, figure, quicklook_panels


def _flevel(png: bytes) -> int:
    """zlib's FLEVEL of a PNG's first IDAT stream: 0 fastest ... 3 best compression."""
    return png[png.index(b"IDAT") + 5] >> 6


@pytest.mark.parametrize("cube", [False, True])
@pytest.mark.parametrize("shape", [(100, 100), (512, 64), (64, 512), (40, 20000), (3, 1)])
def test_panels_fit_the_figure_and_the_image(shape, cube):
    fig, p = quicklook_panels(shape, cube)
    width, height = fig.get_size_inches()
    rects = [p.image, p.bar] + ([p.spectrum] if cube else [])
    for x, y, w, h in rects:
        assert min(x, y) >= 0
        assert max(x + w, y + h) <= 1
    x, y, w, h = p.image
    # the image panel has the image's aspect: imshow fills it, the colour bar matches it
    assert h * height / (w * width) == pytest.approx(shape[0] / shape[1])
    bx, by, bw, bh = p.bar
    assert bx > x + w
    assert by <= y + 1e-12  # as tall as the image panel, or taller, centred on it
    assert by + bh >= y + h - 1e-12
    assert (p.spectrum is not None) == cube
    if cube:
        assert p.spectrum[0] > bx + bw


def test_pngs_are_deflated_fast_unless_asked_otherwise():
    fig = figure((2, 2))
    ax = fig.add_subplot()
    ax.imshow(np.random.default_rng(0).normal(size=(64, 64)))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=50)
    assert _flevel(buf.getvalue()) == 0
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 9})
    assert _flevel(buf.getvalue()) == 3
    assert type(fig.canvas) is canvas()


def test_jupyters_png_of_a_figure(tmp_path):
    # what matplotlib-inline's formatter runs: the tight bounding box draws twice
    pylabtools = pytest.importorskip("IPython.core.pylabtools")
    import matplotlib.image

    fig, p = quicklook_panels((30, 40), cube=True)
    fig.add_axes(p.image).imshow(np.arange(1200.0).reshape(30, 40))
    fig.add_axes(p.spectrum).plot([1, 2, 3])
    png = pylabtools.print_figure(fig, "png", bbox_inches="tight")
    assert _flevel(png) == 0
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert pixels.std() > 0
    fig.savefig(tmp_path / "f.pdf")  # another format: the canvas leaves it to matplotlib
    assert (tmp_path / "f.pdf").stat().st_size > 0
