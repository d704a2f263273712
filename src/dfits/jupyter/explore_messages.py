"""The explorer's wire format: browser messages to model requests, replies to bytes.

The contract: :func:`answer` takes one message ``{"kind": ..., "id": ...}`` from the browser
and returns ``(reply, buffers)``: a JSON-able dict and the binary buffers sent with it.
Planes travel as one float32 buffer (``h × w × 4`` bytes, C order), spectra as one float64
buffer (``nchan × 8`` bytes), so the colour map and stretch are applied in the browser and
no value is rounded through JSON. Kinds: ``plane``, ``spectrum``, ``box``, ``cursor``,
``moment0``, ``limits``. An unknown kind raises :class:`~dfits.DataError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dfits.errors import DataError

if TYPE_CHECKING:
    from dfits.jupyter.explore_model import ExploreModel, Plane, Spectrum

__all__ = ["answer", "plane_reply", "spectrum_reply"]


def plane_reply(model: ExploreModel, plane: Plane, kind: str = "plane") -> tuple[dict, list]:
    """A plane's reply: where it lies, its step and shape, its channel's label."""
    h, w = plane.data.shape
    reply = {
        "kind": kind, "channel": plane.channel, "window": list(plane.window),
        "step": plane.step, "shape": [h, w], "label": model.channel_label(plane.channel),
        "stokes": model.state.stokes, "nbytes": plane.nbytes,
    }  # fmt: skip
    finite = np.isfinite(plane.data)
    if not finite.any():
        reply["note"] = "this plane is all NaN"
    return reply, [plane.data.tobytes()]


def spectrum_reply(spectrum: Spectrum) -> tuple[dict, list]:
    values = np.ascontiguousarray(spectrum.values, dtype=np.float64)
    reply = {"kind": "spectrum", "box": spectrum.kind == "box", "where": list(spectrum.where),
             "n": int(values.size), "nbytes": int(values.nbytes)}  # fmt: skip
    return reply, [values.tobytes()]


def answer(model: ExploreModel, msg: dict[str, Any]) -> tuple[dict, list]:
    """Run the request ``msg`` names on ``model`` (see the module docstring)."""
    kind = msg.get("kind")
    if kind == "plane":
        window = msg.get("window")
        plane = model.plane(msg.get("channel"), tuple(window) if window else None,
                            msg.get("view"), msg.get("stokes"))  # fmt: skip
        return plane_reply(model, plane)
    if kind == "spectrum":
        return spectrum_reply(model.spectrum(int(msg["y"]), int(msg["x"])))
    if kind == "box":
        y0, y1, x0, x1 = (int(v) for v in msg["box"])
        return spectrum_reply(model.box_spectrum(y0, y1, x0, x1))
    if kind == "cursor":
        return {"kind": "cursor", **model.cursor(int(msg["y"]), int(msg["x"]))}, []
    if kind == "moment0":
        c0, c1 = msg.get("slab") or (0, model.source.nchan - 1)
        return plane_reply(model, model.moment0(int(c0), int(c1)), "moment0")
    if kind == "limits":
        limits = model.sample_limits()
        return {"kind": "limits", "limits": list(limits) if limits else None,
                "note": model.state.note}, []  # fmt: skip
    raise DataError(f"{model.source.where}: unknown explorer request {kind!r}")
