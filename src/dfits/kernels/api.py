"""N-d entry points: decode and reduce native unsigned views of stored values.

Every function takes ``u``, a native unsigned view (``u1/u2/u4/u8``) of stored bytes of any
shape and strides (read-only memmaps included), and ``spec``, any object with ``bitpix``,
``mode`` ("raw" | "offset" | "scaled"), ``bscale``, ``bzero``, ``blank``, ``physical`` and
``byteorder`` (``">"``: the bytes are big-endian, as FITS stores them; ``"="``: native, as a
tile codec decodes them); ``dfits.format.dtypes.DecodeSpec`` is one. Both orders give the
same results. Results are shaped like the kept axes of ``u``, in order (no ``keepdims``).
Nothing here knows about files or dask.

Each job lives in its own module, with its kernels: :mod:`~dfits.kernels.decode`,
:mod:`~dfits.kernels.sums` (and :mod:`~dfits.kernels.intsums` for integers),
:mod:`~dfits.kernels.moments`, :mod:`~dfits.kernels.extrema`, :mod:`~dfits.kernels.bands`
(and :mod:`~dfits.kernels.rawbands`), :mod:`~dfits.kernels.weighted`; this module gathers
their entry points.
"""

from __future__ import annotations

from dfits.kernels._spec import Spec, is_integer_kind, normalize_axis
from dfits.kernels.bands import band_sum_count
from dfits.kernels.decode import decode, decode_rows
from dfits.kernels.extrema import extrema
from dfits.kernels.intsums import integer_sum
from dfits.kernels.moments import band_moments, moments
from dfits.kernels.sums import sum_count
from dfits.kernels.weighted import weighted_sums

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
