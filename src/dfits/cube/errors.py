"""Errors of the xarray layer (candidates for :mod:`dfits.errors`)."""

from __future__ import annotations

from dfits.errors import DfitsError, HeaderError, SpectralError

__all__ = ["BeamError", "ConventionError", "RegionError", "SpectralError", "WCSError"]


class WCSError(HeaderError):
    """The header's WCS cannot be used (astropy cannot parse it, or slicing lost it)."""


class RegionError(DfitsError, ValueError):
    """A sky region (cut-out, aperture) is empty or outside the image, or a bad argument."""


class BeamError(SpectralError):
    """No beam where one is needed, an unusable beam, or a beam table that does not fit."""


class ConventionError(SpectralError):
    """A velocity asked of a non-velocity spectral axis without a velocity convention (or
    with an unknown one): the command line names its option, the API its keyword."""
