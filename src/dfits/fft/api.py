"""numpy.fft's signatures on dask arrays, along chunked axes.

Each function takes what its ``numpy.fft`` namesake takes (``n``/``s``, ``axis``/``axes``,
``norm``) and returns a lazy dask array equal to numpy's result (same shape, same dtype). The
keyword-only extras say how to run it: ``block_size`` (bytes of one block; dask's
``array.chunk-size`` by default), ``memory_limit`` (arrays above it are transposed through a
scratch store on disk; half the physical memory by default), ``scratch`` (that store's directory)
and, for :func:`fft`/:func:`ifft`, ``order``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import dask.array as da
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from dfits.fft.plan import default_memory_limit, parse_norm, scale
from dfits.fft.sixstep import Options, along

__all__ = ["NdTransform", "fft", "fftn", "ifft", "ifftn", "irfft", "irfftn", "rfft", "rfftn"]

Order = Literal["natural", "transposed"]


def _options(
    block_size: int | str | None,
    memory_limit: int | str | None,
    scratch: str | Path | None,
    order: str = "natural",
) -> Options:
    from dask.utils import parse_bytes

    if order not in ("natural", "transposed"):
        raise ValueError(f"order must be 'natural' or 'transposed', not {order!r}")
    if block_size is None:
        import dask

        block_size = dask.config.get("array.chunk-size")
    block = parse_bytes(block_size)
    limit = default_memory_limit() if memory_limit is None else parse_bytes(memory_limit)
    if block < 16 or limit < 0:
        raise ValueError(f"block_size must be >= 16 bytes and memory_limit >= 0, not {block}")
    return Options(block, limit, scratch, natural=order == "natural")


def _complex(dtype: np.dtype) -> np.dtype:
    """numpy.fft's output dtype for input ``dtype`` (float32/complex64 stay single)."""
    if dtype.kind not in "biufc":
        raise TypeError(f"FFTs need numbers, not dtype {dtype}")
    if dtype.kind in "biu":
        return np.dtype(np.complex128)
    return np.result_type(dtype, np.complex64)


def _resize(a: da.Array, axis: int, n: int) -> da.Array:
    """numpy's ``n=``: truncate, or pad with zeros at the end of the axis."""
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    size = a.shape[axis]
    if n < size:
        index = [slice(None)] * a.ndim
        index[axis] = slice(0, n)
        return a[tuple(index)]
    if n > size:
        pad = [(0, 0)] * a.ndim
        pad[axis] = (0, n - size)
        return da.pad(a, pad)
    return a


def _one(a, n, axis, norm, inverse, opts, dtype=None) -> da.Array:
    a = da.asarray(a)
    axis = normalize_axis_index(axis, a.ndim)
    n = a.shape[axis] if n is None else int(n)
    a = _resize(a, axis, n)
    dtype = _complex(a.dtype) if dtype is None else dtype
    factor = scale(n, parse_norm(norm), inverse)
    return along(a, axis, inverse=inverse, factor=factor, dtype=dtype, opts=opts)


def fft(
    a: Any,
    n: int | None = None,
    axis: int = -1,
    norm: str | None = None,
    *,
    order: Order = "natural",
    block_size: int | str | None = None,
    memory_limit: int | str | None = None,
    scratch: str | Path | None = None,
) -> da.Array:
    """One-dimensional discrete Fourier transform, like :func:`numpy.fft.fft`, along any axis,
    chunked or not.

    Parameters
    ----------
    a : array_like
        A dask array (dfits-backed or not) or anything :func:`dask.array.asarray` takes.
    n, axis, norm
        As in :func:`numpy.fft.fft`.
    order : {"natural", "transposed"}
        ``"transposed"`` skips the last transpose and returns the axis split in two,
        ``(N1, N2)``, with ``y[..., k1, k2, ...] == X[k1 + N1 * k2]`` (``N2 == 1`` when the
        axis was transformed in one piece): enough for power spectra, one pass cheaper.
    block_size : int or str, optional
        Budget of one block in bytes (default: dask's ``array.chunk-size``).
    memory_limit : int or str, optional
        Transposes of arrays bigger than this go through a scratch store on disk
        (default: half the physical memory).
    scratch : str or Path, optional
        Directory of those stores (default: a temporary directory removed at exit).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> x = da.arange(12, chunks=4).astype(float)
    >>> np.allclose(fft(x, block_size=64).compute(), np.fft.fft(np.arange(12.0)))
    True
    """
    opts = _options(block_size, memory_limit, scratch, order)
    return _one(a, n, axis, norm, False, opts)


def ifft(
    a: Any,
    n: int | None = None,
    axis: int = -1,
    norm: str | None = None,
    *,
    order: Order = "natural",
    block_size: int | str | None = None,
    memory_limit: int | str | None = None,
    scratch: str | Path | None = None,
) -> da.Array:
    """Inverse of :func:`fft`, like :func:`numpy.fft.ifft`; same extras as :func:`fft`."""
    opts = _options(block_size, memory_limit, scratch, order)
    return _one(a, n, axis, norm, True, opts)


