"""Jupyter helpers: rich HTML reprs, quick-look figures and progress-aware ``compute``.

Importing :mod:`dfits.jupyter` is cheap: matplotlib, astropy.wcs and distributed load only when
a quick look or a computation asks for them.

>>> from dfits.jupyter import quicklook, plot_channel_maps, compute   # doctest: +SKIP
"""

from __future__ import annotations

# Imported eagerly (numpy only): the function ``quicklook`` must win over the submodule of the
# same name, which the import system would otherwise bind on this package.
from dfits.jupyter.progress import compute
from dfits.jupyter.quicklook import decimation, plot_channel_maps, quicklook
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
