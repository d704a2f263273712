"""Convolution along one axis, straight from stored bits: spectral smoothing in one pass.

:func:`convolve_axis` convolves ``u[A, B, C]`` along ``B`` with a 1-D kernel ``k`` of odd
length ``2h + 1`` and writes the physical result into ``out[A, B, C]``::

    out[i] = Σ_j k[j] · I[i + h - j]  /  Σ_j k[j] · [I[i + h - j] is a number]

which is :func:`astropy.convolution.convolve` with its defaults (``boundary="fill"``,
``fill_value=0``, ``nan_treatment="interpolate"``, ``normalize_kernel=True``): a true
convolution (the kernel flipped), positions beyond the axis count as zeros of full weight,
NaN and BLANK are left out of both sums; a window of NaN only (zero weight) gives the
centre value back, as astropy does. ``keep_nan`` then puts NaN back where the input was NaN
(spectral-cube's mask keeps those pixels blank). ``I`` is the physical value exactly as
astropy decodes it, widened to float64; sums run in float64 in astropy's order and each
result is rounded once to ``out``'s type.

:func:`block_mean` averages runs of ``factor`` positions along ``B`` (the last run may be
shorter), NaN and BLANK left out, NaN for a run without a value: ``np.nanmean`` of each run,
accumulated in float64 and rounded once (spectral-cube's ``downsample_axis``).

Both kernels add the values they have read, tile by tile, to ``progress[0]`` (a one-element
int64 array) when given one: a progress display reads it while the kernel runs (it releases
the GIL), so a bar advances inside a chunk's task instead of only when the task ends.

The convolution kernel decodes a tile of columns along the whole axis once into a workspace
of the physical type (``nb × 256`` values: 400 KiB for 400 float32 channels; float32 widens
to float64 exactly), then every tap is a multiply-add over the tile's contiguous columns.
Windows without a NaN (the common case: a prefix count of rows holding one says which) skip
the weight sum and divide by the kernel's sum, as astropy does for a spectrum without NaN.
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels._loaders import Kind, loaders
from dfits.kernels._run import flat
from dfits.kernels._spec import Spec, normalize_axis, params

__all__ = ["TILE", "block_mean", "convolve_axis", "convolve_kernel", "mean_kernel"]

#: columns decoded together: the workspace is ``nb × TILE`` float64 values per thread
TILE = 256


def convolve_axis(
    u: np.ndarray,
    spec: Spec,
    axis: int,
    kernel: np.ndarray,
    *,
    keep_nan: bool = True,
    dtype: np.dtype | type | None = None,
    progress: np.ndarray | None = None,
) -> np.ndarray:
    """``u``'s physical values convolved along ``axis`` (see the module docstring).

    ``kernel``: 1-D, odd length, a sum not close to zero (``ValueError`` otherwise; callers
    name the file). Returns a new C-ordered array of ``dtype`` (default: the physical type
    widened to at least float32) shaped like ``u``. ``progress``: a one-element int64 array
    the kernel adds the values it has read to (the module docstring).
    """
    kind, scale, zero, blank = params(u, spec)
    (ax,) = normalize_axis(axis, u.ndim)
    k = np.ascontiguousarray(kernel, dtype=np.float64)
    check_kernel(k)
    if dtype is None:
        dtype = np.result_type(spec.physical, np.float32)
    out = np.empty(u.shape, dtype=dtype)
    if u.size == 0:
        return out
    outer = int(np.prod(u.shape[:ax]))
    nb = u.shape[ax]
    inner = int(np.prod(u.shape[ax + 1 :]))
    # a view for any chunk dask hands us; an odd strided slice is copied (stored bytes)
    v = u.reshape(outer, nb, inner)
    # the workspace in the physical type: float32 values widen exactly, and half the bytes
    # of float64 stay in cache while every tap re-reads them
    wide = np.float32 if spec.physical == np.float32 else np.float64
    vals = np.empty((nb, min(TILE, inner)), dtype=wide)
    prefix = np.empty(nb + 1, dtype=np.int64)
    # astropy divides a spectrum without NaN by numpy's sum of the kernel
    ksum = float(k.sum())
    base, geo = flat(v)
    convolve_kernel(kind)(
        base, geo, k, ksum, scale, zero, blank, bool(keep_nan), vals, prefix,
        out.reshape(outer, nb, inner), _counter(progress),
    )  # fmt: skip
    return out


def _counter(progress: np.ndarray | None) -> np.ndarray:
    """The kernels' progress counter: the caller's, or one nobody reads."""
    if progress is None:
        return np.zeros(1, dtype=np.int64)
    if progress.dtype != np.int64 or progress.shape != (1,):
        raise TypeError(f"progress must be a one-element int64 array, not {progress!r}")
    return progress


def check_kernel(k: np.ndarray) -> None:
    """``ValueError`` naming what is wrong with a 1-D convolution kernel, if anything."""
    if k.ndim != 1 or k.size == 0:
        raise ValueError(f"the kernel must be 1-D and not empty, not shape {k.shape}")
    if k.size % 2 == 0:
        raise ValueError(f"the kernel must have an odd length, not {k.size}")
    if not np.all(np.isfinite(k)):
        raise ValueError("the kernel holds NaN or infinite values")
    if np.isclose(k.sum(), 0.0, atol=1e-8):
        raise ValueError(f"the kernel's sum ({k.sum()!r}) is too close to 0 to normalise it")


@functools.cache
def convolve_kernel(kind: Kind):
    """Return the kernel ``(base, geo, k, ksum, scale, zero, blank, keep, vals, prefix, out,
    done)``.

    ``base`` is a 1-D contiguous view and ``geo = (na, nb, nc, off, sa, sb)`` places
    ``u[a, b, c]`` at ``base[off + a·sa + b·sb + c]`` (see ``_shape.flat_view``).
    """
    stripe, window = _steps(kind)

    @inline
    def cols(base, geo, k, ksum, scale, zero, blank, keep, vals, prefix, out, done):
        na, nb, nc, off, sa, sb = geo
        tile = vals.shape[1]
        top = np.empty(tile)
        bot = np.empty(tile)
        for a in range(na):
            for c0 in range(0, nc, tile):
                n = min(tile, nc - c0)
                stripe(base, off + a * sa + c0, sb, nb, n, scale, zero, blank, vals, prefix)
                for i in range(nb):
                    window(i, k, ksum, keep, vals, prefix, n, top, bot, out[a, i, c0 : c0 + n])
                done[0] += n * nb

    return entry(cols, kind)


def _steps(kind: Kind):
    """The kernel's steps: decode a stripe of the tile, and one output row from its window."""
    return _stripe(kind), _window()


