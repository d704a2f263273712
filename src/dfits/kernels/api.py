"""N-d entry points: decode and reduce native unsigned views of stored values.

Every function takes ``u``, a native unsigned view (``u1/u2/u4/u8``) of stored bytes of any
shape and strides (read-only memmaps included), and ``spec``, any object with ``bitpix``,
``mode`` ("raw" | "offset" | "scaled"), ``bscale``, ``bzero``, ``blank``, ``physical`` and
``byteorder`` (``">"``: the bytes are big-endian, as FITS stores them; ``"="``: native, as a
tile codec decodes them); ``dfits.format.dtypes.DecodeSpec`` is one. Both orders give identical
results. Results are shaped like the kept axes of ``u``, in order (no ``keepdims``). Nothing
here knows about files or dask.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Protocol

import numpy as np

from dfits.kernels._compile import NARROW_BLOCK
from dfits.kernels._loaders import Kind, kind_of
from dfits.kernels._shape import flat_view, layout_for
from dfits.kernels.bands import band_kernels, raw_interval, rawband_kernels
from dfits.kernels.decode import decode_kernel
from dfits.kernels.extrema import extrema_kernels, minmax_kernels
from dfits.kernels.moments import isum_kernels, moments_kernels, rawsum_kernels, sum_kernels
from dfits.kernels.weighted import weighted_kernels

__all__ = [
    "Spec",
    "band_moments",
    "band_sum_count",
    "decode",
    "decode_rows",
    "extrema",
    "integer_sum",
    "is_integer_kind",
    "moments",
    "normalize_axis",
    "sum_count",
    "weighted_sums",
]


class Spec(Protocol):
    """What kernels need to know about an encoding."""

    bitpix: int
    mode: str
    bscale: float
    bzero: float
    blank: int | None
    physical: np.dtype
    byteorder: str


def normalize_axis(axis: Any, ndim: int) -> tuple[int, ...]:
    """Return sorted non-negative reduced axes; ``None`` means all.

    Examples
    --------
    >>> normalize_axis(-1, 3)
    (2,)
    >>> normalize_axis(None, 2)
    (0, 1)
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(ax, ndim)
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _params(u: np.ndarray, spec: Spec) -> tuple[Kind, float, float, Any]:
    kind, scale, zero, blank = _encoding(
        spec.bitpix, spec.mode, spec.bscale, spec.bzero, spec.blank, spec.byteorder
    )
    if u.dtype != kind.view_dtype:
        raise TypeError(f"kernels need a {kind.view_dtype} view for BITPIX {kind.bitpix}")
    return kind, scale, zero, blank


@functools.lru_cache(maxsize=256)
def _encoding(bitpix: int, mode: str, bscale: float, bzero: float, blank: Any, byteorder: str):
    # memoised: a section read decodes one small stamp per call, where building these
    # (a numpy scalar round trip for BLANK) cost as much as the kernel itself
    kind = kind_of(SimpleNamespace(bitpix=bitpix, mode=mode, blank=blank, byteorder=byteorder))
    raw = 0
    if kind.has_blank:
        # Kernels compare raw bits: BLANK's pattern in the stored byte order, as this machine
        # reads it through the unsigned view (BITPIX 8 stores unsigned bytes).
        stored = np.dtype("u1" if bitpix == 8 else f"i{bitpix // 8}")
        stored = stored.newbyteorder(">" if kind.swap else "=")
        raw = np.frombuffer(np.array(blank, dtype=stored).tobytes(), kind.view_dtype)[0]
    return kind, float(bscale), float(bzero), kind.view_dtype.type(raw)


def is_integer_kind(spec: Spec) -> bool:
    """True when physical values are integers that can never be missing."""
    return spec.bitpix > 0 and spec.mode in ("raw", "offset") and spec.physical.kind in "iu"