def rfft(
    a: Any,
    n: int | None = None,
    axis: int = -1,
    norm: str | None = None,
    *,
    block_size: int | str | None = None,
    memory_limit: int | str | None = None,
    scratch: str | Path | None = None,
) -> da.Array:
    """FFT of real input, like :func:`numpy.fft.rfft`: the ``n // 2 + 1`` non-negative
    frequencies. Computed as a complex transform of the real values (twice the work of a
    packed real transform, the same passes over the data)."""
    a = da.asarray(a)
    if a.dtype.kind == "c":
        raise TypeError(f"rfft needs real input, not {a.dtype}")
    axis = normalize_axis_index(axis, a.ndim)
    n = a.shape[axis] if n is None else int(n)
    y = _one(a, n, axis, norm, False, _options(block_size, memory_limit, scratch))
    index = [slice(None)] * y.ndim
    index[axis] = slice(0, n // 2 + 1)
    return y[tuple(index)]


def irfft(
    a: Any,
    n: int | None = None,
    axis: int = -1,
    norm: str | None = None,
    *,
    block_size: int | str | None = None,
    memory_limit: int | str | None = None,
    scratch: str | Path | None = None,
) -> da.Array:
    """Inverse of :func:`rfft`, like :func:`numpy.fft.irfft`: real output of length ``n``
    (default ``2 * (m - 1)``); the spectrum is completed by Hermitian symmetry and transformed
    as complex, so the imaginary parts of the zero (and Nyquist) terms are ignored, as numpy
    ignores them."""
    a = da.asarray(a)
    axis = normalize_axis_index(axis, a.ndim)
    n = 2 * (a.shape[axis] - 1) if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    half = _resize(a, axis, n // 2 + 1)
    tail = [slice(None)] * a.ndim
    tail[axis] = slice(n - (n // 2 + 1), 0, -1)
    full = da.concatenate([half, da.conj(half[tuple(tail)])], axis=axis)
    dtype = _complex(np.result_type(a.dtype, np.complex64))
    opts = _options(block_size, memory_limit, scratch)
    y = _one(full, n, axis, norm, True, opts, dtype=dtype)
    return y.real


def _axes(a: da.Array, s: Sequence[int] | None, axes: Sequence[int] | None) -> list[tuple]:
    """numpy's pairing of ``s`` and ``axes``: ``[(axis, n_or_None), ...]``."""
    if axes is None:
        axes = range(a.ndim) if s is None else range(a.ndim - len(s), a.ndim)
    axes = [normalize_axis_index(ax, a.ndim) for ax in axes]
    if s is None:
        return [(ax, None) for ax in axes]
    if len(s) != len(axes):
        raise ValueError("When given, axes and shape arguments have to be of the same length")
    return list(zip(axes, s, strict=True))


def _many(a, pairs, norm, inverse, opts) -> da.Array:
    for ax, n in pairs:
        a = _one(a, n, ax, norm, inverse, opts)
    return a


class NdTransform(Protocol):
    """The signature of :func:`fftn`, :func:`ifftn`, :func:`rfftn` and :func:`irfftn`:
    numpy's ``(a, s, axes, norm)`` plus the keyword-only extras of :func:`fft`."""

    def __call__(
        self,
        a: Any,
        s: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        norm: str | None = None,
        *,
        block_size: int | str | None = None,
        memory_limit: int | str | None = None,
        scratch: str | Path | None = None,
    ) -> da.Array: ...


def _nd(name: str, run: Callable[[da.Array, list, Any, dict], da.Array]) -> NdTransform:
    """The public n-D function ``name``: numpy's pairing of ``s`` and ``axes``, then ``run``
    (``a``, ``[(axis, n), ...]``, ``norm``, the extras as keywords)."""

    def transform(
        a: Any,
        s: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        norm: str | None = None,
        *,
        block_size: int | str | None = None,
        memory_limit: int | str | None = None,
        scratch: str | Path | None = None,
    ) -> da.Array:
        a = da.asarray(a)
        kw = {"block_size": block_size, "memory_limit": memory_limit, "scratch": scratch}
        return run(a, _axes(a, s, axes), norm, kw)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = run.__doc__
    return transform


def _fftn(a: da.Array, pairs: list, norm: Any, kw: dict) -> da.Array:
    """N-dimensional FFT, like :func:`numpy.fft.fftn`: :func:`fft` along each axis in turn.

    Takes numpy's ``(a, s, axes, norm)`` and the keyword-only extras of :func:`fft`."""
    return _many(a, pairs, norm, False, _options(**kw))


def _ifftn(a: da.Array, pairs: list, norm: Any, kw: dict) -> da.Array:
    """Inverse of :func:`fftn`, like :func:`numpy.fft.ifftn`."""
    return _many(a, pairs, norm, True, _options(**kw))


def _rfftn(a: da.Array, pairs: list, norm: Any, kw: dict) -> da.Array:
    """N-dimensional FFT of real input, like :func:`numpy.fft.rfftn`: :func:`rfft` along the
    last of ``axes``, then :func:`fft` along the others."""
    (last, n), rest = pairs[-1], pairs[:-1]
    return _many(rfft(a, n, last, norm, **kw), rest, norm, False, _options(**kw))


def _irfftn(a: da.Array, pairs: list, norm: Any, kw: dict) -> da.Array:
    """Inverse of :func:`rfftn`, like :func:`numpy.fft.irfftn`."""
    (last, n), rest = pairs[-1], pairs[:-1]
    return irfft(_many(a, rest, norm, True, _options(**kw)), n, last, norm, **kw)


fftn = _nd("fftn", _fftn)
ifftn = _nd("ifftn", _ifftn)
rfftn = _nd("rfftn", _rfftn)
irfftn = _nd("irfftn", _irfftn)
