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

from dfits.jupyter.annotate import channel_width, draw_beam, masked, spectral_axis
from dfits.jupyter.decimate import MAX_BYTES, decimation, remote_bytes, touched_bytes

__all__ = ["decimation", "plot_channel_maps", "quicklook", "touched_bytes"]


def _is_remote(hdu: Any) -> bool:
    # dfits HDUs expose their byte source; array-backed views (xarray's .fits) have none
    block = getattr(hdu.section, "block", None)
    return block is not None and not block.source.mappable


def _read(hdu: Any, steps: tuple[int, ...], lead: tuple[int, ...]) -> np.ndarray:
    """The decimated data (physical values), leading extra axes fixed at ``lead``."""
    section = hdu.section
    sl = tuple(slice(None, None, s) for s in steps)
    if not _is_remote(hdu) or len(steps) < 2:
        return np.asarray(section[(*lead, *sl)], dtype=np.float64)
    n0 = hdu.shape[len(lead)]
    planes = [section[(*lead, i, *sl[1:])] for i in range(0, n0, steps[0])]
    return np.asarray(np.stack(planes), dtype=np.float64)


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


def _celestial_wcs(header: Any, steps: tuple[int, int]) -> Any:
    """A 2-D celestial WCS sliced like the decimated image, or None."""
    ctypes = [str(header.get(f"CTYPE{i}", "") or "") for i in (1, 2)]
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


def _figure(figsize: tuple[float, float]) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _image_axes(fig: Any, spec: Any, wcs: Any) -> Any:
    args = spec if isinstance(spec, tuple) else (spec,)
    if wcs is None:
        ax = fig.add_subplot(*args)
        ax.set_xlabel("x [pixel]")
        ax.set_ylabel("y [pixel]")
        return ax
    ax = fig.add_subplot(*args, projection=wcs)
    ax.coords[0].set_axislabel(str(wcs.wcs.ctype[0]).split("-")[0] or "lon")
    ax.coords[1].set_axislabel(str(wcs.wcs.ctype[1]).split("-")[0] or "lat")
    return ax


def _limits(image: np.ndarray) -> tuple[float | None, float | None]:
    finite = image[np.isfinite(image)]
    if finite.size == 0:
        return None, None
    lo, hi = np.percentile(finite, [1.0, 99.5])
    return float(lo), float(hi) if hi > lo else float(lo) + 1.0