def _stripe(kind: Kind):
    """Decode ``nb`` rows of a tile's stripe into ``vals`` and count its NaN rows."""
    phys = loaders(kind).phys

    @inline
    def stripe(base, o, sb, nb, n, scale, zero, blank, vals, prefix):
        prefix[0] = 0
        for b in range(nb):
            row = base[o + b * sb : o + b * sb + n]
            bad = 0
            for c in range(n):
                v = np.float64(phys(row[c], scale, zero, blank))
                vals[b, c] = v
                bad += v != v
            prefix[b + 1] = prefix[b] + (bad > 0)

    return stripe


@functools.cache
def _window():
    """One output row from the window of decoded rows around it (astropy's weights)."""

    @inline
    def window(i, k, ksum, keep, vals, prefix, n, top, bot, out):
        nb = vals.shape[0]
        h = k.size // 2
        lo = max(i - h, 0)
        hi = min(i + h, nb - 1)
        top[:n] = 0.0
        if prefix[hi + 1] == prefix[lo]:
            # no NaN in reach: positions beyond the axis add zeros, the weight is the sum
            # four taps per pass: the tile's sums are loaded and stored once per four rows
            b = lo
            while b + 3 <= hi:
                k0, k1, k2, k3 = k[i + h - b], k[i + h - b - 1], k[i + h - b - 2], k[i + h - b - 3]
                r0, r1, r2, r3 = vals[b], vals[b + 1], vals[b + 2], vals[b + 3]
                for c in range(n):
                    top[c] += ((k0 * r0[c] + k1 * r1[c]) + k2 * r2[c]) + k3 * r3[c]
                b += 4
            for rest in range(b, hi + 1):
                kj = k[i + h - rest]
                for c in range(n):
                    top[c] += kj * vals[rest, c]
            for c in range(n):
                out[c] = top[c] / ksum
            return
        # the fill zeros before the axis count in the weight first (astropy's order)
        lead = 0.0
        for b in range(i - h, lo):
            lead += k[i + h - b]
        bot[:n] = lead
        for b in range(lo, hi + 1):
            kj = k[i + h - b]
            for c in range(n):
                v = vals[b, c]
                ok = v == v
                top[c] += kj * v if ok else 0.0
                bot[c] += kj if ok else 0.0
        for b in range(hi + 1, i + h + 1):
            for c in range(n):
                bot[c] += k[i + h - b]
        for c in range(n):
            centre = vals[i, c]
            if keep and centre != centre:
                out[c] = np.nan
            elif bot[c] == 0.0:
                out[c] = centre  # astropy gives the centre value back
            else:
                out[c] = top[c] / bot[c]

    return window


