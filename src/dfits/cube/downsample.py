"""Block averages along one axis, lazily and fused with the decode: ``downsample_axis``.

The contract: :func:`downsample_axis` replaces each run of ``factor`` consecutive pixels
along a dimension by their mean, NaN (and BLANK) left out, NaN where a run has no value:
spectral-cube 0.7's ``downsample_axis`` (``np.nanmean`` over each run). Like it, a length
that ``factor`` does not divide keeps a last, shorter run averaged over the pixels it has
(its ``truncate=False`` default; its docstring's "crops right side" is not what its code
does), and ``truncate=True`` drops that run. Each chunk task averages its stored values
run by run with the fused kernel :func:`dfits.kernels.smooth.block_mean` (float64 sums and
counts over a tile of columns, each mean rounded once): no decoded copy, no float64 map.
(:func:`dfits.kernels.sum_count` over a ``(runs, factor)`` view gives the same values but
ran 3x slower, with float64 sums and int64 counts of the whole output as temporaries.)
Chunks along the axis must hold whole runs; the accessor hands whole axes
(:func:`dfits.cube.axis_smooth.along_chunks`), other chunkings are rechunked to multiples of
``factor`` first.

The coordinate of the axis becomes each run's centre (linear along the axis, as the WCS
is), and the header's WCS describes the new pixels (the pixel axis's PC or CD column, or its
CDELT, scaled by ``factor`` and CRPIX moved, as dfits' own stepped slicing does), so
``.fits.wcs`` and the moments follow. Along a spectral axis this is astropy's
``wcs[::factor]``, which spectral-cube uses; along a sky axis of a rotated grid astropy
scales CDELT (a row of the matrix) instead, and differs. Other coordinates along the axis
(2-D ``ra``/``dec`` when a sky axis is downsampled) are dropped: ``.fits.wcs`` gives them
back.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import xarray as xr

from dfits.cube import spectral
from dfits.cube.axis_smooth import as_chunk, native_values
from dfits.cube.beams import keep_beams
from dfits.cube.errors import SpectralError
from dfits.cube.lazy import as_dask

__all__ = ["dim_name", "downsample_axis"]


def dim_name(obj: xr.DataArray, dim: Any) -> str:
    """``dim`` as a dimension name: None is the spectral one, an integer a numpy axis."""
    if dim is None:
        return spectral.spectral_dim(obj)
    if isinstance(dim, numbers.Integral) and not isinstance(dim, bool):
        if not -obj.ndim <= int(dim) < obj.ndim:
            raise SpectralError(f"{spectral.describe(obj)}: no axis {dim} in {obj.dims}")
        return str(obj.dims[int(dim)])
    if dim not in obj.dims:
        raise SpectralError(f"{spectral.describe(obj)}: {dim!r} is not one of {obj.dims}")
    return str(dim)


def _mean_block(block: Any, *, axis: int, factor: int, out: Any) -> Any:
    from dfits.kernels.smooth import block_mean
    from dfits.progress import work

    u, spec = native_values(block)
    # the kernel counts the values it has read: a progress bar advances inside this task
    with work(u.size) as done:
        return as_chunk(block_mean(u, spec, axis, factor, dtype=out, progress=done))


def downsample_axis(
    obj: xr.DataArray, factor: int, dim: str, *, truncate: bool = False
) -> xr.DataArray:
    """Means of ``factor`` consecutive pixels along ``dim`` (see the module docstring).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> a = xr.DataArray(np.array([1.0, np.nan, 3.0, 4.0, 5.0], "f4"), dims="x")
    >>> downsample_axis(a, 2, "x").values.tolist()
    [1.0, 3.5, 5.0]
    >>> downsample_axis(a, 2, "x", truncate=True).values.tolist()
    [1.0, 3.5]
    """
    n = obj.sizes[dim]
    if isinstance(factor, bool) or not isinstance(factor, numbers.Integral) or not 0 < factor <= n:
        raise SpectralError(
            f"{spectral.describe(obj)}: the factor must be an integer from 1 to the length of "
            f"{dim!r} ({n}), not {factor!r}"
        )
    factor = int(factor)
    nout = n // factor if truncate else -(-n // factor)
    axis = obj.get_axis_num(dim)
    x = as_dask(obj)
    if nout * factor < n:
        x = x[(slice(None),) * axis + (slice(0, nout * factor),)]  # a slice stays stored
    if any(c % factor for c in x.chunks[axis][:-1]):
        # runs would straddle chunks: whole runs per chunk (this rechunk decodes)
        x = x.rechunk({axis: max(factor, max(x.chunks[axis]) // factor * factor)})
    dtype = np.result_type(obj.dtype, np.float32)
    chunks = list(x.chunks)
    chunks[axis] = tuple(-(-c // factor) for c in x.chunks[axis])
    data = x.map_blocks(
        _mean_block, chunks=tuple(chunks), dtype=dtype, meta=np.empty((0,) * x.ndim, dtype),
        axis=axis, factor=factor, out=dtype,
    )  # fmt: skip
    return keep_beams(obj, _regrid(obj, data, dim, factor, nout))


def _regrid(obj: xr.DataArray, data: Any, dim: str, factor: int, nout: int) -> xr.DataArray:
    """``data`` on ``obj``'s grid with ``dim`` made of runs of ``factor`` pixels."""
    coords = {k: c for k, c in obj.coords.items() if dim not in c.dims}
    centres = np.arange(nout) * factor + (factor - 1) / 2  # in old pixels of the axis
    if dim in obj.coords:
        coords[dim] = xr.Variable(dim, _linear(obj[dim].values, centres), obj[dim].attrs)
    pixel = obj.coords.get(f"pixel_{dim}")
    attrs = dict(obj.attrs)
    if pixel is not None:
        p = np.asarray(pixel.values, dtype=float)
        step = p[1] - p[0] if p.size > 1 else 1.0
        coords[str(pixel.name)] = xr.Variable(dim, np.arange(nout), pixel.attrs)
        if isinstance(attrs.get("fits_header"), str) and "fits_axis" in pixel.attrs:
            attrs["fits_header"] = _header(attrs["fits_header"], pixel.attrs["fits_axis"],
                                           p[0], step * factor, factor, nout)  # fmt: skip
    return xr.DataArray(data, dims=obj.dims, coords=coords, attrs=attrs, name=obj.name)


