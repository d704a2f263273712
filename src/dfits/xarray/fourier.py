"""Fourier transforms and power spectra of DataArrays along one dimension, xrft-style.

The contract: :func:`fourier` transforms ``obj`` along ``dim`` with :mod:`dfits.fft` (any
chunking, bounded memory) and names the new dimension ``freq_<dim>``, whose coordinate holds
the frequencies ``numpy.fft.fftfreq(n, d)`` (``rfftfreq`` for real transforms) of the sample
spacing ``d``: the step of ``dim``'s 1-D coordinate, which must be uniform (seconds give Hz,
Hz give seconds), or, for a celestial pixel axis without one, the WCS pixel scale in degrees
(spatial frequency in 1/deg); failing both, one pixel. :func:`power_spectrum` is the
periodogram density ``|X|² · d / n``: two-sided for a complex transform, where
``(P * df).sum()`` is the mean of ``|x|²``; for a real one (``rfft``) the non-negative
frequencies only, not doubled.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["fourier", "inverse_unit", "power_spectrum", "spacing"]

#: units of the frequency for a coordinate unit (anything else becomes ``1/<unit>``)
_INVERSE = {"s": "Hz", "Hz": "s", "": "1/pixel", "pixel": "1/pixel"}


def inverse_unit(unit: str) -> str:
    """The unit of frequencies conjugate to ``unit``.

    >>> inverse_unit("s"), inverse_unit("deg"), inverse_unit("")
    ('Hz', '1/deg', '1/pixel')
    """
    return _INVERSE.get(unit, f"1/{unit}")


def spacing(obj: xr.DataArray, dim: Hashable, fallback: tuple[float, str]) -> tuple[float, str]:
    """``(step, unit)`` of ``dim``: its uniform 1-D coordinate's, else ``fallback``."""
    if dim not in obj.coords or obj[dim].ndim != 1 or obj[dim].size < 2:
        return fallback
    values = np.asarray(obj[dim].values)
    if values.dtype.kind not in "iuf":
        return fallback
    steps = np.diff(values.astype(float))
    step = float(steps.mean())
    if step == 0 or not np.allclose(steps, step, rtol=1e-6, atol=0):
        raise ValueError(
            f"coordinate {dim!r} of {obj.name!r} is not uniformly spaced "
            f"(steps from {steps.min()!r} to {steps.max()!r}); an FFT needs uniform samples"
        )
    return step, str(obj[dim].attrs.get("units", ""))


def fourier(
    obj: xr.DataArray,
    dim: Hashable,
    step: tuple[float, str],
    *,
    real: bool | None = None,
    shift: bool = True,
    norm: str | None = None,
    **options: Any,
) -> xr.DataArray:
    """The FFT of ``obj`` along ``dim`` (see the module docstring); ``options`` go to
    :func:`dfits.fft.fft` (``block_size``, ``memory_limit``, ``scratch``)."""
    import dask.array as da

    from dfits import fft

    if dim not in obj.dims:
        raise ValueError(f"{dim!r} is not a dimension of {obj.name!r}: {obj.dims}")
    axis = obj.get_axis_num(dim)
    n = obj.sizes[dim]
    d, unit = step
    data = obj.data if isinstance(obj.data, da.Array) else da.asarray(obj.data)
    real = data.dtype.kind != "c" if real is None else real
    if real:
        y = fft.rfft(data, axis=axis, norm=norm, **options)
        freqs = np.fft.rfftfreq(n, d)
    else:
        y = fft.fft(data, axis=axis, norm=norm, **options)
        freqs = np.fft.fftfreq(n, d)
        if shift:
            y = da.fft.fftshift(y, axes=axis)
            freqs = np.fft.fftshift(freqs)
    new = f"freq_{dim}"
    dims = [new if k == dim else k for k in obj.dims]
    coords = {k: c for k, c in obj.coords.items() if dim not in c.dims}
    coords[new] = xr.Variable(new, freqs, {"units": inverse_unit(unit), "spacing": 1 / (n * d)})
    return xr.DataArray(y, dims=dims, coords=coords, name=obj.name, attrs={})


def power_spectrum(
    obj: xr.DataArray, dim: Hashable, step: tuple[float, str], **kw: Any
) -> xr.DataArray:
    """``|X|² · d / n`` along ``dim``: the periodogram density (Parseval, two-sided:
    ``(P * df).sum()`` is ``mean(|x|²)``)."""
    spectrum = fourier(obj, dim, step, **kw)
    power = abs(spectrum) ** 2 * (step[0] / obj.sizes[dim])
    power.attrs["long_name"] = f"power spectral density along {dim}"
    return power