def decode(u: np.ndarray, spec: Spec, out: np.ndarray | None = None) -> np.ndarray:
    """Return the physical values of ``u`` as a new C-ordered native array (or fill ``out``)."""
    kind, scale, zero, blank = _params(u, spec)
    if out is None:
        out = np.empty(u.shape, dtype=spec.physical)
    if u.size == 0:
        return out
    kernel = decode_kernel(kind)
    if u.ndim == 2 and out.flags.c_contiguous:
        # rows as they are (a stamp): coalescing axes buys nothing at two dimensions
        kernel(*_flat(u), scale, zero, blank, out)
        return out
    layout = layout_for(u, frozenset(range(u.ndim)))
    if layout is not None and out.flags.c_contiguous:
        _, u2 = layout
        kernel(*_flat(u2), scale, zero, blank, out.reshape(u2.shape))
    elif u.ndim <= 2:
        u2 = u.reshape((1,) * (2 - u.ndim) + u.shape) if u.ndim < 2 else u
        kernel(*_flat(u2), scale, zero, blank, out.reshape(u2.shape) if u.ndim < 2 else out)
    else:
        for i in range(u.shape[0]):
            decode(u[i], spec, out[i])
    return out


def decode_rows(base: np.ndarray, geo: tuple[int, int, int, int], spec: Spec) -> np.ndarray:
    """Decode ``nrow`` rows of ``length`` values lying in ``base`` into a new native array.

    ``base`` is a 1-D contiguous native unsigned view; ``geo = (nrow, length, offset,
    row_stride)`` in elements (a negative stride runs upwards). Row ``a`` is
    ``base[offset + a·row_stride :][:length]``. For callers that keep one flat view of a
    whole data block and know where a region lies in it (section reads), so that no view per
    region has to be built and measured. Returns shape ``(nrow, length)``.
    """
    kind, scale, zero, blank = _params(base, spec)
    nrow, length, off, sa = geo
    out = np.empty((nrow, length), dtype=spec.physical)
    if out.size == 0:
        return out
    last = off + (nrow - 1) * sa
    if base.ndim != 1 or min(off, last) < 0 or max(off, last) + length > base.size:
        # numba slices clamp silently: a bad geometry must not read the wrong values
        raise ValueError(f"rows {geo} do not lie within a base of {base.size} values")
    decode_kernel(kind)(base, geo, scale, zero, blank, out)
    return out


