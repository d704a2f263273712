"""The cube tests' files and fixtures: those of the xarray tests (the same generated cubes)."""

from __future__ import annotations

from tests.xarray.conftest import (
    CUBE_EXTRA,
    SPECTRAL_CUBES,
    celestial_wcs,
    cube,
    cube_data,
    reread,
    spectral_cube_file,
    write,
)

__all__ = ["CUBE_EXTRA", "SPECTRAL_CUBES", "celestial_wcs", "cube", "cube_data", "reread",
           "spectral_cube_file", "write"]  # fmt: skip
