"""What the kernels take from a decode spec and an ``axis`` argument.

A *spec* is any object with ``bitpix``, ``mode`` ("raw" | "offset" | "scaled"), ``bscale``,
``bzero``, ``blank``, ``physical`` and ``byteorder`` (``">"``: the stored bytes are big-endian,
as FITS stores them; ``"="``: native, as a tile codec decodes them);
``dfits.format.dtypes.DecodeSpec`` is one. :func:`params` turns it into the compile-time
:class:`~dfits.kernels._loaders.Kind` and the runtime numbers every kernel takes: ``scale``,
``zero`` and BLANK's raw bit pattern in the stored order.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any, Protocol

import numpy as np

from dfits.kernels._loaders import Kind, kind_of

__all__ = ["Spec", "is_integer_kind", "normalize_axis", "params"]


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


def is_integer_kind(spec: Spec) -> bool:
    """True when physical values are integers that can never be missing."""
    return spec.bitpix > 0 and spec.mode in ("raw", "offset") and spec.physical.kind in "iu"


def params(u: np.ndarray, spec: Spec) -> tuple[Kind, float, float, Any]:
    """``(kind, scale, zero, blank)`` for a kernel reading ``u``; ``TypeError`` for a view of
    the wrong unsigned type."""
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
