"""Quick-look figures of images and cubes: moment-0 map, integrated spectrum, channel maps.

By default a quick look reads a *decimated* view — ``hdu.section[::s0, ::s1, ::s2]`` with
strides chosen so that at most ``max_bytes`` of the file are touched (counted in 4 KiB pages
for local files, whole planes for remote ones) — and says so on the figure. ``full=True``
reduces every value with the fused dask kernels instead.

Figures are plain :class:`matplotlib.figure.Figure` objects on the Agg canvas: pyplot is never
imported, nothing is shown, and Jupyter displays the returned figure.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from dfits.errors import DataError, SpectralError, UnsupportedError, where
from dfits.jupyter.annotate import channel_width, draw_beam, masked
from dfits.jupyter.axes import Axes, view_axes
from dfits.jupyter.decimate import (
    DECODE,
    MAX_BYTES,
    SHOWN,
    decimation,
    decoded_bytes,
    remote_bytes,
    touched_bytes,
)
from dfits.jupyter.panels import figure, quicklook_panels

__all__ = ["decimation", "plot_channel_maps", "quicklook", "touched_bytes"]


def _is_remote(hdu: Any) -> bool:
    # dfits HDUs expose their byte source; array-backed views (xarray's .fits) have none
    block = getattr(hdu.section, "block", None)
    return block is not None and not block.source.mappable


def _read(hdu: Any, steps: tuple[int, ...], axes: Axes) -> np.ndarray:
    """The decimated data (physical values) in display order, other axes at their first
    plane; remote files plane by plane along the slowest shown axis."""
    section = hdu.section
    index = axes.index(steps)
    if not _is_remote(hdu) or len(steps) < 2 or _tiles(hdu) is not None:
        # (a compressed image's reader fetches only the tiles it decodes, each once)
        return axes.arrange(np.asarray(section[index], dtype=np.float64))
    first = axes.kept[0]
    planes = [
        section[(*index[:first], i, *index[first + 1 :])]
        for i in range(0, axes.shape[first], index[first].step)
    ]
    return axes.arrange(np.asarray(np.stack(planes), dtype=np.float64))


def _tiles(hdu: Any) -> Any:
    """A tile-compressed image's tile layout, else None."""
    return getattr(getattr(hdu.section, "block", None), "tiles", None)


def _axis_values(header: Any, fits_axis: int, n: int, steps: int = 1) -> tuple[Any, str]:
    """Linear world values along one axis from CRVAL/CDELT/CRPIX (pixel numbers if absent)."""
    pix = np.arange(0, n, steps, dtype=np.float64)
    crval = header.get(f"CRVAL{fits_axis}")
    cdelt = header.get(f"CDELT{fits_axis}", header.get(f"CD{fits_axis}_{fits_axis}"))
    if not isinstance(crval, int | float) or not isinstance(cdelt, int | float):
        return pix, "channel"
    crpix = header.get(f"CRPIX{fits_axis}", 1.0)
    crpix = crpix if isinstance(crpix, int | float) else 1.0
    values = crval + (pix + 1 - crpix) * cdelt
    ctype = str(header.get(f"CTYPE{fits_axis}", "") or "").strip()
    unit = str(header.get(f"CUNIT{fits_axis}", "") or "").strip()
    if ctype.startswith("FREQ") and unit in ("Hz", ""):
        return values / 1e9, f"{ctype} [GHz]"
    return values, f"{ctype} [{unit}]" if unit else (ctype or "world")


def _celestial_wcs(header: Any, steps: tuple[int, int], axes: Axes) -> Any:
    """A 2-D celestial WCS sliced like the decimated image (its plane celestial), or None."""
    nd = len(axes.shape)
    ctypes = [str(header.get(f"CTYPE{nd - a}", "") or "") for a in axes.plane]
    if not all(c[:4] in ("RA--", "DEC-", "GLON", "GLAT", "ELON", "ELAT") for c in ctypes):
        return None
    try:
        import warnings

        from astropy.wcs import WCS, FITSFixedWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FITSFixedWarning)
            wcs = WCS(header.to_astropy()).celestial
        if not wcs.has_celestial:
            return None
        return wcs.slice((slice(None, None, steps[0]), slice(None, None, steps[1])))
    except Exception:
        return None


def _image_axes(fig: Any, spec: Any, wcs: Any) -> Any:
    """Image axes at ``spec``: a rectangle (a list) or a subplot's (nrows, ncols, index)."""
    add = fig.add_axes if isinstance(spec, list) else fig.add_subplot
    args = spec if isinstance(spec, tuple) else (spec,)
    if wcs is None:
        ax = add(*args)
        ax.set_xlabel("x [pixel]")
        ax.set_ylabel("y [pixel]")
        return ax
    ax = add(*args, projection=wcs)
    ax.coords[0].set_axislabel(str(wcs.wcs.ctype[0]).split("-")[0] or "lon")
    ax.coords[1].set_axislabel(str(wcs.wcs.ctype[1]).split("-")[0] or "lat")
    return ax