def _flat(v: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """``(base, geo)`` for a kernel: ``geo`` is the shape of ``v`` then its offset and strides
    (all but the unit-stride last one) in ``base``; views numba cannot index that way (a
    stepped or reversed last axis) are copied first."""
    flat = flat_view(v)
    if flat is None:
        flat = flat_view(np.ascontiguousarray(v))
    base, off, strides = flat  # type: ignore[misc]
    return base, (*v.shape, off, *strides[:-1])


def _kept_shape(u: np.ndarray, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for ax, n in enumerate(u.shape) if ax not in axes)


def _run(
    u: np.ndarray,
    axes: tuple[int, ...],
    outs: list[np.ndarray],
    call: Callable[[str, np.ndarray, list[np.ndarray]], None],
    combine: Callable[[list[list[np.ndarray]], int], list[np.ndarray]],
    fold: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """Run a kernel over ``u`` into ``outs`` (shaped as the kept axes), splitting if needed.

    ``fold``, for sums, reduces the last axis of outputs computed with that axis kept: a
    view whose reduced groups do not merge (a cut-out's spectrum) then takes one column
    kernel call and a small numpy sum instead of one call per row.
    """
    layout = layout_for(u, frozenset(axes))
    if layout is not None:
        form, v = layout
        if form == "rows":
            call(form, v, [o.reshape(v.shape[0]) for o in outs])
        else:
            call(form, v, [o.reshape(v.shape[0], v.shape[2]) for o in outs])
        return outs
    last = u.ndim - 1
    if fold is not None and axes and axes[-1] == last:
        inner = layout_for(u, frozenset(axes[:-1]))  # the last axis kept for now
        if inner is not None:
            form, v = inner
            part = [np.zeros((*o.shape, u.shape[last]), o.dtype) for o in outs]
            call(form, v, [p.reshape(v.shape[0], v.shape[2]) for p in part])
            for o, res in zip(outs, fold(part), strict=True):
                o[...] = res
            return outs
    # Awkward layout: split along one axis and recurse on views (never a copy of the data).
    split = _split_axis(u, axes)
    sub_axes = tuple(a - (a > split) for a in axes if a != split)
    kept_shape = _kept_shape(u[(slice(None),) * split + (0,)], sub_axes)
    parts = []
    for i in range(u.shape[split]):
        sub = [np.zeros(kept_shape, o.dtype) for o in outs]
        parts.append(_run(u[(slice(None),) * split + (i,)], sub_axes, sub, call, combine, fold))
    if split not in axes:
        at = sum(1 for a in range(split) if a not in axes)  # its place among the kept axes
        for k, o in enumerate(outs):
            o[...] = np.stack([p[k] for p in parts], axis=at)
        return outs
    # ``split`` is the first reduced axis: the parts are consecutive slabs of the reduced
    # values in C order, ``sub_size`` values each (what extrema need for their flat indices)
    sub_size = int(np.prod([u.shape[a] for a in axes if a > split]))
    for k, res in enumerate(combine(parts, sub_size)):
        outs[k][...] = res
    return outs


def _fold_sums(parts: list[np.ndarray]) -> list[np.ndarray]:
    """Sums (and counts) over the last axis, in the dtype they were accumulated in."""
    return [p.sum(axis=-1, dtype=p.dtype) for p in parts]


def _split_axis(u: np.ndarray, axes: tuple[int, ...]) -> int:
    """The axis to split an awkward view along: the fewest parts that each fit a kernel.

    Candidates are the kept axes and the first reduced one (whose parts stay in C order of
    the reduced values). Splitting a cut-out's spectrum ``(C, Y, X)`` over ``(1, 2)`` along
    ``Y`` takes ``Y`` kernel calls where splitting along ``C`` and then ``Y`` took ``C·Y``
    (8 ms against 250 ms for 256 planes of a 100 × 100 cut-out). None fitting: axis 0.
    """
    candidates = [a for a in range(u.ndim) if a not in axes] + ([axes[0]] if axes else [])
    best = None
    for a in candidates:
        sub_axes = frozenset(b - (b > a) for b in axes if b != a)
        fits = layout_for(u[(slice(None),) * a + (0,)], sub_axes) is not None
        if fits and (best is None or u.shape[a] < u.shape[best]):
            best = a
    return 0 if best is None else best


def _sum_plan(u: np.ndarray, axis: Any, dtype: Any):
    """Reduced axes, kept shape and the float dtype sums are stored in (float64 by default)."""
    axes = normalize_axis(axis, u.ndim)
    out_dtype = np.dtype(np.float64 if dtype is None else dtype)
    if out_dtype not in (np.float32, np.float64):
        raise TypeError(f"sums are float32 or float64, not {out_dtype}")
    return axes, _kept_shape(u, axes), out_dtype


def sum_count(
    u: np.ndarray,
    spec: Spec,
    axis: Any = None,
    *,
    skipna: bool = False,
    dtype: Any = None,
    counts: bool = True,
):
    """Sums and int64 counts of (valid, with ``skipna``) values over ``axis``.

    Values are accumulated in float64. The sums come back as float64, or as ``dtype``
    (float32) when given: the kernel then rounds each finished sum once as it stores it,
    so a large partial (a moment map) never exists in float64 as well.

    When no value can be missing from the count (``skipna`` off, or an encoding without NaN
    or BLANK) the counts are all alike and come back as a read-only broadcast array. A caller
    that needs only the sums may pass ``counts=False``; the counts may then come back as
    None (scaled integers skip the count map, which for a moment map is 8 bytes of fresh
    memory per pixel).
    """
    kind, scale, zero, blank = _params(u, spec)
    axes, shape, out_dtype = _sum_plan(u, axis, dtype)
    if u.size == 0:
        return np.zeros(shape, out_dtype), np.zeros(shape, np.int64)
    if kind.mode == "scaled" and kind.bitpix in (8, 16, 32):
        return _scaled_integer_sum(u, kind, scale, zero, blank, axes, skipna, out_dtype, counts)
    if out_dtype != np.float64 and layout_for(u, frozenset(axes)) is None:
        # awkward layouts combine sub-results: keep those in float64, round at the end
        total, n = sum_count(u, spec, axes, skipna=skipna)
        return total.astype(out_dtype), n
    rows, cols = sum_kernels(kind, skipna)
    counted = skipna and kind.can_be_missing
    outs = [np.zeros(shape, out_dtype)] + ([np.zeros(shape, np.int64)] if counted else [])

    def call(form, v, outs_):
        if counted:
            n_out = outs_[1]
        else:  # not written by ``cols``; ``rows`` writes one count per row
            n_out = np.empty(v.shape[0] if form == "rows" else (0, 0), np.int64)
        (rows if form == "rows" else cols)(*_flat(v), scale, zero, blank, outs_[0], n_out)

    def combine(parts, _):
        return [np.sum([p[k] for p in parts], axis=0) for k in range(len(outs))]

    res = _run(u, axes, outs, call, combine, _fold_sums)
    if counted:
        return res[0], res[1]
    return res[0], np.broadcast_to(np.int64(np.prod([u.shape[a] for a in axes])), shape)


def band_sum_count(
    u: np.ndarray,
    spec: Spec,
    axis: Any = None,
    *,
    lo: float = -np.inf,
    hi: float = np.inf,
    dtype: Any = None,
    counts: bool = True,
    sums: bool = True,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Sums and int64 counts of the values inside ``[lo, hi]`` over ``axis``.

    The bounds are compared with each physical value (as astropy decodes it) in float64;
    NaN and BLANK are never inside. An empty band (``lo > hi``, or a NaN bound) selects
    nothing. See :mod:`dfits.kernels.bands`. Sums are accumulated in float64 and come back
    as float64, or rounded once to ``dtype`` (float32) when given. ``counts=False`` or
    ``sums=False`` skips that result (None comes back in its place).
    """
    kind, scale, zero, blank = _params(u, spec)
    axes, shape, out_dtype = _sum_plan(u, axis, dtype)
    if not (counts or sums):
        raise ValueError("ask for sums, counts or both")
    if sums and out_dtype != np.float64 and layout_for(u, frozenset(axes)) is None:
        # awkward layouts combine sub-results: keep those in float64, round at the end
        total, n = band_sum_count(u, spec, axes, lo=lo, hi=hi, counts=counts)
        return total.astype(out_dtype), n  # type: ignore[union-attr]
    if u.size and kind.mode == "scaled" and kind.bitpix in (8, 16):
        span = raw_interval(kind.bitpix, scale, zero, float(lo), float(hi))
        if span is not None:
            return _raw_band_sum(u, kind, scale, zero, blank, axes, span, out_dtype, counts, sums)
    outs = ([np.zeros(shape, out_dtype)] if sums else []) + (
        [np.zeros(shape, np.int64)] if counts else []
    )
    if u.size:
        rows, cols = band_kernels(kind, counts, sums)
        lo, hi = float(lo), float(hi)

        def call(form, v, outs_):
            # a result not asked for: an empty array the kernel never writes
            empty = {"rows": 0, "cols": (0, 0)}[form]
            total = outs_[0] if sums else np.empty(empty)
            n = outs_[-1] if counts else np.empty(empty, np.int64)
            (rows if form == "rows" else cols)(*_flat(v), scale, zero, blank, lo, hi, total, n)

        def combine(parts, _):
            return [np.sum([p[k] for p in parts], axis=0) for k in range(len(outs))]

        outs = _run(u, axes, outs, call, combine, _fold_sums)
    return (outs[0] if sums else None), (outs[-1] if counts else None)


def _raw_band_sum(u, kind, scale, zero, blank, axes, span, out_dtype, counts, sums):
    """Band sums and counts of scaled 8/16-bit integers from the stored integers in ``span``."""
    shape = _kept_shape(u, axes)
    if out_dtype != np.float64 and not _sums_once(u, axes, kind):
        # blocks of rows are added up: do that in float64, round at the end
        total, n = _raw_band_sum(u, kind, scale, zero, blank, axes, span, np.float64, counts, sums)
        return (None if total is None else total.astype(out_dtype)), n
    outs = [np.zeros(shape, out_dtype), np.zeros(shape, np.int64)]
    rows, cols = rawband_kernels(kind)
    first, last = np.int32(span[0]), np.int32(span[1])

    def call(form, v, outs_):
        kernel = rows if form == "rows" else cols
        kernel(*_flat(v), blank, first, last, scale, zero, sums, counts, *outs_)

    def combine(parts, _):
        return [np.sum([p[0] for p in parts], axis=0), np.sum([p[1] for p in parts], axis=0)]

    total, n = _run(u, axes, outs, call, combine, _fold_sums)
    return (total if sums else None), (n if counts else None)


def _sums_once(u: np.ndarray, axes: tuple[int, ...], kind: Kind) -> bool:
    """Whether the raw-integer kernels write each sum once (not ``+=`` per block of rows)."""
    layout = layout_for(u, frozenset(axes))
    return layout is not None and (
        layout[0] == "rows" or kind.bitpix == 32 or layout[1].shape[1] <= NARROW_BLOCK
    )


def _scaled_integer_sum(u, kind, scale, zero, blank, axes, skipna, out_dtype, counts=True):
    """Sums of scaled integers (``scale·Σraw + zero·n``) straight from the stored integers."""
    shape = _kept_shape(u, axes)
    if out_dtype != np.float64 and not _sums_once(u, axes, kind):
        # sub-results or blocks of rows are added up: do that in float64, round at the end
        total, n = _scaled_integer_sum(
            u, kind, scale, zero, blank, axes, skipna, np.float64, counts
        )
        return total.astype(out_dtype), n
    total = np.zeros(shape, out_dtype)
    # only written with ``skipna``: calloc'd pages nobody touches cost nothing
    n = np.zeros(shape, np.int64)
    rows, cols = rawsum_kernels(kind)

    with_n = skipna and counts

    def call(form, v, outs):
        (rows if form == "rows" else cols)(*_flat(v), blank, scale, zero, skipna, with_n, *outs)

    def combine(parts, _):
        return [np.sum([p[0] for p in parts], axis=0), np.sum([p[1] for p in parts], axis=0)]

    total, n = _run(u, axes, [total, n], call, combine, _fold_sums)
    if skipna:
        return total, (n if with_n else None)
    n_all = int(np.prod([u.shape[a] for a in axes]))
    return total, np.broadcast_to(np.int64(n_all), shape)


def integer_sum(u: np.ndarray, spec: Spec, axis: Any = None) -> np.ndarray:
    """Exact integer sum (``int64``, or ``uint64`` for unsigned data), as ``numpy.sum``."""
    kind, scale, zero, blank = _params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    acc = np.dtype(np.uint64 if spec.physical.kind == "u" else np.int64)
    out = np.zeros(_kept_shape(u, axes), acc)
    if u.size == 0:
        return out
    rows, cols = isum_kernels(kind)

    def call(form, v, outs):
        (rows if form == "rows" else cols)(*_flat(v), scale, zero, blank, *outs)

    def combine(parts, _):
        return [np.sum([p[0] for p in parts], axis=0, dtype=acc)]

    return _run(u, axes, [out], call, combine, _fold_sums)[0]


def moments(u: np.ndarray, spec: Spec, axis: Any = None, *, skipna: bool = False):
    """``(n, mean, M2)`` over ``axis``: counts (int64), means and squared deviations (float64).

    Where nothing can be missing, or missing values are not skipped, every count is the
    number of values reduced, and ``n`` comes back as a read-only broadcast of that number.
    """
    kind, scale, zero, blank = _params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    shape = _kept_shape(u, axes)
    if u.size == 0:
        return np.zeros(shape, np.int64), np.full(shape, np.nan), np.full(shape, np.nan)
    rows, cols = moments_kernels(kind, skipna)
    layout = layout_for(u, frozenset(axes))
    if layout is not None and layout[0] == "cols" and not (skipna and kind.can_be_missing):
        # a moment map: the kernel writes every mean and M2 (no fill pass first) and no
        # counts, which are all the same: a map less of fresh memory per chunk
        v = layout[1]
        mean, m2 = np.empty(shape), np.empty(shape)
        flat = (v.shape[0], v.shape[2])
        # no counts: an empty row per kept row, so the kernel's ``out_n[a, c0:c1]`` stays
        # an in-bounds (empty) slice, bounds checking on or off
        no_counts = np.empty((v.shape[0], 0), np.int64)
        cols(*_flat(v), scale, zero, blank, 0.0, 0.0, no_counts, mean.reshape(flat),
             m2.reshape(flat))  # fmt: skip
        count = np.int64(np.prod([u.shape[a] for a in axes], dtype=np.int64))
        return np.broadcast_to(count, shape), mean, m2
    outs = [np.zeros(shape, np.int64), np.full(shape, np.nan), np.full(shape, np.nan)]

    def call(form, v, outs_):
        (rows if form == "rows" else cols)(*_flat(v), scale, zero, blank, 0.0, 0.0, *outs_)
        if form == "cols" and not (skipna and kind.can_be_missing):
            outs_[0][...] = v.shape[1]  # counts the column kernel leaves to its caller

    return tuple(_run(u, axes, outs, call, combine_moments, _fold_moments))


def band_moments(
    u: np.ndarray, spec: Spec, axis: Any = None, *, lo: float = -np.inf, hi: float = np.inf
):
    """``(n, mean, M2)`` over ``axis`` of the values inside ``[lo, hi]`` (as
    :func:`band_sum_count` selects them): int64 counts, float64 means and squared deviations
    from them, NaN where nothing is inside. The masked variance, ``nanvar(where(x > t, x,
    nan))``, in one pass over the stored bytes.
    """
    kind, scale, zero, blank = _params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    shape = _kept_shape(u, axes)
    outs = [np.zeros(shape, np.int64), np.full(shape, np.nan), np.full(shape, np.nan)]
    if u.size == 0:
        return tuple(outs)
    rows, cols = moments_kernels(kind, True, banded=True)
    lo, hi = float(lo), float(hi)

    def call(form, v, outs_):
        (rows if form == "rows" else cols)(*_flat(v), scale, zero, blank, lo, hi, *outs_)

    return tuple(_run(u, axes, outs, call, combine_moments, _fold_moments))


def weighted_sums(
    u: np.ndarray, spec: Spec, axis: int, weights: np.ndarray, *, threshold: float | None = None
) -> np.ndarray:
    """``Σ I``, ``Σ I·w`` and ``Σ I·w²`` over one axis, stacked first.

    ``weights`` has one value per position along ``axis``. NaN, BLANK and values below
    ``threshold`` are left out. Returns float64 of shape ``(3, *kept axes)``.
    """
    kind, scale, zero, blank = _params(u, spec)
    (ax,) = normalize_axis(axis, u.ndim)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (u.shape[ax],):
        raise ValueError(f"weights must have shape ({u.shape[ax]},), not {w.shape}")
    outer = int(np.prod(u.shape[:ax]))
    inner = int(np.prod(u.shape[ax + 1 :]))
    # the kernel writes every output value; only an empty axis needs the zeros
    out = np.empty((3, outer, inner)) if u.size else np.zeros((3, outer, inner))
    if u.size:
        # a view for any chunk dask hands us; an odd strided slice is copied (stored bytes)
        v = u.reshape(outer, u.shape[ax], inner)
        thr = -np.inf if threshold is None else float(threshold)
        base, geo = _flat(v)
        weighted_kernels(kind)(base, geo, w, scale, zero, blank, thr, out)
    return out.reshape((3, *_kept_shape(u, (ax,))))


def _fold_moments(parts: list[np.ndarray]) -> list[np.ndarray]:
    """``(n, mean, M2)`` over the last axis: the pooled mean, and M2 about it (Chan et al.)."""
    n, mean, m2 = parts
    tot = n.sum(axis=-1)
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(has, n * mean, 0.0).sum(axis=-1) / tot
        delta = np.where(has, mean - pooled[..., None], 0.0)
        spread = np.where(has, m2 + n * delta * delta, 0.0).sum(axis=-1)
    empty = tot == 0
    return [tot, np.where(empty, np.nan, pooled), np.where(empty, np.nan, spread)]


def combine_moments(parts, _sub_size: int = 0):
    """Merge a list of ``(n, mean, M2)`` partials exactly (Chan et al.), elementwise."""
    n, mean, m2 = (np.asarray(x, dtype=float).copy() for x in parts[0])
    for pn, pmean, pm2 in parts[1:]:
        tot = n + pn
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = pmean - mean
            frac = np.where(tot > 0, pn / np.where(tot > 0, tot, 1), 0.0)
            new_mean = np.where(n == 0, pmean, np.where(pn == 0, mean, mean + delta * frac))
            new_m2 = np.where(
                n == 0, pm2, np.where(pn == 0, m2, m2 + pm2 + delta * delta * n * frac)
            )
        n, mean, m2 = tot, new_mean, new_m2
    return [n.astype(np.int64), mean, m2]


def extrema(
    u: np.ndarray,
    spec: Spec,
    axis: Any = None,
    *,
    want_max: bool = False,
    with_index: bool = True,
    band: tuple[float, float] | None = None,
):
    """``(value, index, nan_index)`` of the min (or max) of valid values over ``axis``.

    ``index`` is the C-order flat index within the reduced axes of the first extreme valid
    value (-1 when there is none); ``nan_index`` that of the first missing value (-1: none).
    With ``with_index=False`` a faster kernel runs and both "indices" are counts: of valid
    values and of missing ones (so ``> 0`` / ``>= 0`` tests still mean "some"). With a
    ``band`` ``(lo, hi)`` (and ``with_index=False``) only the values inside it count as
    valid, as :func:`band_sum_count` selects them; the value where none is inside is
    undefined.
    """
    if band is not None and with_index:
        raise ValueError("extrema of a band come without indices (with_index=False)")
    kind, scale, zero, blank = _params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    shape = _kept_shape(u, axes)
    outs = [
        np.zeros(shape, spec.physical),
        np.full(shape, -1, np.int64),
        np.full(shape, -1, np.int64),
    ]
    if u.size == 0:
        return tuple(outs)
    if with_index:
        rows, cols = extrema_kernels(kind, want_max)
        bounds = ()
    else:
        rows, cols = minmax_kernels(kind, want_max, band is not None)
        bounds = (float(band[0]), float(band[1])) if band is not None else (0.0, 0.0)
    init = _identity(spec.physical, want_max)

    def call(form, v, outs_):
        if not with_index or form == "cols":
            outs_[0][...] = init
        (rows if form == "rows" else cols)(*_flat(v), scale, zero, blank, *bounds, *outs_)

    def combine(parts, sub_size):
        if not with_index:
            pick = np.fmax if want_max else np.fmin
            val = parts[0][0]
            for p in parts[1:]:
                val = pick(val, p[0])
            return [val, sum(p[1] for p in parts), sum(p[2] for p in parts)]
        return _combine_extrema(parts, want_max, sub_size)

    def fold(parts):  # values and counts only: indices need C order across the parts
        pick = np.fmax if want_max else np.fmin
        return [pick.reduce(parts[0], axis=-1), parts[1].sum(-1), parts[2].sum(-1)]

    return tuple(_run(u, axes, outs, call, combine, None if with_index else fold))


def _identity(dtype: np.dtype, want_max: bool):
    """The value every element beats: -inf/+inf, or the integer type's min/max."""
    if dtype.kind == "f":
        return dtype.type(-np.inf if want_max else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if want_max else info.max)


def _combine_extrema(parts, want_max: bool, sub_size: int):
    """Merge extrema of consecutive slabs of axis 0; indices become flat over all axes."""
    val = parts[0][0].copy()
    idx = parts[0][1].copy()
    nanidx = parts[0][2].copy()
    for i, (pv, pi, pn) in enumerate(parts[1:], start=1):
        off = i * sub_size
        has = pi >= 0
        take = has & ((idx < 0) | ((pv > val) if want_max else (pv < val)))
        val = np.where(take, pv, val)
        idx = np.where(take, pi + off, idx)
        nanidx = np.where((nanidx < 0) & (pn >= 0), pn + off, nanidx)
    return [val, idx, nanidx]