def _linear(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``values`` (one per pixel) at fractional pixels ``at``, linear, extrapolated at the end."""
    if values.size < 2 or values.dtype.kind not in "fiu":
        return values[np.minimum(np.round(at).astype(int), values.size - 1)]
    idx = np.arange(values.size)
    out = np.interp(at, idx, values)
    beyond = at > idx[-1]
    out[beyond] = values[-1] + (at[beyond] - idx[-1]) * (values[-1] - values[-2])
    return out.astype(values.dtype, copy=False)


def _header(text: str, n: int, p0: float, step: float, factor: int, nout: int) -> str:
    """The header with FITS axis ``n`` made of runs: astropy's ``wcs[p0::step]`` with pixels
    spanning ``factor`` of the (stepped) old ones."""
    from dfits.format.header import Header
    from dfits.format.headertext import card_text, readable_header

    header = Header(card_text(text).encode("latin-1")).to_astropy()
    crpix = float(header.get(f"CRPIX{n}", 0.0))
    # pixel j's centre is old pixel p0 + step·j + (step/factor)·(factor-1)/2, 0-based
    header[f"CRPIX{n}"] = (crpix - 1 - p0) / step + 0.5 + 1 / (2 * factor)
    # the pixel axis's column of the linear transformation scales (as dfits' own slicing
    # does); astropy's slicing scales CDELTn, the world axis's row, which differs where a
    # PC matrix rotates the sky grid
    naxis = int(header.get("NAXIS", n))
    if any(f"CD{i}_{n}" in header for i in range(1, naxis + 1)):
        for i in range(1, naxis + 1):
            if f"CD{i}_{n}" in header:
                header[f"CD{i}_{n}"] = header[f"CD{i}_{n}"] * step
    elif any(k.startswith("PC") for k in header):
        for i in range(1, naxis + 1):
            default = 1.0 if i == n else 0.0
            if f"PC{i}_{n}" in header or i == n:
                header[f"PC{i}_{n}"] = float(header.get(f"PC{i}_{n}", default)) * step
    else:
        header[f"CDELT{n}"] = float(header.get(f"CDELT{n}", 1.0)) * step
    if f"NAXIS{n}" in header:
        header[f"NAXIS{n}"] = nout
    return readable_header(header.tostring(padding=False))
