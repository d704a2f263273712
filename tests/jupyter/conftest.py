"""Small generated files for the Jupyter helpers: a demo cube and a 10,000-HDU file."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.demo import make_cube
from dfits.io.writer import header_bytes

CUBE_SHAPE = (24, 48, 40)
NHDU = 10_000


@pytest.fixture(scope="session")
def cube_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("jupyter") / "cube.fits"
    return make_cube(str(path), CUBE_SHAPE)


def _extension(i: int, extra: tuple = (), name: str = "SCI") -> bytes:
    cards = [
        ("XTENSION", "IMAGE"),
        ("BITPIX", -32),
        ("NAXIS", 2),
        ("NAXIS1", 3),
        ("NAXIS2", 2),
        ("PCOUNT", 0),
        ("GCOUNT", 1),
        ("EXTNAME", name),
        ("EXTVER", i),
        *extra,
    ]
    data = np.arange(6, dtype=">f4").tobytes()
    return header_bytes(cards) + data + b"\0" * (2880 - len(data))


@pytest.fixture(scope="session")
def many_path(tmp_path_factory):
    """A primary without data and 9,999 tiny SCI images (~57 MB; written once)."""
    path = tmp_path_factory.mktemp("jupyter") / "many.fits"
    primary = header_bytes([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0), ("EXTEND", True)])
    with open(path, "wb") as out:
        out.write(primary)
        out.writelines(_extension(i) for i in range(1, NHDU))
    return str(path)


@pytest.fixture(scope="session")
def nasty_path(tmp_path_factory):
    """Header text that must be escaped: EXTNAME, OBJECT, CTYPE and HISTORY with markup."""
    path = tmp_path_factory.mktemp("jupyter") / "nasty.fits"
    primary = header_bytes([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)])
    ext = _extension(
        1,
        (
            ("OBJECT", "<script>alert(1)</script>"),
            ("CTYPE1", "<i>RA"),
            ("HISTORY", "<img src=x onerror=alert(1)>"),
        ),
        name="<b>&amp",
    )
    path.write_bytes(primary + ext)
    return str(path)
