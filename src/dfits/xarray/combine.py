"""Attributes of many FITS files combined: every file's name and header, in order.

The contract: :func:`combine_attrs` is an xarray ``combine_attrs`` callable, for
``xr.open_mfdataset(paths, combine_attrs=dfits.xarray.combine_attrs)`` (and ``xr.concat``,
``xr.combine_nested``, ``xr.combine_by_coords``). xarray's default (``"override"``) keeps the
first file's attributes only; this keeps one entry per file:

* ``ds.attrs["fits_filenames"]``: every file's path or URL;
* ``ds[name].attrs["fits_headers"]``: every file's header (one card a line, as
  ``attrs["fits_header"]``);

both in the order the files take along the concatenated dimension (a nested combine over
several dimensions lists them in C order of those dimensions as the result has them).
``fits_filename`` and ``fits_header`` stay the first file's, which the ``.fits`` accessor
reads. Any other attribute is kept where every file agrees and dropped where they differ
(xarray's ``"drop_conflicts"``): a ``units`` or ``object`` true of one file only is not kept.

Attributes rather than coordinates: a scalar header coordinate on every file's Dataset makes
xarray's combine warn (``FutureWarning``, xarray 2026.9) and its coming defaults
(``coords="minimal"``, ``compat="override"``) keep only the first file's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["combine_attrs"]

# singular (one file's, as the dfits engine sets it) -> plural (one per file, in order)
PER_FILE = {"fits_filename": "fits_filenames", "fits_header": "fits_headers"}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except ValueError:  # ambiguous truth value of an array-like
        return False


def combine_attrs(variable_attrs: Sequence[Mapping[str, Any]], context: Any = None) -> dict:
    """Combine the attributes of several Datasets or variables opened by dfits, in order.

    Parameters
    ----------
    variable_attrs
        The attribute dicts, in concatenation order (xarray passes them).
    context
        Passed by xarray; unused.

    Returns
    -------
    dict
        ``fits_filenames``/``fits_headers`` listing every input's (an input that is itself
        combined adds its whole list), ``fits_filename``/``fits_header`` the first's, and the
        other attributes every input agrees on.

    Examples
    --------
    >>> a = {"fits_filename": "a.fits", "units": "Jy", "object": "M 31"}
    >>> b = {"fits_filename": "b.fits", "units": "Jy", "object": "M 33"}
    >>> combine_attrs([a, b])
    {'units': 'Jy', 'fits_filename': 'a.fits', 'fits_filenames': ['a.fits', 'b.fits']}
    >>> again = combine_attrs([combine_attrs([a, b]), {"fits_filename": "c.fits"}])
    >>> again["fits_filenames"]
    ['a.fits', 'b.fits', 'c.fits']
    """
    out: dict[str, Any] = {}
    dropped: set[str] = set()
    special = set(PER_FILE) | set(PER_FILE.values())
    for attrs in variable_attrs:
        for key, value in attrs.items():
            if key in special or key in dropped:
                continue
            if key in out and not _same(out[key], value):
                del out[key]
                dropped.add(key)
            elif key not in out:
                out[key] = value
    for key, plural in PER_FILE.items():
        values: list[Any] = []
        for attrs in variable_attrs:
            if plural in attrs:
                values.extend(attrs[plural])
            elif key in attrs:
                values.append(attrs[key])
        if values:
            out[key], out[plural] = values[0], values
    return out