def block_mean(
    u: np.ndarray,
    spec: Spec,
    axis: int,
    factor: int,
    *,
    dtype: np.dtype | type | None = None,
    progress: np.ndarray | None = None,
) -> np.ndarray:
    """Means of runs of ``factor`` positions of ``u`` along ``axis`` (the module docstring).

    Returns a new C-ordered array of ``dtype`` (default: the physical type widened to at
    least float32), ``ceil(n / factor)`` long along ``axis``; ``progress`` as for
    :func:`convolve_axis`.
    """
    kind, scale, zero, blank = params(u, spec)
    (ax,) = normalize_axis(axis, u.ndim)
    if factor < 1:
        raise ValueError(f"the factor must be at least 1, not {factor!r}")
    if dtype is None:
        dtype = np.result_type(spec.physical, np.float32)
    nb = u.shape[ax]
    shape = (*u.shape[:ax], -(-nb // factor), *u.shape[ax + 1 :])
    out = np.empty(shape, dtype=dtype)
    if u.size == 0:
        return out
    outer = int(np.prod(u.shape[:ax]))
    inner = int(np.prod(u.shape[ax + 1 :]))
    base, geo = flat(u.reshape(outer, nb, inner))
    mean_kernel(kind)(
        base, geo, int(factor), scale, zero, blank, out.reshape(outer, -1, inner),
        _counter(progress),
    )  # fmt: skip
    return out


@functools.cache
def mean_kernel(kind: Kind):
    """Return the kernel ``(base, geo, factor, scale, zero, blank, out, done)`` for one kind."""
    phys = loaders(kind).phys

    @inline
    def runs(base, geo, factor, scale, zero, blank, out, done):
        na, nb, nc, off, sa, sb = geo
        total = np.empty(TILE)
        count = np.empty(TILE)
        for a in range(na):
            for c0 in range(0, nc, TILE):
                n = min(TILE, nc - c0)
                for r in range(out.shape[1]):
                    total[:n] = 0.0
                    count[:n] = 0.0
                    for b in range(r * factor, min(r * factor + factor, nb)):
                        o = off + a * sa + b * sb + c0
                        row = base[o : o + n]
                        for c in range(n):
                            v = np.float64(phys(row[c], scale, zero, blank))
                            ok = v == v
                            total[c] += v if ok else 0.0
                            count[c] += 1.0 if ok else 0.0
                    for c in range(n):
                        out[a, r, c0 + c] = total[c] / count[c] if count[c] > 0 else np.nan
                done[0] += n * nb

    return entry(runs, kind)
