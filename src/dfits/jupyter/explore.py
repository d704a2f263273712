"""``dfits.explore(obj)``: an interactive cube explorer in the notebook that reads one plane
per move.

The contract: :func:`explore` returns an :class:`~dfits.jupyter.explore_widget.Explorer`,
an anywidget (one ES module, ``explore.js``, shipped with the package: no build step) over an
:class:`~dfits.jupyter.explore_model.ExploreModel`. The browser asks; the model reads through
``section`` only the plane, window, spectrum or box asked for and sends float32/float64
buffers; the browser applies stretch, limits, colour map and NaN colour, draws the spectrum
with world-unit axes, and measures its own latencies. Creating the widget needs no browser
(the notebooks run headless in CI). Without anywidget installed, :func:`explore` raises
:class:`~dfits.UnsupportedError` naming the extra to install.

Examples
--------
>>> import tempfile, dfits
>>> from dfits.demo import make_cube
>>> path = make_cube(tempfile.mkdtemp() + "/c.fits", (8, 32, 24))
>>> w = dfits.explore(path)                     # doctest: +SKIP
>>> w.info["spectral_unit"]                     # doctest: +SKIP
'km/s'
"""

from __future__ import annotations

from typing import Any

from dfits.errors import UnsupportedError

__all__ = ["explore"]


def explore(
    obj: Any, hdu: Any = None, *, view: tuple[int, int] = (512, 512), unit: Any = None,
    convention: str = "radio", stretch: str = "asinh", cmap: str = "viridis",
) -> Any:  # fmt: skip
    """An interactive explorer of a cube or image: channel slider and play, zoom and pan,
    cursor readout (pixel, RA/Dec, value), spectrum on click, box mean spectrum on drag,
    moment-0 preview of a channel slab, Stokes selector, PNG and spectrum export.

    Parameters
    ----------
    obj : str, os.PathLike, dfits.HDU, xarray.DataArray or dask.array.Array
        The cube; a path opens the image HDU with the most axes (or ``hdu``).
    hdu : int or str, optional
        The HDU of a path.
    view : (int, int)
        The image's size on screen, in pixels (height, width): planes are read strided to it.
    unit : str or astropy unit, optional
        Unit of the channel labels (default: km/s radio velocity when the header has a rest
        frequency, GHz for other frequency axes, else the axis' own unit).
    convention : {"radio", "optical", "relativistic"}
        Velocity convention of velocity labels.
    stretch : {"linear", "sqrt", "log", "asinh"}
    cmap : {"viridis", "gray", "magma", "coolwarm"}

    Returns
    -------
    dfits.jupyter.explore_widget.Explorer
        Display it (last expression of a cell); ``.spectrum_dataarray()`` exports the
        spectrum last drawn, ``.png`` holds the last PNG exported from the browser.

    Raises
    ------
    dfits.DfitsError
        A table, a 1-D image, a header whose WCS astropy cannot read (naming file and HDU).
    dfits.UnsupportedError
        anywidget is not installed.
    """
    try:
        from dfits.jupyter.explore_widget import Explorer
    except ImportError as err:
        raise UnsupportedError(
            f"dfits.explore needs anywidget ({err}); pip install 'dfits[explore]'"
        ) from err
    from dfits.jupyter.explore_model import ExploreModel

    model = ExploreModel(obj, hdu, view=view, unit=unit, convention=convention)
    return Explorer(model, stretch=stretch, cmap=cmap)
