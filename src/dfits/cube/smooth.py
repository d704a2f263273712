"""Spatial convolution of a cube, plane by plane, lazily: ``convolve_to(beam)`` and smoothing.

The contract: :func:`convolve_planes` convolves every (y, x) plane of a DataArray with an
astropy convolution kernel as a ``map_overlap`` over the cube's own chunks — each task reads
its chunk plus a halo as deep as the kernel's half-size, convolves its planes with
:func:`astropy.convolution.convolve_fft` (or ``convolve``; zero fill beyond the image,
NaNs interpolated) and keeps the chunk's core, so the result equals convolving whole planes
while memory stays at chunk × threads. Pixels that were NaN (or BLANK) stay NaN, as
spectral-cube's mask keeps them. :func:`convolve_to` builds the per-channel kernels the way
spectral-cube 0.7 does — the target beam deconvolved by each channel's beam, sampled at the
geometric-mean pixel scale, Jy/beam rescaled by the beam-area ratio, channels already at the
target beam left alone — and :func:`spatial_smooth` applies one kernel to every plane. The
kernels, like spectral-cube's, ignore any rotation between the pixel grid and the sky.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from dfits.cube import spectral
from dfits.cube.beams import beam_cards, cube_beams, keep_beams
from dfits.cube.errors import BeamError

__all__ = ["convolve_planes", "convolve_to", "spatial_smooth"]

#: A channel's kernel: None (copy the plane), or (deconvolved beam as (major, minor, pa)
#: in degrees, the Jy/beam factor); a fixed astropy kernel array for spatial_smooth.
Plan = Any


def _plane_kernel(plan: Plan, pixscale: float) -> Any:
    import astropy.units as u
    from radio_beam import Beam

    if isinstance(plan, np.ndarray):
        return plan
    major, minor, pa = plan
    return Beam(major * u.deg, minor * u.deg, pa * u.deg).as_kernel(pixscale * u.deg).array


def _convolve_block(
    block: np.ndarray,
    plans: list[Any],
    factors: np.ndarray,
    pixscale: float,
    convolve: Callable[..., Any],
    block_info: Any = None,
) -> np.ndarray:
    """Convolve the (…, channel, y, x) planes of one overlapped block."""
    start = block_info[0]["array-location"][-3][0] if block_info else 0
    data = np.asarray(block)  # the decoded values, once
    # the result in the block's own dtype, and float64 one plane at a time (what the
    # convolution works in): two float64 copies of a whole chunk per thread cost 4x the chunk
    out = np.empty(data.shape, dtype=block.dtype)
    for index in np.ndindex(*data.shape[:-2]):
        channel = start + index[-1]
        plan = plans[channel if len(plans) > 1 else 0]
        factor = factors[channel if factors.size > 1 else 0]
        plane = np.asarray(data[index], dtype=np.float64)
        if plan is None:
            out[index] = plane
            continue
        kernel = _plane_kernel(plan, pixscale)
        smoothed = convolve(plane, kernel, normalize_kernel=True, boundary="fill", fill_value=0.0)
        out[index] = np.where(np.isnan(plane), np.nan, smoothed * factor)
    return out


def convolve_planes(
    obj: xr.DataArray,
    plans: list[Any],
    factors: np.ndarray,
    pixscale: float,
    convolve: Callable[..., Any] | None = None,
) -> xr.DataArray:
    """``obj`` with each (y, x) plane convolved as ``plans`` say (see the module docstring)."""
    from astropy.convolution import convolve_fft

    from dfits.cube.lazy import as_dask

    convolve = convolve_fft if convolve is None else convolve
    dim = spectral.spectral_dim(obj)
    order = [d for d in obj.dims if d not in (dim, "y", "x")] + [dim, "y", "x"]
    cube = obj.transpose(*order)
    x = as_dask(cube)
    distinct = {p if isinstance(p, tuple) else id(p): p for p in plans if p is not None}
    sizes = [_plane_kernel(p, pixscale).shape for p in distinct.values()]
    half = [max((s[i] // 2 for s in sizes), default=0) for i in (0, 1)]
    half = [min(h, n - 1) for h, n in zip(half, x.shape[-2:], strict=True)]
    dtype = np.result_type(obj.dtype, np.float32)
    depth = {x.ndim - 2: half[0], x.ndim - 1: half[1]}
    data = x.astype(dtype).map_overlap(
        _convolve_block, depth=depth, boundary="none", dtype=dtype,
        plans=plans, factors=factors, pixscale=pixscale, convolve=convolve,
    )  # fmt: skip
    out = keep_beams(obj, cube.copy(data=data)).transpose(*obj.dims)
    return out


def _pixscale(celestial: Any) -> float:
    from astropy.wcs.utils import proj_plane_pixel_area

    return float(proj_plane_pixel_area(celestial) ** 0.5)


def convolve_to(
    obj: xr.DataArray,
    beam: Any,
    celestial: Any,
    convolve: Callable[..., Any] | None = None,
    allow_smaller: bool = False,
) -> xr.DataArray:
    """``obj`` convolved to ``beam`` (a :class:`radio_beam.Beam`), lazily, plane by plane."""
    import astropy.units as u
    from radio_beam import Beams
    from radio_beam.utils import BeamError as Undeconvolvable

    beams = cube_beams(obj)
    if beams is None:
        raise BeamError(f"{spectral.describe(obj)} has no beam (BMAJ/BMIN/BPA or BEAMS table)")
    channel_beams = list(beams) if isinstance(beams, Beams) else [beams]
    jy_beam = _is_jy_beam(obj)
    plans, factors = [], []
    for b in channel_beams:
        if b == beam:
            plans.append(None)  # already at the target: spectral-cube copies the plane
            factors.append(1.0)
            continue
        try:
            d = beam.deconvolve(b)
        except (ValueError, Undeconvolvable) as err:
            if not allow_smaller:
                raise BeamError(
                    f"{spectral.describe(obj)}: cannot convolve {b} to {beam}: {err}"
                ) from err
            plans.append(None)
            factors.append(1.0)
            continue
        plans.append(tuple(float(q.to_value(u.deg)) for q in (d.major, d.minor, d.pa)))
        factors.append(float(beam.sr / b.sr) if jy_beam else 1.0)
    out = convolve_planes(obj, plans, np.array(factors), _pixscale(celestial), convolve)
    out.encoding = {}  # one beam now, in the header: the file's beam table no longer applies
    return _with_beam_header(out, beam)


def _is_jy_beam(obj: xr.DataArray) -> bool:
    import astropy.units as u

    try:
        return u.Unit(str(obj.attrs.get("units", ""))).is_equivalent(u.Jy / u.beam)
    except ValueError:
        return False


def _with_beam_header(obj: xr.DataArray, beam: Any) -> xr.DataArray:
    from dfits.format.headertext import card_text, readable_header

    text = obj.attrs.get("fits_header")
    if isinstance(text, str):
        from dfits.format.header import Header

        header = Header(card_text(text).encode("latin-1")).to_astropy()
        header.remove("CASAMBM", ignore_missing=True)
        for key, value in beam_cards(beam).items():
            header[key] = value
        obj.attrs["fits_header"] = readable_header(header.tostring(padding=False))
    return obj


def spatial_smooth(
    obj: xr.DataArray,
    kernel: Any,
    convolve: Callable[..., Any] | None = None,
    raise_error_jybm: bool = True,
) -> xr.DataArray:
    """Every (y, x) plane of ``obj`` convolved with an astropy ``kernel``, lazily.

    Like spectral-cube's ``spatial_smooth`` (``astropy.convolution.convolve`` by default);
    the beam in the header is left as it was, so a Jy/beam cube is refused (its unit would
    lie) unless ``raise_error_jybm`` is False — use :func:`convolve_to` for those.
    """
    from astropy.convolution import convolve as direct

    if raise_error_jybm and _is_jy_beam(obj):
        raise BeamError(
            f"{spectral.describe(obj)} is in Jy/beam: smoothing changes the beam; use "
            "convolve_to(beam), or raise_error_jybm=False"
        )
    array = np.asarray(getattr(kernel, "array", kernel), dtype=float)
    if array.ndim != 2:
        raise ValueError(f"spatial_smooth needs a 2-d kernel, not shape {array.shape}")
    return convolve_planes(obj, [array], np.ones(1), 1.0, direct if convolve is None else convolve)
