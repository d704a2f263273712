"""Shared pieces of the compatibility suite: sample files, their twins, and the comparison.

The rule the suite checks: every operation on a dfits array gives what the same operation
gives on ``da.from_array`` of astropy's values of the same file (values, dtype, NaN for BLANK,
unsigned via BZERO), and computing hands back plain native numpy, never a dfits type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
from astropy.io import fits

import dfits

#: Shape of every sample file: several chunks along each axis, partial ones on the first two.
SHAPE = (6, 10, 12)
#: dfits chunks that follow the file (whole rows), with partial chunks on axes 0 and 1.
CHUNKS = (4, 3, 12)
#: Chunks that also split the contiguous last axis (strided chunk reads).
SPLIT_CHUNKS = (4, 3, 5)
#: Relative tolerance per float width: dfits may add in float64, so it may be more accurate.
RTOL = {16: 1e-2, 32: 1e-5, 64: 1e-12}


@dataclass(frozen=True)
class Case:
    """One sample file, astropy's values of it (the reference) and how to chunk both."""

    name: str
    path: str
    ref: np.ndarray
    threshold: float

    def dfits(self, chunks: Any = CHUNKS) -> da.Array:
        """The dfits dask array of the file."""
        return dfits.open(self.path, chunks=chunks)[0].data

    def numpy(self, chunks: Any = CHUNKS) -> da.Array:
        """The reference: ``da.from_array`` of astropy's values, chunked alike."""
        return da.from_array(self.ref, chunks=chunks)


def _nan_spots(data: np.ndarray, fill: Any) -> None:
    # scattered missing values, none covering a whole line along any axis (nanarg* would raise)
    data[1, 2, 3] = fill
    data[4, 7, :6] = fill
    data[5, :4, 11] = fill


def _float(rng: np.random.Generator, dtype: str) -> tuple[np.ndarray, dict]:
    data = (rng.standard_normal(SHAPE) + 3.0).astype(dtype)
    _nan_spots(data, np.nan)
    return data, {}


def _scaled_int16(rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    data = rng.integers(-1000, 1000, SHAPE).astype(np.int16)
    _nan_spots(data, -32768)
    return data, {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768}


def _stored(name: str, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    if name in ("float32", "float64"):
        return _float(rng, name)
    if name == "int16-scaled":
        return _scaled_int16(rng)
    if name == "uint16":  # astropy writes BITPIX 16 with BZERO = 32768
        return rng.integers(0, 65536, SHAPE).astype(np.uint16), {}
    if name == "int32":
        return rng.integers(-1_000_000, 1_000_000, SHAPE).astype(np.int32), {}
    if name == "uint8":
        return rng.integers(0, 256, SHAPE).astype(np.uint8), {}
    raise ValueError(f"no sample case named {name!r}")


#: The sample cases, one per stored encoding.
CASE_NAMES = ("float32", "float64", "int16-scaled", "uint16", "int32", "uint8")


def astropy_values(path: str | Path) -> np.ndarray:
    """astropy's physical values of the primary HDU, in native byte order."""
    with fits.open(path) as hl:
        data = hl[0].data
        return data.astype(data.dtype.newbyteorder("="))


def write_case(directory: Path, name: str, seed: int = 7) -> Case:
    """Write the sample file ``name`` into ``directory`` and return its :class:`Case`."""
    data, cards = _stored(name, np.random.default_rng(seed))
    hdu = fits.PrimaryHDU(data)
    for key, value in cards.items():
        hdu.header[key] = value
    path = directory / f"{name}.fits"
    hdu.writeto(path, overwrite=True)
    ref = astropy_values(path)
    return Case(name, str(path), ref, float(np.nanmedian(ref)))


def write_cases(directory: Path) -> dict[str, Case]:
    """Every sample case, written into ``directory``."""
    return {name: write_case(directory, name) for name in CASE_NAMES}


def _kind(value: Any) -> type:
    return np.ndarray if isinstance(value, np.ndarray) else np.generic


def assert_plain(got: Any) -> None:
    """``got`` is plain native numpy (an ndarray or a numpy scalar), not a dfits type."""
    assert type(got) is np.ndarray or isinstance(got, np.generic), (
        f"computed to {type(got).__module__}.{type(got).__qualname__}, not plain numpy"
    )
    assert np.asarray(got).dtype.isnative, f"byte order {np.asarray(got).dtype.str!r}"


def assert_same(got: Any, want: Any) -> None:
    """``got`` equals ``want`` at ``want``'s precision: type, dtype, shape, then values.

    Floats compare with a relative tolerance for their width and an absolute one scaled by the
    largest magnitude in ``want`` (so values near zero in a large result do not fail on
    rounding); integers, booleans and indices compare exactly; NaN equals NaN.
    """
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
        return
    assert_plain(got)
    assert _kind(got) is _kind(want), f"{type(got).__name__} where numpy gives {type(want)}"
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype} where numpy gives {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} where numpy gives {want.shape}"
    if want.dtype.kind in "fc":
        rtol = RTOL[np.finfo(want.dtype).bits]
        finite = np.abs(want[np.isfinite(want)])
        scale = float(finite.max()) if finite.size else 0.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def check(case: Case, op: Any, chunks: Any = CHUNKS) -> None:
    """Apply ``op`` to the dfits array and to its numpy twin; compute both; compare."""
    want = op(case.numpy(chunks))
    got = op(case.dfits(chunks))
    assert_same(compute(got), compute(want))


def compute(value: Any) -> Any:
    """``value.compute()`` for a dask array, ``dask.compute`` for tuples and the rest."""
    return value.compute() if isinstance(value, da.Array) else dask.compute(value)[0]