def _limits(image: np.ndarray) -> tuple[float | None, float | None]:
    finite = image[np.isfinite(image)]
    if finite.size == 0:
        return None, None
    lo, hi = np.percentile(finite, [1.0, 99.5])
    return float(lo), float(hi) if hi > lo else float(lo) + 1.0


def _where(hdu: Any) -> str:
    """``file 'x.fits', HDU 1 ('SCI')`` for a file's HDU; the name alone for an array view."""
    filename = getattr(getattr(hdu, "_file", None), "filename", None)
    if filename is None:
        return f"HDU {hdu.index} ({hdu.name})" if hdu.name else f"HDU {hdu.index}"
    return where(str(filename), hdu.index, hdu.name or None)


def _plan(hdu: Any, full: bool, max_bytes: int) -> tuple[Axes, tuple[int, ...], str]:
    """(the shown axes, their strides in display order, a sentence about the read)."""
    if not hdu.is_image or not hdu.shape:
        raise UnsupportedError(f"{_where(hdu)}: a {hdu.kind} HDU has no image data to look at")
    if len(hdu.shape) < 2:
        raise DataError(f"{_where(hdu)}: quicklook needs an image of 2 or more axes, "
                        f"not shape {tuple(hdu.shape)}")  # fmt: skip
    if not isinstance(max_bytes, int | float) or not max_bytes > 0:
        raise DataError(f"{_where(hdu)}: max_bytes must be a positive number, not {max_bytes!r}")
    # the spectrum and the image plane come from the WCS, not from their positions
    axes = view_axes(hdu.header, tuple(hdu.shape))
    tail = axes.tail
    layout = getattr(hdu, "layout", None)  # array-backed views (xarray) have no byte layout
    itemsize = layout.decode.itemsize if layout is not None else hdu.dtype.itemsize
    total = math.prod(tail) * itemsize
    if full:
        return axes, (1,) * len(tail), f"full resolution: all {_mib(total)} reduced with dask"
    remote = _is_remote(hdu)
    tiles = _tiles(hdu)

    def cost(steps: tuple[int, ...]) -> int:
        if tiles is not None:  # the tiles decoded, wherever they are
            return decoded_bytes(axes.shape, itemsize, axes.file_steps(steps), tiles.tile)
        if remote:  # whole planes of the slowest shown axis
            kept = axes.kept
            by_axis = dict(zip(axes.display, steps, strict=True))
            shape = tuple(axes.shape[a] for a in kept)
            return remote_bytes(shape, itemsize, tuple(by_axis[a] for a in kept))
        return touched_bytes(axes.shape, itemsize, axes.file_steps(steps))

    steps = decimation(tail, itemsize, max_bytes, remote=remote, cost=cost, shown=SHOWN)
    if steps == (1,) * len(tail):
        return axes, steps, f"full resolution: read {_mib(total)}"
    stride = "×".join(str(s) for s in steps)
    return (
        axes,
        steps,
        f"decimated {stride} (section[{', '.join(f'::{s}' for s in steps)}]): "
        f"{'decoded' if tiles is not None else 'touched'} "
        f"≈{_mib(min(cost(steps) // (1 if tiles is None else DECODE), total))} of {_mib(total)}",
    )


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def quicklook(
    hdu: Any, full: bool = False, max_bytes: int = MAX_BYTES, spectral: Any = None
) -> Any:
    """A figure with the moment-0 map and the integrated spectrum of an image HDU.

    Parameters
    ----------
    hdu : dfits.HDU
        An image HDU: a cube (its WCS names a spectral axis, at any position), or an image
        (shown alone). The image plane is the celestial pair of axes (else the last two);
        other axes (Stokes, degenerate ones) are fixed at index 0.
    full : bool
        Reduce every value with dask (``nansum`` / ``nanmean`` kernels) instead of a
        decimated read.
    max_bytes : int
        Upper bound on the bytes a decimated read touches.
    spectral : (array, str), optional
        One spectral value per channel and its ``"NAME [unit]"`` (the xarray accessor passes
        its coordinate, in the unit chosen by ``with_spectral_unit``): moment 0 then
        integrates over ``|gradient(values)|`` in that unit, as ``.fits.moment(0)`` does.

    Returns
    -------
    matplotlib.figure.Figure
        On the Agg canvas; ``fig.savefig(...)`` or let Jupyter display it.
    """
    axes, steps, note = _plan(hdu, full, max_bytes)
    header = hdu.header
    bunit = str(header.get("BUNIT", "") or "").strip()
    cube = axes.spectral is not None
    fits_axis = axes.fits_axis(axes.spectral) if cube else 0
    width, wunit = channel_width(header, fits_axis) if cube else (1.0, "")
    if spectral is not None and cube and len(spectral[0]) > 1:
        width = np.abs(np.gradient(np.asarray(spectral[0], dtype=np.float64)))
        wunit = spectral[1].split("[")[-1].rstrip("]") if "[" in spectral[1] else ""
    image, spectrum = _moment0_and_spectrum(hdu, axes, steps, full, width)
    wcs = _celestial_wcs(header, steps[-2:], axes)
    name = f"HDU {hdu.index} {hdu.name}".strip()
    if axes.fixed and spectrum is None:
        name += f" [plane {', '.join('0' for _ in axes.fixed)}]"
    fig, panels = quicklook_panels(image.shape, spectrum is not None)
    ax = _image_axes(fig, panels.image, wcs)
    vmin, vmax = _limits(image)
    im = ax.imshow(masked(image), origin="lower", cmap="viridis", vmin=vmin, vmax=vmax)
    draw_beam(ax, header, wcs)
    title, label = name, bunit or "value [no BUNIT]"
    if spectrum is not None:
        # Σ I·Δν as .fits.moment(0): unit BUNIT × the spectral axis' unit
        unit = " ".join(u for u in (bunit, wunit) if u) or "no BUNIT, per channel"
        title, label = f"{name}: moment 0", f"moment 0: Σ I·Δv [{unit}]"
    # y=1.0: placed, not lifted above top tick labels (there are none) after measuring every
    # tick label on each draw (~10 ms of the PNG Jupyter makes)
    ax.set_title(title, y=1.0)
    # labelled as matplotlib labels the colour bars it places itself
    fig.colorbar(im, cax=fig.add_axes(panels.bar, label="<colorbar>"), label=label)
    if spectrum is not None:
        x, label = _axis_values(header, fits_axis, axes.tail[0], steps[0])
        if spectral is not None:
            x, label = np.asarray(spectral[0])[:: steps[0]], spectral[1]
        _spectrum_panel(fig.add_axes(panels.spectrum), x, label, spectrum, bunit)
    fig.text(0.005, 0.005, note, fontsize=7, alpha=0.7, ha="left", va="bottom")
    return fig


