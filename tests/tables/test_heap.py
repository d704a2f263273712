"""Variable-length arrays gathered from the heap at once (issue 44): row order, scattered,
shared and empty runs, every element type, against astropy on every route."""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pytest

import dfits
from dfits.tables import heap
from tests.tablefiles import write_table

fits = pytest.importorskip("astropy.io.fits")
pa = pytest.importorskip("pyarrow")

#: code -> (element dtype as stored, values drawn)
ELEMENTS = {
    "J": (">i4", lambda rng, k: rng.integers(-(2**31), 2**31, k)),
    "D": (">f8", lambda rng, k: rng.standard_normal(k)),
    "E": (">f4", lambda rng, k: rng.standard_normal(k)),
    "I": (">i2", lambda rng, k: rng.integers(-(2**15), 2**15, k)),
    "B": ("u1", lambda rng, k: rng.integers(0, 256, k)),
    "L": ("u1", lambda rng, k: rng.choice(np.array(list(b"TF\0"), np.uint8), k)),
    "C": (">c8", lambda rng, k: rng.standard_normal(k) + 1j * rng.standard_normal(k)),
}


def _write(path, code: str, layout: str, nrows: int = 40, seed: int = 0):
    """A 1P<code> column whose arrays lie in the heap in ``layout`` order: ``rows`` (back
    to back), ``reversed``, ``gaps`` (padding between), or ``shared`` (two rows point at
    the same array)."""
    rng = np.random.default_rng(seed)
    stored, draw = ELEMENTS[code]
    counts = rng.integers(0, 7, nrows)
    counts[[3, 17]] = 0
    blobs = [np.asarray(draw(rng, int(k))).astype(stored).tobytes() for k in counts]
    order = list(range(nrows))
    if layout == "reversed":
        order = order[::-1]
    data, offsets = bytearray(), [0] * nrows
    for i in order:
        if layout == "gaps":
            data += b"\xff" * 5
        offsets[i] = len(data)
        data += blobs[i]
    if layout == "shared":
        counts[9], offsets[9] = counts[8], offsets[8]
    rows = b"".join(struct.pack(">ii", int(c), o) for c, o in zip(counts, offsets, strict=True))
    return write_table(
        path, [("TFIELDS", 1), ("TTYPE1", "V"), ("TFORM1", f"1P{code}({max(counts)})")],
        rows + bytes(data), naxis1=8, naxis2=nrows, pcount=len(data),
    )  # fmt: skip


@pytest.mark.parametrize("layout", ["rows", "reversed", "gaps", "shared"])
@pytest.mark.parametrize("code", list(ELEMENTS))
def test_arrays_equal_astropy_on_every_route(tmp_path, code, layout, monkeypatch):
    monkeypatch.setattr(heap, "_GATHER", 16)  # several gather steps, even on a small heap
    path = _write(tmp_path / "v.fits", code, layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NUL logicals: astropy warns and reads False
        with fits.open(path) as ref:
            want = [np.array(v) for v in ref[1].data["V"]]
    hdu = dfits.open(path)[1]
    routes = {
        "column": list(hdu["V"].compute()),
        "pandas": list(hdu.to_pandas()["V"]),
        "arrow": hdu.to_arrow()["V"].to_pylist(),
        "take": list(hdu.to_pandas(where="True")["V"]),
    }
    for route, got in routes.items():
        assert len(got) == len(want), route
        for row, (a, b) in enumerate(zip(got, want, strict=True)):
            a = np.asarray(a)
            if route == "arrow" and code == "C":
                a = a[..., 0] + 1j * a[..., 1] if a.size else a.astype(np.complex64)
            np.testing.assert_array_equal(a, b, err_msg=f"{route} row {row}")
            if route != "arrow":
                assert a.dtype == b.dtype.newbyteorder("="), route


def test_arrow_lists_come_from_offsets_and_values(tmp_path):
    hdu = dfits.open(_write(tmp_path / "v.fits", "J", "gaps"))[1]
    column = hdu.to_arrow()["V"]
    assert str(column.type) == "list<item: int32>"
    values, counts = hdu.column_reader("V").lists(0, 40)
    assert column.chunk(0).values.to_numpy().tolist() == values.tolist()
    assert [len(v) for v in column.to_pylist()] == counts.tolist()
