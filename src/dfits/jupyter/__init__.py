"""Jupyter helpers: rich HTML reprs, quick-look figures and progress-aware ``compute``.

Importing :mod:`dfits.jupyter` is cheap (``import dfits`` does it, to register the reprs):
numpy, matplotlib, astropy.wcs and distributed load only when a figure or a computation asks
for them.

>>> from dfits.jupyter import quicklook, plot_channel_maps, compute   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from dfits.jupyter import _register  # noqa: F401  (registers reprs and figures)
from dfits.jupyter.repr import file_html, hdu_html, header_html

__all__ = [
    "compute",
    "decimation",
    "file_html",
    "hdu_html",
    "header_html",
    "plot_channel_maps",
    "quicklook",
]

# The figure functions load with numpy on first use (see dfits.jupyter.figures), compute
# with dask (its progress bar is one of dask's callbacks).
_LAZY = {
    "compute": "progress",
    "decimation": "figures",
    "plot_channel_maps": "figures",
    "quicklook": "figures",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'dfits.jupyter' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"dfits.jupyter.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
