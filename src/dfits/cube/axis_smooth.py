"""Smoothing along one axis of a cube, lazily and fused with the decode: ``spectral_smooth``.

The contract: :func:`spectral_smooth` convolves every spectrum of a DataArray with a 1-D
kernel (a Gaussian's σ in channels, any astropy ``Kernel1D`` such as ``Box1DKernel`` or
``Gaussian1DKernel``, or any 1-D array: ``np.hanning(5)``) and gives spectral-cube 0.7's
``spectral_smooth`` values, which are :func:`astropy.convolution.convolve`'s defaults: a
true convolution, the kernel normalised, zeros beyond the band, NaN (and BLANK) left out and
interpolated over, and NaN kept where the input was NaN (spectral-cube's mask keeps those
pixels blank; ``keep_nan=False`` gives astropy's interpolated values there).

How it stays fused and bounded: the accessor hands a cube whose chunks span the whole
spectral axis (:func:`along_chunks`: the faster axes split into contiguous runs so a chunk
stays near dask's ``array.chunk-size``), so each task reads its chunk's stored (big-endian,
scaled) bytes and the Numba kernel (:mod:`dfits.kernels.smooth`) decodes and convolves them
in one pass into native output: no halo, no neighbour, no decoded copy of the chunk. Whole
spectra were chosen over ``map_overlap`` with a kernel-deep halo because a halo concatenates
neighbouring chunks (a decoded copy of each) and reads every halo twice; a cube whose chunks
split the spectral axis anyway (a user's own chunks, data in memory) does take that
``map_overlap`` route, depth = the kernel's half-width, with the same kernel on the decoded
blocks, so results never depend on the chunks.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import xarray as xr

from dfits.cube import spectral
from dfits.cube.beams import keep_beams
from dfits.cube.errors import SpectralError
from dfits.cube.lazy import as_dask

__all__ = ["along_chunks", "as_chunk", "kernel_array", "native_values", "spectral_smooth"]


def along_chunks(
    shape: tuple[int, ...], dtype: Any, itemsize: int, axis: int
) -> tuple[tuple[int, ...], ...]:
    """Chunks holding the whole of ``axis``: the file's plan where it already does, else one
    position of each slower axis and contiguous runs of the faster ones; chunks of half
    dask's ``array.chunk-size`` of values in all.

    Half, because the tasks that want whole axes (smoothing, block means) hold their native
    float output beside their stored input (whose pages count in the process's RSS as the
    kernel reads them): input and output together then stay near ``array.chunk-size``.

    Examples
    --------
    >>> import dask, numpy as np
    >>> with dask.config.set({"array.chunk-size": "128MiB"}):
    ...     chunks = along_chunks((256, 2048, 2048), np.dtype("f4"), 4, 0)
    >>> chunks[0], chunks[1][:3], len(chunks[1]), chunks[2]
    ((256,), (32, 32, 32), 64, (2048,))
    """
    import dask
    from dask.utils import parse_bytes

    from dfits.array.chunks import file_chunks

    # sized by physical bytes as dfits' own plan is (a scaled int16 chunk holds float32s)
    target = parse_bytes(dask.config.get("array.chunk-size")) // 2
    scale = max(1, np.dtype(dtype).itemsize // itemsize)
    chunks = file_chunks(shape, itemsize, max(itemsize, target // scale))
    n = shape[axis]
    if not n or max(chunks[axis]) >= n:
        return chunks
    # slower axes are one position per chunk already: the plan split at ``axis`` or beyond
    per_slab = math.prod(max(c) for c in chunks) * itemsize
    inner = file_chunks(shape[axis + 1 :], itemsize, max(itemsize, per_slab // n))
    return (*chunks[:axis], (n,), *inner)


def kernel_array(obj: xr.DataArray, kernel: Any, ndim: int) -> np.ndarray:
    """``kernel`` as a float64 array of ``ndim`` dimensions, or :class:`SpectralError`.

    A number is a Gaussian's σ in pixels (astropy's ``Gaussian1DKernel`` /
    ``Gaussian2DKernel``, ±4σ); an astropy kernel gives its ``array``.
    """
    import astropy.units as u

    if isinstance(kernel, numbers.Real) and not isinstance(kernel, bool):
        if not kernel > 0:
            raise SpectralError(
                f"{spectral.describe(obj)}: a Gaussian σ must be > 0, not {kernel!r}"
            )
        from astropy.convolution import Gaussian1DKernel, Gaussian2DKernel

        kernel = (Gaussian1DKernel if ndim == 1 else Gaussian2DKernel)(float(kernel))
    array = getattr(kernel, "array", kernel)
    if isinstance(array, u.Quantity):
        raise SpectralError(f"{spectral.describe(obj)}: the kernel must have no unit")
    array = np.asarray(array, dtype=np.float64)
    problem = _kernel_problem(array, ndim)
    if problem:
        raise SpectralError(f"{spectral.describe(obj)}: {problem}")
    return array


def _kernel_problem(k: np.ndarray, ndim: int) -> str | None:
    if k.ndim != ndim or k.size == 0:
        return f"the kernel must be {ndim}-d and not empty, not shape {k.shape}"
    if any(n % 2 == 0 for n in k.shape):
        return f"the kernel must have an odd size along every axis, not shape {k.shape}"
    if not np.all(np.isfinite(k)):
        return "the kernel holds NaN or infinite values"
    if np.isclose(k.sum(), 0.0, atol=1e-8):
        return f"the kernel's sum ({k.sum()!r}) is too close to 0 to normalise it"
    return None


def native_values(block: Any) -> tuple[np.ndarray, Any]:
    """A block's values for the kernels: ``(native unsigned view, decode spec)``.

    A chunk still holding stored bytes gives those (the kernel decodes as it reads); anything
    else (numpy, a decoded or concatenated chunk) its native float values, viewed as bits.
    """
    from dfits.format.dtypes import DecodeSpec
    from dfits.stored.stored import StoredChunk

    if isinstance(block, StoredChunk) and not block.decoded:
        block.spec.check()
        return block.u, block.spec
    values = np.asarray(block)
    if values.dtype not in (np.dtype("f4"), np.dtype("f8")):
        values = values.astype(np.result_type(values.dtype, np.float32))  # integers, big-endian
    bitpix = -8 * values.dtype.itemsize
    view = values.view(np.uint32 if bitpix == -32 else np.uint64)
    return view, DecodeSpec(bitpix=bitpix, physical=values.dtype, byteorder="=")


def as_chunk(values: np.ndarray) -> Any:
    """A task's native float result as a stored chunk (native byte order, as decoded tiles
    are): the next step's reductions (a moment map) then run the fused kernels on it instead
    of widening a copy to float64, and anything else decodes it (a copy) as any chunk."""
    from dfits.format.dtypes import DecodeSpec
    from dfits.stored.stored import StoredChunk

    bitpix = -8 * values.dtype.itemsize
    view = values.view(np.uint32 if bitpix == -32 else np.uint64)
    return StoredChunk(view, DecodeSpec(bitpix=bitpix, physical=values.dtype, byteorder="="))


def _smooth_block(block: Any, *, axis: int, kernel: np.ndarray, keep_nan: bool, out: Any):
    from dfits.kernels.smooth import convolve_axis
    from dfits.progress import work

    u, spec = native_values(block)
    # the kernel counts the values it has read: a progress bar advances inside this task
    with work(u.size) as done:
        values = convolve_axis(u, spec, axis, kernel, keep_nan=keep_nan, dtype=out, progress=done)
    return as_chunk(values)


def spectral_smooth(
    obj: xr.DataArray, kernel: Any, *, dim: str | None = None, keep_nan: bool = True
) -> xr.DataArray:
    """``obj`` convolved along ``dim`` (default: its spectral axis), lazily.

    See the module docstring. The result keeps ``obj``'s dims, coordinates, header and beam,
    in ``obj``'s float type (float32 for float32 and scaled 8/16-bit data).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> cube = xr.DataArray(np.zeros((5, 1, 1), "f4"), dims=("freq", "y", "x"))
    >>> cube[2] = 1.0
    >>> spectral_smooth(cube, [1.0, 2.0, 1.0], dim="freq").values.ravel().tolist()
    [0.0, 0.25, 0.5, 0.25, 0.0]
    """
    dim = spectral.spectral_dim(obj) if dim is None else dim
    k = kernel_array(obj, kernel, 1)
    axis = obj.get_axis_num(dim)
    if k.size > 2 * obj.sizes[dim] - 1:
        raise SpectralError(
            f"{spectral.describe(obj)}: the kernel ({k.size} channels) reaches beyond both "
            f"ends of the {dim!r} axis ({obj.sizes[dim]} channels)"
        )
    x = as_dask(obj)
    dtype = np.result_type(obj.dtype, np.float32)
    options = {"axis": axis, "kernel": k, "keep_nan": keep_nan, "out": dtype}
    meta = np.empty((0,) * x.ndim, dtype=dtype)
    if x.numblocks[axis] == 1:
        data = x.map_blocks(_smooth_block, dtype=dtype, meta=meta, **options)
    else:
        # chunks splitting the axis: a halo of the kernel's half-width; beyond the cube's
        # ends there is no halo and the kernel's zeros apply, as for whole spectra
        data = x.map_overlap(
            _smooth_block, depth={axis: k.size // 2}, boundary="none", dtype=dtype,
            meta=meta, **options,
        )  # fmt: skip
    return keep_beams(obj, obj.copy(data=data))
