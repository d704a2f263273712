"""Spectral-cube science on DataArrays and dask arrays; :mod:`dfits.xarray`'s accessor is a
thin adapter over it, and nothing here imports :mod:`dfits.xarray`.

One module per job:

* :mod:`~dfits.cube.spectral`: the spectral axis found from the WCS, unit conversion (wcslib),
  slabs; :mod:`~dfits.cube.coords`, :mod:`~dfits.cube.wcs`: WCS ↔ dimensions and
  coordinates, the WCS of a sliced DataArray;
* :mod:`~dfits.cube.moments`: moment maps, line widths, peaks (one kernel pass per chunk,
  through :func:`dfits.array.weighted_sums` and :func:`dfits.array.reduce`);
* :mod:`~dfits.cube.medians`, :mod:`~dfits.cube.noise`: exact lazy medians, ``mad_std``,
  masks and clipped moments;
* :mod:`~dfits.cube.beams`, :mod:`~dfits.cube.smooth`: beams, brightness units, convolution;
* :mod:`~dfits.cube.regions`, :mod:`~dfits.cube.shapes`, :mod:`~dfits.cube.reprojection`:
  sky regions, ``regions`` shapes, resampling onto another grid;
* :mod:`~dfits.cube.results`, :mod:`~dfits.cube.lazy`, :mod:`~dfits.cube.errors`: result
  DataArrays and units, a DataArray's values as dask, the errors.

Functions take a DataArray whose data are the dask array to reduce (the accessor passes one
over dfits' fused chunks); their results are lazy.
"""
