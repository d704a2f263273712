"""The cube explorer's model: its state and the reads each request makes, without a browser.

The contract: an :class:`ExploreModel` holds the view's :class:`State` (channel, Stokes
index, visible window ``(y0, y1, x0, x1)`` in file pixels, view size in screen pixels,
stretch, colour map, limits, error and note) and answers the browser's requests, each with
reads through ``section`` (eager, no dask graph; a compressed cube decodes only the tiles
the region meets) and never more than the request names:

* :meth:`plane` — one channel, only the visible window, strided to the view's pixel size
  (``section[k, y0:y1:d, x0:x1:d]``, the strided read quicklook's decimation makes);
  sent as a float32 buffer (the colour map is applied in the browser);
* :meth:`spectrum` — ``section[:, y, x]``; :meth:`box_spectrum` — the box's mean per
  channel (``section[:, y0:y1, x0:x1]``, NaN-skipping);
* :meth:`moment0` — Σ I·|Δv| over a channel slab of the window, through the fused
  reduction (``dfits.array.reduce(..., "nansum")``) with dask;
* :meth:`cursor` — pixel, sky position and value under the cursor (one value read).

:meth:`handle` maps a message ``{"kind": ..., ...}`` to ``(reply, buffers)`` and turns a
:class:`~dfits.DfitsError` or ``OSError`` (a file that changed or vanished) into
``{"kind": "error"}`` and ``state.error``: the widget shows it, the kernel lives on.

Examples
--------
>>> import tempfile, numpy as np
>>> from dfits.demo import make_cube
>>> path = make_cube(tempfile.mkdtemp() + "/c.fits", (8, 32, 24))
>>> m = ExploreModel(path, view=(16, 12))
>>> p = m.plane(3)
>>> p.step, p.data.shape, p.data.dtype
(2, (16, 12), dtype('float32'))
>>> import dfits
>>> s = dfits.open(path)[0].section[:, 5, 7]
>>> bool(np.array_equal(m.spectrum(5, 7).values, s, equal_nan=True))
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dfits.errors import DataError, DfitsError
from dfits.jupyter.explore_source import Source, as_source
from dfits.jupyter.figures import _limits

__all__ = ["STRETCHES", "ExploreModel", "Plane", "Spectrum", "State"]

STRETCHES = ("linear", "sqrt", "log", "asinh")
COLORMAPS = ("viridis", "gray", "magma", "coolwarm")


@dataclass
class State:
    """What the view shows; the browser mirrors it."""

    channel: int = 0
    stokes: int = 0
    window: tuple[int, int, int, int] = (0, 0, 0, 0)  # y0, y1, x0, x1 (file pixels)
    view: tuple[int, int] = (512, 512)  # screen pixels (height, width)
    stretch: str = "linear"
    cmap: str = "viridis"
    nan_color: str = "#ff00ff"
    limits: tuple[float, float] | None = None
    error: str = ""
    note: str = ""


@dataclass
class Plane:
    """One decimated channel of the window: ``data[i, j]`` is file pixel
    ``(y0 + i*step, x0 + j*step)``."""

    channel: int
    window: tuple[int, int, int, int]
    step: int
    data: np.ndarray  # float32, C order

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)


@dataclass
class Spectrum:
    """A spectrum and where it comes from: pixel ``(y, x)`` or box ``(y0, y1, x0, x1)``."""

    where: tuple[int, ...]
    values: np.ndarray
    kind: str = "pixel"
    extra: dict[str, Any] = field(default_factory=dict)


class ExploreModel:
    """The explorer's state and requests over ``obj`` (see the module docstring).

    Parameters
    ----------
    obj : str, os.PathLike, dfits.HDU, xarray.DataArray or dask.array.Array
        What to explore; a path opens the image HDU with the most axes (or ``hdu``).
    hdu : int or str, optional
        The HDU of a path.
    view : (int, int)
        The view's size in screen pixels (height, width).
    unit, convention :
        The channel labels' unit and velocity convention (see :func:`as_source`).
    """

    def __init__(
        self, obj: Any, hdu: Any = None, *, view: tuple[int, int] = (512, 512),
        unit: Any = None, convention: str = "radio",
    ) -> None:  # fmt: skip
        self.source: Source = as_source(obj, hdu, unit=unit, convention=convention)
        self.last_spectrum: Spectrum | None = None
        #: called with the fraction of tasks done while moment 0 computes (the widget sends it)
        self.on_progress: Callable[[float], None] | None = None
        ny, nx = self.source.plane_shape
        self.state = State(
            channel=self.source.nchan // 2, window=(0, ny, 0, nx), view=_size(view),
            note=self.source.labels.note,
        )  # fmt: skip

    # -- description ----------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """What the browser needs once: shape, channel labels and unit, Stokes names."""
        src, labels = self.source, self.source.labels
        ny, nx = src.plane_shape
        return {
            "where": src.where, "nchan": src.nchan, "ny": ny, "nx": nx,
            "channels": [float(v) for v in labels.values], "spectral_name": labels.name,
            "spectral_unit": labels.unit, "stokes": list(src.extra_names),
            "celestial": labels.celestial is not None,
            "bunit": str(src.hdu.header.get("BUNIT", "") or "").strip(),
        }  # fmt: skip

    def channel_label(self, k: int | None = None) -> str:
        """The world value of channel ``k`` (default: the current one), with its unit."""
        return self.source.labels.channel(self.state.channel if k is None else k)

    # -- reads ----------------------------------------------------------------------------
    def _read(self, index: tuple[Any, ...]) -> np.ndarray:
        self.source.check()
        return np.asarray(self.source.section[index])

    def _arranged(self, index: tuple[Any, ...]) -> np.ndarray:
        """``section[index]`` (plane axes as slices) with the plane's axes as (y, x)."""
        out = self._read(index)
        ya, xa = self.source.axes.plane
        return out.T if ya > xa else out

    def plane(
        self, channel: int | None = None, window: tuple[int, int, int, int] | None = None,
        view: tuple[int, int] | None = None, stokes: int | None = None,
    ) -> Plane:  # fmt: skip
        """Read one channel of the visible window, strided to the view's pixel size."""
        st = self.state
        k = self._channel(st.channel if channel is None else channel)
        s = self._stokes(st.stokes if stokes is None else stokes)
        y0, y1, x0, x1 = self._window(st.window if window is None else window)
        vh, vw = _size(st.view if view is None else view)
        step = max(1, math.ceil((y1 - y0) / vh), math.ceil((x1 - x0) / vw))
        data = self._arranged(self.source.index(k, s, slice(y0, y1, step), slice(x0, x1, step)))
        st.channel, st.stokes, st.window, st.view = k, s, (y0, y1, x0, x1), (vh, vw)
        return Plane(k, (y0, y1, x0, x1), step, np.ascontiguousarray(data, dtype=np.float32))

    def spectrum(self, y: int, x: int) -> Spectrum:
        """The spectrum of file pixel ``(y, x)``: ``section[:, y, x]`` (Stokes as selected)."""
        ny, nx = self.source.plane_shape
        y, x = _clip(y, ny), _clip(x, nx)
        values = self._read(self.source.index(slice(None), self.state.stokes, y, x))
        self.last_spectrum = Spectrum((y, x), np.atleast_1d(values))
        return self.last_spectrum

    def box_spectrum(self, y0: int, y1: int, x0: int, x1: int) -> Spectrum:
        """The mean spectrum of the box ``[y0:y1, x0:x1]`` (NaN skipped; all-NaN → NaN)."""
        y0, y1, x0, x1 = self._window((min(y0, y1), max(y0, y1), min(x0, x1), max(x0, x1)))
        ax = self.source.axes
        box = self._read(self.source.index(slice(None), self.state.stokes,
                                           slice(y0, y1), slice(x0, x1)))  # fmt: skip
        kept = sorted(a for a in (ax.spectral, *ax.plane) if a is not None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN channels are expected
            values = np.nanmean(box, axis=tuple(kept.index(a) for a in ax.plane), dtype=np.float64)
        self.last_spectrum = Spectrum((y0, y1, x0, x1), np.atleast_1d(values), "box")
        return self.last_spectrum

    def cursor(self, y: int, x: int) -> dict[str, Any]:
        """Pixel, sky position and value of file pixel ``(y, x)`` in the current channel."""
        ny, nx = self.source.plane_shape
        y, x = _clip(y, ny), _clip(x, nx)
        value = float(self._read(self.source.index(self.state.channel, self.state.stokes, y, x)))
        world = self.source.labels.world(y, x)
        return {"y": y, "x": x, "value": None if math.isnan(value) else value, **world}

    def moment0(self, c0: int, c1: int, progress: bool = False) -> Plane:
        """Σ I·|Δv| over channels ``c0..c1`` (inclusive) of the current window at the current
        step, through the fused reduction (``reduce(..., "nansum")``); NaN where no channel
        is finite. ``data`` is in BUNIT × the channel unit."""
        from dfits.array import reduce
        from dfits.jupyter.progress import compute

        src, st = self.source, self.state
        if src.axes.spectral is None:
            raise DataError(f"{src.where}: moment 0 needs a spectral axis")
        lo, hi = sorted((self._channel(c0), self._channel(c1)))
        y0, y1, x0, x1 = st.window
        vh, vw = st.view
        step = max(1, math.ceil((y1 - y0) / vh), math.ceil((x1 - x0) / vw))
        src.check()
        data = src.hdu.data[src.index(slice(lo, hi + 1), st.stokes, slice(y0, y1, step),
                                      slice(x0, x1, step))]  # fmt: skip
        s = sorted((src.axes.spectral, *src.axes.plane)).index(src.axes.spectral)
        with _Progress(self.on_progress):
            total, finite = compute(reduce(data, "nansum", axis=s),
                                    reduce(data, "count", axis=s), progress=progress)  # fmt: skip
        values = src.labels.values
        width = abs(float(np.mean(np.diff(values)))) if len(values) > 1 else 1.0
        image = np.where(np.asarray(finite) > 0, np.asarray(total, dtype=np.float64) * width,
                         np.nan)  # fmt: skip
        ya, xa = src.axes.plane
        image = image.T if ya > xa else image
        return Plane(lo, (y0, y1, x0, x1), step, np.ascontiguousarray(image, dtype=np.float32))

    def sample_limits(self, planes: int = 3, size: int = 512) -> tuple[float, float] | None:
        """Percentile limits (1, 99.5) of a few channels, each read at most ``size`` pixels
        a side; None (and a note) when every sampled value is NaN. Sets ``state.limits``."""
        n = self.source.nchan
        chans = sorted({round(f * (n - 1)) for f in np.linspace(0.2, 0.8, planes)})
        ny, nx = self.source.plane_shape
        step = max(1, math.ceil(ny / size), math.ceil(nx / size))
        sample = [
            self._arranged(
                self.source.index(
                    k, self.state.stokes, slice(None, None, step), slice(None, None, step)
                )
            )
            for k in chans
        ]
        lo, hi = _limits(np.stack(sample).astype(np.float64))
        if lo is None or hi is None:
            self.state.limits = None
            self.state.note = _join(
                self.source.labels.note, "every sampled value is NaN: shown in the NaN colour"
            )
            return None
        self.state.limits = (lo, hi)
        return self.state.limits

    # -- messages -------------------------------------------------------------------------
    def handle(self, msg: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """Answer one browser message; an error becomes ``{"kind": "error"}`` and
        ``state.error`` (the widget shows it; the kernel lives on)."""
        from dfits.jupyter.explore_messages import answer

        try:
            reply, buffers = answer(self, msg)
        except (DfitsError, OSError, ValueError, IndexError) as err:
            self.state.error = f"{type(err).__name__}: {err}"
            return {"kind": "error", "id": msg.get("id"), "error": self.state.error}, []
        self.state.error = ""
        reply["id"] = msg.get("id")
        return reply, buffers

    def snapshot(self) -> dict[str, Any]:
        """The state as plain JSON values."""
        return asdict(self.state)

    # -- checks ---------------------------------------------------------------------------
    def _channel(self, k: Any) -> int:
        return _clip(int(k), self.source.nchan)

    def _stokes(self, s: Any) -> int:
        return _clip(int(s), max(1, len(self.source.extra_names)))

    def _window(self, w: Any) -> tuple[int, int, int, int]:
        ny, nx = self.source.plane_shape
        y0, y1, x0, x1 = (int(v) for v in w)
        y0, x0 = _clip(y0, ny), _clip(x0, nx)
        y1, x1 = min(max(y1, y0 + 1), ny), min(max(x1, x0 + 1), nx)
        return y0, y1, x0, x1


class _Progress:
    """Reports the fraction of dask tasks done to ``report`` (local schedulers; under a
    distributed client nothing is reported), at most every 5 %."""

    def __init__(self, report: Callable[[float], None] | None) -> None:
        self.report, self.callback = report, None

    def __enter__(self) -> _Progress:
        if self.report is None:
            return self
        from dask.callbacks import Callback

        state = {"done": 0, "total": 1, "last": 0.0}
        report = self.report

        def start(dsk: Any, _state: Any) -> None:
            state["total"] = max(len(dsk), 1)

        def posttask(*_args: Any) -> None:
            state["done"] += 1
            fraction = state["done"] / state["total"]
            if fraction - state["last"] >= 0.05 and fraction < 1.0:
                state["last"] = fraction
                report(fraction)

        self.callback = Callback(start_state=start, posttask=posttask)
        self.callback.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.callback is not None:
            self.callback.__exit__(*exc)
            if exc[0] is None and self.report is not None:
                self.report(1.0)  # some graph keys are data, not tasks: say done once


def _clip(i: int, n: int) -> int:
    return min(max(int(i), 0), n - 1)


def _size(view: Any) -> tuple[int, int]:
    h, w = (int(v) for v in view)
    if h < 1 or w < 1:
        raise DataError(f"the view needs a positive size, not {view!r}")
    return h, w


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)
