"""Give dfits' objects their notebook renderings: imported by ``import dfits``, so it is light.

The contract: importing this module registers, in :mod:`dfits._display`, the HTML reprs of
:class:`~dfits.FitsFile`, :class:`~dfits.HDU` and :class:`~dfits.Header` and the figures behind
``hdu.quicklook()`` and the xarray accessor's ``quicklook`` / ``plot_channel_maps``. Classes
are named, not imported, and the figure module (numpy, matplotlib, astropy.wcs) loads on the
first figure drawn, so ``import dfits`` imports neither dask nor numpy through it.
"""

from __future__ import annotations

from typing import Any

from dfits._display import register_figure, register_html
from dfits.jupyter.repr import file_html, hdu_html, header_html

__all__ = ["register"]


def _quicklook(hdu: Any, *args: Any, **kwargs: Any) -> Any:
    from dfits.jupyter.figures import quicklook

    return quicklook(hdu, *args, **kwargs)


def _channel_maps(hdu: Any, *args: Any, **kwargs: Any) -> Any:
    from dfits.jupyter.figures import plot_channel_maps

    return plot_channel_maps(hdu, *args, **kwargs)


def register() -> None:
    """(Re-)register every rendering and figure of :mod:`dfits.jupyter`."""
    register_html("dfits.file.FitsFile", file_html)
    register_html("dfits.file.HDU", hdu_html)
    register_html("dfits.format.header.Header", header_html)
    register_figure("quicklook", _quicklook)
    register_figure("channel_maps", _channel_maps)


register()
