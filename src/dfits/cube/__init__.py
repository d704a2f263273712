"""Spectral-cube science on DataArrays and dask arrays: medians and noise, moments, the spectral
axis, beams, smoothing, regions, reprojection. The xarray accessor (:mod:`dfits.xarray`) is a
thin adapter over these modules; none of them imports :mod:`dfits.xarray`."""
