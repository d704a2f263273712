"""The quick look's figure: its canvas and where its panels go.

Jupyter shows a figure as a PNG, drawing it twice (once to find its tight bounding box), so
what a draw costs beyond the pixels counts: here no layout engine (constrained layout measured
every text of the figure on each draw), panels placed at fixed margins in inches, the image
panel shaped like the image so its colour bar matches its height, and PNGs deflated at zlib
level 1 (:func:`canvas`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

__all__ = ["Panels", "canvas", "figure", "quicklook_panels"]

#: inches around the image panel: left (WCS tick labels and the axis label), bottom (tick
#: labels, axis label, the note), top (title); the colour bar's gap and width, and the room
#: for its tick labels and label
LEFT, BOTTOM, TOP = 1.2, 0.75, 0.45
BAR_GAP, BAR, BAR_LABELS = 0.15, 0.2, 0.95
#: the quick look's figure sizes (inches): an image alone, and a cube's (image + spectrum)
SIZES = {False: (6.0, 5.4), True: (11.0, 4.8)}
#: where a cube's spectrum panel starts and its margin on the right (inches)
SPECTRUM, RIGHT = 6.9, 0.4


def figure(figsize: tuple[float, float], layout: str | None = "constrained") -> Any:
    """A :class:`matplotlib.figure.Figure` on :func:`canvas`'s Agg canvas (no pyplot)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    canvas()(fig)
    return fig


@functools.cache
def canvas() -> type:
    """The Agg canvas, its PNGs deflated at zlib level 1 unless ``pil_kwargs`` says otherwise.

    A quick look's image is mostly noise, which deflate barely shrinks: for the figure of an
    8k x 8k image, PIL's default level 6 took 30-80 ms per PNG, level 1 17-19 ms for a file
    3-8 % larger (CPU time, a loaded machine), and Jupyter makes a PNG per figure shown.

    >>> import io
    >>> fig = figure((1, 1))
    >>> buf = io.BytesIO()
    >>> fig.savefig(buf, format="png")
    >>> data = buf.getvalue()
    >>> data[data.index(b"IDAT") + 5] >> 6  # zlib's FLEVEL: 0, the fastest
    0
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    class QuicklookCanvas(FigureCanvasAgg):
        def print_png(
            self, filename_or_obj: Any, *, metadata: Any = None, pil_kwargs: Any = None, **_: Any
        ) -> None:
            # ``**_``: matplotlib hands a canvas of another package every savefig keyword
            # (dpi, facecolor, orientation, ...); Agg's print_png takes none of them (its own
            # canvas has them dropped), the figure already holds its dpi and colours
            pil_kwargs = {"compress_level": 1, **(pil_kwargs or {})}
            super().print_png(filename_or_obj, metadata=metadata, pil_kwargs=pil_kwargs)

    return QuicklookCanvas


@dataclass(frozen=True)
class Panels:
    """Rectangles (figure fractions: left, bottom, width, height) of a quick look's panels:
    ``image``, its colour bar ``bar``, and a cube's ``spectrum`` (None for an image)."""

    image: list[float]
    bar: list[float]
    spectrum: list[float] | None


def quicklook_panels(shape: tuple[int, int], cube: bool) -> tuple[Any, Panels]:
    """The quick look's figure and its panels, for an image of ``shape`` (rows, columns).

    The image panel is the largest box of the image's aspect within the margins, centred;
    its colour bar as tall as the box (at least 1.5 inches, centred on it).

    >>> fig, p = quicklook_panels((100, 100), cube=False)
    >>> [round(v, 3) for v in p.image], [round(v, 3) for v in p.bar]
    ([0.2, 0.204, 0.583, 0.648], [0.808, 0.204, 0.033, 0.648])
    >>> p.spectrum is None
    True
    """
    width, height = SIZES[cube]
    right = (SPECTRUM - 0.8 if cube else width) - BAR_GAP - BAR - BAR_LABELS
    room_w, room_h = right - LEFT, height - BOTTOM - TOP
    rows, cols = max(shape[0], 1), max(shape[1], 1)
    w = min(room_w, room_h * cols / rows)
    h = w * rows / cols
    x0, y0 = LEFT + (room_w - w) / 2, BOTTOM + (room_h - h) / 2
    bar_h = max(h, min(1.5, room_h))
    fig = figure((width, height), layout=None)

    def rect(x: float, y: float, w: float, h: float) -> list:
        return [x / width, y / height, w / width, h / height]

    spectrum = rect(SPECTRUM, BOTTOM, width - RIGHT - SPECTRUM, room_h) if cube else None
    bar = rect(x0 + w + BAR_GAP, y0 + (h - bar_h) / 2, BAR, bar_h)
    return fig, Panels(rect(x0, y0, w, h), bar, spectrum)
