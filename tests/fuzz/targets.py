"""What the coverage-guided fuzzer (:mod:`tests.fuzz.atheris_run`) feeds its bytes to.

Each target takes arbitrary bytes and returns quietly when dfits accepts them or refuses them
with a :class:`dfits.DfitsError` (with any ``DfitsWarning``); anything else (another exception,
a foreign warning, turned into an exception here) escapes, which is what the fuzzer reports.
No astropy comparison: that oracle costs milliseconds per input and lives in the seeded
campaigns (``./run fuzz``); these targets are for coverage of the parsers.

* :func:`parse_layout`: the header and layout scan over the bytes in memory, every header
  walked (reprs, keys, values, astropy's copy). No file, no kernels: thousands per second.
* :func:`open_and_read`: the bytes as a file, through ``dfits.open``, every HDU's reprs,
  ``info``, a small section and a reduction through dask (:func:`tests.fuzz.check.read_with_dfits`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import dfits
from dfits.format.compressed import image_header_of
from dfits.format.layout import scan
from tests.fuzz.check import Outcome, read_with_dfits, walk_header

__all__ = ["TARGETS", "open_and_read", "parse_layout"]


@contextlib.contextmanager
def _strict() -> Iterator[None]:
    # a warning that is not a DfitsWarning is a leak (as in the campaigns): raise it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=dfits.DfitsWarning)
        yield


def parse_layout(data: bytes) -> None:
    """Scan ``data`` as a FITS file and walk every header; only a DfitsError is allowed."""
    with _strict():
        try:
            layout = scan(lambda at, n: data[at : at + n], len(data), filename="<fuzz>")
        except dfits.DfitsError:
            return
        for hdu in layout.hdus:
            walk_header(hdu.header)
            if image_header_of(hdu) is not None:
                walk_header(image_header_of(hdu))


def open_and_read(data: bytes, path: str) -> None:
    """Write ``data`` to ``path`` and read it as users do; only a DfitsError is allowed."""
    with open(path, "wb") as out:
        out.write(data)
    with _strict():
        read_with_dfits(path, Outcome())


#: the targets by name, for ``--target``
TARGETS = {"layout": parse_layout, "open": open_and_read}
