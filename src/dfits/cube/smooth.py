"""Spatial convolution of a cube, plane by plane, lazily: ``convolve_to(beam)`` and smoothing.

The contract: :func:`convolve_planes` convolves every (y, x) plane of a DataArray with a 2-D
kernel as a ``map_overlap`` over the cube's own chunks — each task reads its chunk plus a
halo as deep as the kernel's half-size (none where a chunk holds whole planes, as the file's
chunks of a 3-D cube do), convolves its planes and keeps the chunk's core, so the result
equals convolving whole planes while memory stays at chunk × threads. Chunks are not split
here: the ``.fits`` accessor hands over the file's chunks planned at half dask's
``array.chunk-size`` (a task's stored input and native output together near one chunk; a
split of a stored chunk would keep its whole map resident until both halves are done).
The convolution is :func:`astropy.convolution.convolve`'s (and ``convolve_fft``'s) with
their defaults: zeros beyond the image that count in the weight, NaN left out and
interpolated over, the kernel normalised. Pixels that were NaN (or BLANK) stay NaN, as
spectral-cube's mask keeps them. :func:`convolve_to` builds the per-channel kernels the way
spectral-cube 0.7 does — the target beam deconvolved by each channel's beam, sampled at the
geometric-mean pixel scale, Jy/beam rescaled by the beam-area ratio, channels already at the
target beam left alone — and :func:`spatial_smooth` applies one kernel (a Gaussian σ in
pixels, any astropy ``Kernel2D`` or 2-D array) to every plane. The kernels, like
spectral-cube's, ignore any rotation between the pixel grid and the sky.

Why it is faster than spectral-cube (which calls astropy per plane): each plane is decoded
from the chunk's stored bytes on its own (no decoded copy of the chunk), convolved with real
float64 FFTs (:func:`fft_convolve`: one forward and one inverse transform, two more for the
NaN weights only when the plane has a NaN, where ``convolve_fft`` makes five complex ones and
the direct ``convolve`` 289 multiply-adds per pixel for a σ = 2 Gaussian), each distinct
kernel built and transformed once per task, and the planes of different chunks run on
dask's threads. ``convolve=`` (astropy's ``convolve`` or ``convolve_fft``) calls that
function per plane instead, for those who want its exact rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from dfits.cube import spectral
from dfits.cube.axis_smooth import as_chunk, kernel_array, native_values
from dfits.cube.beams import beam_cards, cube_beams, keep_beams
from dfits.cube.errors import BeamError, SpectralError

__all__ = ["convolve_planes", "convolve_to", "fft_convolve", "spatial_smooth"]

#: A channel's kernel: None (copy the plane), or (deconvolved beam as (major, minor, pa)
#: in degrees, the Jy/beam factor); a fixed kernel array for spatial_smooth.
Plan = Any


def _plane_kernel(plan: Plan, pixscale: float) -> Any:
    import astropy.units as u
    from radio_beam import Beam

    if isinstance(plan, np.ndarray):
        return plan
    major, minor, pa = plan
    return Beam(major * u.deg, minor * u.deg, pa * u.deg).as_kernel(pixscale * u.deg).array


def fft_convolve(plane: np.ndarray, kernel: np.ndarray, cache: dict[Any, Any]) -> np.ndarray:
    """``plane`` (float64) convolved with ``kernel`` as astropy's ``convolve`` does (see the
    module docstring), by real FFTs; ``cache`` keeps the kernel's transform between planes.
    A plane of NaN only comes back as NaN (astropy gives 0 where the border's zeros reach;
    the callers blank every input NaN anyway).

    Examples
    --------
    >>> import numpy as np
    >>> plane = np.ones((4, 5)); plane[1, 1] = np.nan
    >>> fft_convolve(plane, np.ones((3, 3)), {})[0].round(6).tolist()
    [0.375, 0.625, 0.625, 0.666667, 0.444444]
    """
    from scipy import fft

    (ny, nx), (ky, kx) = plane.shape, kernel.shape
    shape = (fft.next_fast_len(ny + ky - 1, real=True), fft.next_fast_len(nx + kx - 1, real=True))
    key = (id(kernel), shape)
    if key not in cache:
        cache[key] = (kernel, fft.rfft2(kernel, shape), float(kernel.sum()))
    _, kf, ksum = cache[key]
    core = (slice(ky // 2, ky // 2 + ny), slice(kx // 2, kx // 2 + nx))
    nan = np.isnan(plane)
    if nan.all():
        return plane.copy()  # a blanked channel: nothing to interpolate from
    if not nan.any():
        return fft.irfft2(fft.rfft2(plane, shape) * kf, shape)[core] / ksum
    top = fft.irfft2(fft.rfft2(np.where(nan, 0.0, plane), shape) * kf, shape)[core]
    # the weight: the whole kernel (zeros beyond the image count) less its NaN pixels'
    bot = ksum - fft.irfft2(fft.rfft2(nan.astype(np.float64), shape) * kf, shape)[core]
    # a window of NaN only: astropy gives the centre value back (FFT noise is not zero)
    empty = np.abs(bot) <= 1e-12 * np.abs(kernel).sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(empty, plane, top / bot)


def _their_options(convolve: Callable[..., Any], dtype: np.dtype) -> dict[str, Any]:
    """What spectral-cube 0.7 adds to ``convolve_fft`` for float32 planes: single-precision
    FFTs (scipy's, complex64), so ``convolve=convolve_fft`` gives its values exactly."""
    from astropy.convolution import convolve_fft

    if convolve is not convolve_fft or dtype != np.float32:
        return {}
    import scipy.fft

    return {"complex_dtype": np.complex64, "fftn": scipy.fft.fftn, "ifftn": scipy.fft.ifftn}


def _convolve_block(
    block: Any,
    plans: list[Any],
    factors: np.ndarray,
    pixscale: float,
    convolve: Callable[..., Any] | None,
    block_info: Any = None,
) -> Any:
    """Convolve the (…, channel, y, x) planes of one overlapped block."""
    from dfits.kernels import decode
    from dfits.progress import work

    start = block_info[0]["array-location"][-3][0] if block_info else 0
    u, spec = native_values(block)
    out = np.empty(u.shape, dtype=np.result_type(spec.physical, np.float32))
    kernels: dict[Any, np.ndarray] = {}  # each distinct kernel built once per task
    transforms: dict[Any, Any] = {}
    # planes done so far: a progress bar advances inside this task (dfits.progress)
    with work(int(np.prod(u.shape[:-2]))) as done:
        for n, index in enumerate(np.ndindex(*u.shape[:-2])):
            done[0] = n
            channel = start + index[-1]
            plan = plans[channel if len(plans) > 1 else 0]
            factor = factors[channel if factors.size > 1 else 0]
            # one plane decoded at a time (the FFTs work in float64)
            plane = decode(u[index], spec)
            if plan is None:
                out[index] = plane
                continue
            key = plan if isinstance(plan, tuple) else id(plan)
            if key not in kernels:
                kernels[key] = _plane_kernel(plan, pixscale)
            kernel = kernels[key]
            if convolve is None:
                smoothed = fft_convolve(plane.astype(np.float64), kernel, transforms)
            else:  # the caller's astropy function, called as spectral-cube calls it
                smoothed = convolve(
                    plane, kernel, normalize_kernel=True, boundary="fill", fill_value=0.0,
                    **_their_options(convolve, plane.dtype),
                )  # fmt: skip
            out[index] = np.where(np.isnan(plane), np.nan, smoothed * factor)
    return as_chunk(out)


def convolve_planes(
    obj: xr.DataArray,
    plans: list[Any],
    factors: np.ndarray,
    pixscale: float,
    convolve: Callable[..., Any] | None = None,
) -> xr.DataArray:
    """``obj`` with each (y, x) plane convolved as ``plans`` say (see the module docstring)."""
    from dfits.cube.lazy import as_dask

    dim = spectral.spectral_dim(obj)
    order = [d for d in obj.dims if d not in (dim, "y", "x")] + [dim, "y", "x"]
    cube = obj.transpose(*order)
    dtype = np.result_type(obj.dtype, np.float32)
    x = as_dask(cube)
    distinct = {p if isinstance(p, tuple) else id(p): p for p in plans if p is not None}
    sizes = [_plane_kernel(p, pixscale).shape for p in distinct.values()]
    half = [max((s[i] // 2 for s in sizes), default=0) for i in (0, 1)]
    half = [min(h, n - 1) for h, n in zip(half, x.shape[-2:], strict=True)]
    # no halo along an axis a chunk holds whole: the block then stays stored bytes
    depth = {x.ndim - 2 + i: h if x.numblocks[x.ndim - 2 + i] > 1 else 0
             for i, h in enumerate(half)}  # fmt: skip
    options = {"plans": plans, "factors": factors, "pixscale": pixscale, "convolve": convolve}
    meta = np.empty((0,) * x.ndim, dtype=dtype)
    if any(depth.values()):
        data = x.map_overlap(
            _convolve_block, depth=depth, boundary="none", dtype=dtype, meta=meta, **options
        )
    else:
        data = x.map_blocks(_convolve_block, dtype=dtype, meta=meta, **options)
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
    """Every (y, x) plane of ``obj`` convolved with ``kernel``, lazily.

    ``kernel``: a Gaussian σ in pixels, an astropy ``Kernel2D`` or a 2-D array (odd sizes).
    Spectral-cube's ``spatial_smooth`` values (``astropy.convolution.convolve``'s, by FFT
    unless ``convolve`` is given); the beam in the header is left as it was, so a Jy/beam
    cube is refused (its unit would lie) unless ``raise_error_jybm`` is False — use
    :func:`convolve_to` for those.
    """
    if raise_error_jybm and _is_jy_beam(obj):
        raise BeamError(
            f"{spectral.describe(obj)} is in Jy/beam: smoothing changes the beam; use "
            "convolve_to(beam), or raise_error_jybm=False"
        )
    array = kernel_array(obj, kernel, 2)
    plane = (obj.sizes.get("y", 0), obj.sizes.get("x", 0))
    if any(k > 2 * n - 1 for k, n in zip(array.shape, plane, strict=True)):
        raise SpectralError(
            f"{spectral.describe(obj)}: the kernel {array.shape} reaches beyond both edges of "
            f"the (y, x) plane {plane}"
        )
    return convolve_planes(obj, [array], np.ones(1), 1.0, convolve)