def _spectrum_panel(sp: Any, x: Any, label: str, spectrum: Any, bunit: str) -> None:
    sp.plot(x, spectrum, drawstyle="steps-mid", lw=1.0)
    sp.set_xlabel(label)
    sp.set_ylabel(f"mean [{bunit}]" if bunit else "mean [no BUNIT]")
    sp.set_title("integrated spectrum (spatial mean)", y=1.0)
    sp.ticklabel_format(axis="x", useOffset=False)
    # channel values with many digits (GHz): five labels that do not run into each other
    sp.locator_params(axis="x", nbins=5)
    sp.grid(alpha=0.3)


def _moment0_and_spectrum(
    hdu: Any, axes: Axes, steps: tuple[int, ...], full: bool, width: Any = 1.0
) -> tuple[np.ndarray, Any]:
    """Moment 0 (Σ I·Δv, ``width`` per channel or one for all; NaN where no channel is
    finite) and the mean spectrum of a cube, as float64; an image and None without a
    spectral axis."""
    each = np.ndim(width) == 1  # per-channel widths weight the sum; one width scales it
    if full:
        from dfits.array import reduce
        from dfits.jupyter.progress import compute

        data = hdu.data[axes.index()]
        if axes.spectral is None:
            (image,) = compute(data, progress=False)
            return axes.arrange(np.asarray(image, dtype=np.float64)), None
        # reduce along the file's own axes (no transpose: chunks stay stored bytes)
        s = axes.position(axes.spectral)
        plane = tuple(axes.position(a) for a in axes.plane)
        weights = np.reshape(width, (-1,) + (1,) * (data.ndim - 1 - s)) if each else 1.0
        image, finite, spectrum = compute(
            reduce(data * weights if each else data, "nansum", axis=s),
            reduce(data, "count", axis=s),
            reduce(data, "nanmean", axis=plane),
            progress=False,
        )
        image = np.where(np.asarray(finite) > 0, np.asarray(image, dtype=np.float64), np.nan)
        return image * (1.0 if each else width), spectrum
    cube = _read(hdu, steps, axes)
    if axes.spectral is None:
        return cube, None
    with np.errstate(invalid="ignore"), _quiet():
        # every steps[0]-th channel read: scale the sum to the whole band
        weights = np.asarray(width)[:: steps[0], None, None] if each else width
        image = np.nansum(cube * weights, axis=0) * steps[0]
        image[~np.isfinite(cube).any(axis=0)] = np.nan
        spectrum = np.nanmean(cube, axis=(1, 2))
    return image, spectrum


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's all-NaN slice warnings (flagged channels are expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def plot_channel_maps(
    hdu: Any,
    n: int = 9,
    *,
    ncols: int | None = None,
    full: bool = False,
    max_bytes: int = MAX_BYTES,
    spectral: tuple[Any, str] | None = None,
) -> Any:
    """A grid of ``n`` channel maps: the cube's channels split into ``n`` equal groups,
    each panel the mean of its group, on one colour scale (read decimated unless ``full``).
    ``spectral``: (one value per channel, ``"NAME [unit]"``) to title the panels with,
    instead of the header's linear axis (the xarray accessor passes its coordinate).

    Returns
    -------
    matplotlib.figure.Figure
    """
    axes, steps, note = _plan(hdu, full, max_bytes)
    if axes.spectral is None:
        raise SpectralError(
            f"{_where(hdu)}: channel maps need a cube with a spectral axis in its WCS "
            f"(3 or more axes); this image of shape {tuple(hdu.shape)} has none"
        )
    if not isinstance(n, int) or n < 1:
        raise DataError(f"{_where(hdu)}: channel maps need n >= 1 panels, not {n!r}")
    maps, chans = _channel_means(hdu, axes, steps, n, full)
    header = hdu.header
    fits_axis = axes.fits_axis(axes.spectral)
    values, label = spectral or _axis_values(header, fits_axis, axes.tail[0])
    ncols = ncols or math.ceil(math.sqrt(len(maps)))
    nrows = math.ceil(len(maps) / ncols)
    fig = figure((2.6 * ncols + 0.8, 2.6 * nrows + 0.4))
    stack = np.stack([np.asarray(m, dtype=np.float64) for m in maps])
    vmin, vmax = _limits(stack)
    wcs = _celestial_wcs(header, steps[-2:], axes)
    im = None
    for k, (m, ch) in enumerate(zip(stack, chans, strict=True)):
        ax = _image_axes(fig, (nrows, ncols, k + 1), wcs)
        im = ax.imshow(masked(m), origin="lower", cmap="viridis", vmin=vmin, vmax=vmax)
        draw_beam(ax, header, wcs)
        lo, hi = values[ch[0]], values[ch[-1]]
        unit = label.split("[")[-1].rstrip("]") if "[" in label else ""
        ax.set_title(f"ch {ch[0]}–{ch[-1]}: {lo:.4f}–{hi:.4f} {unit}", fontsize=8)
        if wcs is not None:
            ax.coords[0].set_ticks(number=3)
            ax.coords[1].set_ticks(number=3)
            ax.coords[0].set_ticklabel_visible(k // ncols == nrows - 1)
            ax.coords[1].set_ticklabel_visible(k % ncols == 0)
            ax.coords[0].set_axislabel("")
            ax.coords[1].set_axislabel("")
        else:
            ax.set_xlabel("")
            ax.set_ylabel("")
    bunit = str(header.get("BUNIT", "") or "").strip()
    fig.colorbar(
        im, ax=fig.axes, shrink=0.8, label=f"mean [{bunit}]" if bunit else "mean [no BUNIT]"
    )
    fig.suptitle(f"HDU {hdu.index} {hdu.name}: {len(maps)} channel maps", fontsize=10)
    fig.text(0.005, 0.005, note, fontsize=7, alpha=0.7, ha="left", va="bottom")
    return fig


def _channel_means(
    hdu: Any, axes: Axes, steps: tuple[int, ...], n: int, full: bool
) -> tuple[list[Any], list[np.ndarray]]:
    """Mean maps of ``n`` equal channel groups, and each group's channels in the file."""
    if full:
        from dfits.array import reduce
        from dfits.jupyter.progress import compute

        data = hdu.data[axes.index()]
        s = axes.position(axes.spectral)
        groups = np.array_split(np.arange(data.shape[s]), min(n, data.shape[s]))
        # along the file's own axes: each group a slice of the spectral axis, reduced there
        pick = [(slice(None),) * s + (slice(g[0], g[-1] + 1),) for g in groups]
        maps = compute(*[reduce(data[p], "nanmean", axis=s) for p in pick], progress=False)
        return list(maps), list(groups)
    cube = _read(hdu, steps, axes)
    groups = np.array_split(np.arange(cube.shape[0]), min(n, cube.shape[0]))
    with _quiet():
        maps = [np.nanmean(cube[g[0] : g[-1] + 1], axis=0) for g in groups]
    return maps, [g * steps[0] for g in groups]
