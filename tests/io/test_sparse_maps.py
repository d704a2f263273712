"""Sparse maps: ``LocalSource.map(sparse=True)`` is advised ``MADV_RANDOM``, and ``section``
reads stamps, spectra and decimated planes through such a map, so that a strided read maps
the pages it touches, not the megabytes that read-ahead and fault-around would bring.

What is stable across kernels: the advice is visible as the ``rr`` flag in
``/proc/self/smaps`` (dense chunk maps never carry it), and a read through an advised map
of a file with nothing cached (a sparse file made with ``truncate``) has resident only the
pages it touched (exactly, here; the test allows twice). The second holds on a kernel with
or without fault-around or read-ahead; without the advice, on this project's VM
(``read_ahead_kb`` 8192), the decimated plane below has 5x the pages it touched resident
(56 MB against 10.5 MB), and the test fails.
"""

from __future__ import annotations

import mmap
import os

import numpy as np
import pytest

import dfits
from dfits.io import LocalSource

pytestmark = pytest.mark.skipif(
    not hasattr(mmap, "MADV_RANDOM") or not os.path.exists("/proc/self/smaps"),
    reason="map advice and /proc/self/smaps are Linux's",
)

SHAPE = (8, 4096, 4096)  # float32: 512 MiB, sparse (no block of it is ever written)
PAGE = mmap.PAGESIZE


def _areas(path) -> list[dict]:
    """This process's mapped areas of ``path``: start, Rss (bytes), flags, tmpfs huge pages."""
    out, cur = [], None
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                cur = None
                if line.rstrip().endswith(str(path)):
                    cur = {"start": int(head.split("-")[0], 16), "rss": 0, "shmem_pmd": 0}
                    out.append(cur)
            elif cur is not None and head == "Rss:":
                cur["rss"] = int(line.split()[1]) * 1024
            elif cur is not None and head == "ShmemPmdMapped:":
                cur["shmem_pmd"] = int(line.split()[1])
            elif cur is not None and head == "VmFlags:":
                cur["flags"] = line.split()[1:]
    return out


@pytest.fixture
def sparse_cube(tmp_path):
    """A FITS cube of SHAPE float32, all holes but two rows of plane 3, and those rows."""
    from astropy.io import fits

    header = fits.Header([("SIMPLE", True), ("BITPIX", -32), ("NAXIS", 3)])
    for axis, n in enumerate(reversed(SHAPE), start=1):
        header[f"NAXIS{axis}"] = n
    head = header.tostring().encode()
    rows = {0: np.linspace(1, 2, SHAPE[2]), 8: -np.arange(SHAPE[2])}
    rows = {y: v.astype(">f4") for y, v in rows.items()}
    path = tmp_path / "sparse.fits"
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(-(-(len(head) + 4 * int(np.prod(SHAPE))) // 2880) * 2880)
    fd = os.open(path, os.O_WRONLY)
    try:
        for y, values in rows.items():
            os.pwrite(fd, values.tobytes(), len(head) + 4 * (3 * SHAPE[1] + y) * SHAPE[2])
    finally:
        os.close(fd)
    return path, len(head), rows


def test_only_sparse_maps_are_advised_random(sparse_cube):
    path, offset, _ = sparse_cube
    src = LocalSource.open(path)
    for sparse in (False, True):
        view = src.map(offset, 1 << 24, populate=False, sparse=sparse)
        (area,) = [a for a in _areas(path) if a["start"] <= view.ctypes.data < a["start"] + 2**25]
        assert ("rr" in area["flags"]) is sparse  # dense chunk maps keep read-ahead
        del view, area


def test_a_decimated_plane_maps_only_the_pages_it_touches(sparse_cube):
    path, offset, rows = sparse_cube
    with dfits.open(path) as f:
        values = f[0].section[3, ::8, ::8]  # 512 rows of 16 KiB, 128 KiB apart
        (area,) = _areas(path)
        assert "rr" in area["flags"]
        if area["shmem_pmd"]:  # tmpfs allocates huge pages at a fault, whatever the advice
            pytest.skip("tmpfs with huge pages maps 2 MiB a fault: pages not countable")
        y, x = np.mgrid[0 : SHAPE[1] : 8, 0 : SHAPE[2] : 8]
        touched = np.unique((offset + 4 * ((3 * SHAPE[1] + y) * SHAPE[2] + x)) // PAGE).size
        # each row's values touch every page of its row: 5 pages (a row straddles one more)
        assert touched == 512 * 5
        # the pages touched (exactly, here; the bound leaves room for a file system whose
        # smallest folio is larger than a page), not the plane read-ahead would map
        assert touched * PAGE // 2 <= area["rss"] <= 2 * touched * PAGE
        expected = np.zeros((512, 512), np.float32)
        expected[0], expected[1] = rows[0][::8], rows[8][::8]
        np.testing.assert_array_equal(values, expected)
    assert _areas(path) == []  # close forgets the map


def test_spectra_stay_sparse_and_whole_planes_take_the_plain_map(sparse_cube):
    path, _, rows = sparse_cube
    with dfits.open(path) as f:
        hdu = f[0]
        np.testing.assert_array_equal(hdu.section[:, 8, 100], [0, 0, 0, -100, 0, 0, 0, 0])
        np.testing.assert_array_equal(hdu.section[3, 7:9, :2], [[0, 0], [0, -1]])  # a stamp
        assert [("rr" in a["flags"]) for a in _areas(path)] == [True]
        plane = hdu.section[3]  # dense: read-ahead batches its faults
        assert sorted("rr" in a["flags"] for a in _areas(path)) == [False, True]
        np.testing.assert_array_equal(plane[8], rows[8])
        np.testing.assert_array_equal(plane[2], 0)
        np.testing.assert_array_equal(hdu.section[3, ::2][4], rows[8])  # dense enough
        assert len(_areas(path)) == 2