def _plan(hdu: Any, full: bool, max_bytes: int) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """(leading fixed indices, strides of the last ≤3 axes, a sentence about the read)."""
    if not hdu.is_image or not hdu.shape:
        raise ValueError(f"HDU {hdu.index} ({hdu.kind}) has no image data to look at")
    shape = hdu.shape
    nd = len(shape)
    # a cube only when the WCS's spectral axis is the one above the image plane; other
    # leading axes (Stokes, HST's chip groups) are fixed at their first plane
    cube = nd >= 3 and spectral_axis(hdu.header, nd) == nd - 3
    lead = (0,) * max(0, nd - (3 if cube else 2))
    tail = shape[len(lead) :]
    layout = getattr(hdu, "layout", None)  # array-backed views (xarray) have no byte layout
    itemsize = layout.decode.itemsize if layout is not None else hdu.dtype.itemsize
    total = math.prod(tail) * itemsize
    if full:
        return lead, (1,) * len(tail), f"full resolution: all {_mib(total)} reduced with dask"
    remote = _is_remote(hdu)
    steps = decimation(tail, itemsize, max_bytes, remote=remote)
    cost = (remote_bytes if remote else touched_bytes)(tail, itemsize, steps)
    if steps == (1,) * len(tail):
        return lead, steps, f"full resolution: read {_mib(total)}"
    stride = "×".join(str(s) for s in steps)
    return (
        lead,
        steps,
        f"decimated {stride} (section[{', '.join(f'::{s}' for s in steps)}]): "
        f"touched ≈{_mib(min(cost, total))} of {_mib(total)}",
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
        An image HDU: a cube (the slowest numpy axis is spectral), or a 2-D image (shown
        alone). Extra leading axes (Stokes) are fixed at index 0.
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
    lead, steps, note = _plan(hdu, full, max_bytes)
    header = hdu.header
    bunit = str(header.get("BUNIT", "") or "").strip()
    if len(steps) == 1:
        raise ValueError("quicklook needs an image of 2 or more axes")
    fits_axis = len(hdu.shape) - len(lead)
    width, wunit = channel_width(header, fits_axis) if len(steps) == 3 else (1.0, "")
    if spectral is not None and len(steps) == 3 and len(spectral[0]) > 1:
        width = np.abs(np.gradient(np.asarray(spectral[0], dtype=np.float64)))
        wunit = spectral[1].split("[")[-1].rstrip("]") if "[" in spectral[1] else ""
    image, spectrum = _moment0_and_spectrum(hdu, lead, steps, full, width)
    wcs = _celestial_wcs(header, steps[-2:])
    name = f"HDU {hdu.index} {hdu.name}".strip()
    if lead and spectrum is None:
        name += f" [plane {', '.join(map(str, lead))}]"
    fig = _figure((6.0, 5.4) if spectrum is None else (11.0, 4.8))
    grid = fig.add_gridspec(
        1, 1 if spectrum is None else 2, width_ratios=(1.0, 1.2)[: 1 + (spectrum is not None)]
    )
    ax = _image_axes(fig, grid[0, 0], wcs)
    vmin, vmax = _limits(image)
    im = ax.imshow(masked(image), origin="lower", cmap="viridis", vmin=vmin, vmax=vmax)
    draw_beam(ax, header, wcs)
    if spectrum is None:
        fig.colorbar(im, ax=ax, label=bunit or "value [no BUNIT]")
        ax.set_title(name)
    else:
        # Σ I·Δν as .fits.moment(0): unit BUNIT × the spectral axis' unit
        unit = " ".join(u for u in (bunit, wunit) if u) or "no BUNIT, per channel"
        fig.colorbar(im, ax=ax, label=f"moment 0: Σ I·Δ [{unit}]")
        ax.set_title(f"{name}: moment 0")
        x, label = _axis_values(header, fits_axis, hdu.shape[len(lead)], steps[0])
        if spectral is not None:
            x, label = np.asarray(spectral[0])[:: steps[0]], spectral[1]
        _spectrum_panel(fig.add_subplot(grid[0, 1]), x, label, spectrum, bunit)
    fig.text(0.005, 0.005, note, fontsize=7, alpha=0.7, ha="left", va="bottom")
    return fig


def _spectrum_panel(sp: Any, x: Any, label: str, spectrum: Any, bunit: str) -> None:
    sp.plot(x, spectrum, drawstyle="steps-mid", lw=1.0)
    sp.set_xlabel(label)
    sp.set_ylabel(f"mean [{bunit}]" if bunit else "mean [no BUNIT]")
    sp.set_title("integrated spectrum (spatial mean)")
    sp.ticklabel_format(axis="x", useOffset=False)
    sp.grid(alpha=0.3)


def _moment0_and_spectrum(
    hdu: Any, lead: tuple[int, ...], steps: tuple[int, ...], full: bool, width: Any = 1.0
) -> tuple[np.ndarray, Any]:
    """Moment 0 (Σ I·Δ, ``width`` per channel or one for all; NaN where no channel is
    finite) and the mean spectrum of a cube, as float64; an image and None in 2-D."""
    each = np.ndim(width) == 1  # per-channel widths weight the sum; one width scales it
    if full:
        from dfits.array import reduce
        from dfits.jupyter.progress import compute

        data = hdu.data[lead] if lead else hdu.data
        if len(steps) != 3:
            (image,) = compute(data, progress=False)
            return np.asarray(image, dtype=np.float64), None
        weighted = data * width[:, None, None] if each else data
        image, finite, spectrum = compute(
            reduce(weighted, "nansum", axis=0),
            reduce(data, "count", axis=0),
            reduce(data, "nanmean", axis=(1, 2)),
            progress=False,
        )
        image = np.where(np.asarray(finite) > 0, np.asarray(image, dtype=np.float64), np.nan)
        return image * (1.0 if each else width), spectrum
    cube = _read(hdu, steps, lead)
    if len(steps) != 3:
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
    lead, steps, note = _plan(hdu, full, max_bytes)
    if len(steps) != 3:
        raise ValueError(
            f"HDU {hdu.index} {hdu.name}: channel maps need a cube with a spectral axis in its "
            "WCS (3 or more axes); this image has none"
        )
    maps, chans = _channel_means(hdu, lead, steps, n, full)
    header = hdu.header
    fits_axis = len(hdu.shape) - len(lead)
    values, label = spectral or _axis_values(header, fits_axis, hdu.shape[len(lead)])
    ncols = ncols or math.ceil(math.sqrt(len(maps)))
    nrows = math.ceil(len(maps) / ncols)
    fig = _figure((2.6 * ncols + 0.8, 2.6 * nrows + 0.4))
    stack = np.stack([np.asarray(m, dtype=np.float64) for m in maps])
    vmin, vmax = _limits(stack)
    wcs = _celestial_wcs(header, steps[-2:])
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
    hdu: Any, lead: tuple[int, ...], steps: tuple[int, ...], n: int, full: bool
) -> tuple[list[Any], list[np.ndarray]]:
    """Mean maps of ``n`` equal channel groups, and each group's channels in the file."""
    if full:
        from dfits.array import reduce
        from dfits.jupyter.progress import compute

        data = hdu.data[lead] if lead else hdu.data
        groups = np.array_split(np.arange(data.shape[0]), min(n, data.shape[0]))
        maps = compute(
            *[reduce(data[g[0] : g[-1] + 1], "nanmean", axis=0) for g in groups], progress=False
        )
        return list(maps), list(groups)
    cube = _read(hdu, steps, lead)
    groups = np.array_split(np.arange(cube.shape[0]), min(n, cube.shape[0]))
    with _quiet():
        maps = [np.nanmean(cube[g[0] : g[-1] + 1], axis=0) for g in groups]
    return maps, [g * steps[0] for g in groups]
