"""The explorer's anywidget: synced state and the message loop between browser and model.

The contract: :class:`Explorer` syncs the view's state as traits (``channel``, ``stokes``,
``stretch``, ``cmap``, ``nan_color``, ``limits``, ``view``, ``error``, ``note`` and the
one-off ``info``); the browser sends requests as custom messages, which
:meth:`~dfits.jupyter.explore_model.ExploreModel.handle` answers with a JSON reply and binary
buffers (an error becomes a reply and the ``error`` trait: the kernel lives on). Setting
``channel`` or ``stokes`` from Python moves the view as the slider does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from dfits.errors import DataError
from dfits.jupyter.explore_model import COLORMAPS, STRETCHES, ExploreModel, Spectrum

__all__ = ["Explorer"]

_ESM = Path(__file__).with_name("explore.js")


class Explorer(anywidget.AnyWidget):
    """An interactive cube explorer (see :func:`dfits.explore`)."""

    _esm = _ESM
    info = traitlets.Dict().tag(sync=True)
    channel = traitlets.Int(0).tag(sync=True)
    stokes = traitlets.Int(0).tag(sync=True)
    stretch = traitlets.Unicode("asinh").tag(sync=True)
    cmap = traitlets.Unicode("viridis").tag(sync=True)
    nan_color = traitlets.Unicode("#ff00ff").tag(sync=True)
    limits = traitlets.List(allow_none=True, default_value=None).tag(sync=True)
    view = traitlets.List([512, 512]).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)

    def __init__(self, model: ExploreModel, **kwargs: Any) -> None:
        for key, allowed in (("stretch", STRETCHES), ("cmap", COLORMAPS)):
            if key in kwargs and kwargs[key] not in allowed:
                raise DataError(f"{model.source.where}: {key} must be one of {allowed}")
        self.model = model
        self.spectrum: Spectrum | None = None
        self.png: bytes | None = None
        try:  # limits sampled once, from a few planes (an error shows in the widget)
            limits = model.sample_limits()
        except (OSError, ValueError) as err:
            limits, model.state.error = None, f"{type(err).__name__}: {err}"
        st = model.state
        super().__init__(
            info=model.info(), channel=st.channel, view=list(st.view),
            limits=list(limits) if limits else None, note=st.note, error=st.error, **kwargs,
        )  # fmt: skip
        self.on_msg(self._on_msg)
        model.on_progress = lambda fraction: self.send({"kind": "progress", "fraction": fraction})

    def _on_msg(self, _widget: Any, content: Any, buffers: list[Any]) -> None:
        if not isinstance(content, dict):
            return
        if content.get("kind") == "png":  # the browser's export of the current view
            self.png = bytes(buffers[0]) if buffers else None
            return
        reply, out = self.model.handle(content)
        if reply.get("kind") == "spectrum":
            self.spectrum = self.model.last_spectrum
        self.error = self.model.state.error
        self.send(reply, out)

    def spectrum_at(self, y: int, x: int) -> Any:
        """Draw the spectrum of file pixel ``(y, x)`` as a click does, and return it as a
        DataArray (:meth:`spectrum_dataarray`)."""
        self._on_msg(self, {"kind": "spectrum", "y": int(y), "x": int(x)}, [])
        if self.error:
            raise DataError(self.error)
        return self.spectrum_dataarray()

    def spectrum_dataarray(self) -> Any:
        """The spectrum last drawn as an xarray DataArray, its coordinate the channel labels
        (name and unit in ``attrs``), where it comes from in ``attrs``."""
        import xarray as xr

        if self.spectrum is None:
            raise DataError(f"{self.model.source.where}: no spectrum drawn yet (click a pixel)")
        labels = self.model.source.labels
        dim = labels.name.lower() or "channel"
        sp = self.spectrum
        coord = xr.Variable(dim, labels.values, attrs={"units": labels.unit})
        bunit = self.info.get("bunit", "")
        return xr.DataArray(
            sp.values, dims=(dim,), coords={dim: coord}, name="spectrum",
            attrs={"units": bunit, "kind": sp.kind, "where": list(sp.where),
                   "source": self.model.source.where},
        )  # fmt: skip
