"""Integer images written through the integer tiles kernel (:mod:`dfits.kernels.inttiles`):
every kind × algorithm, with 2-D and 3-D tiles, edge tiles and several chunkings, reads back
bit-identical in astropy, funpack and dfits, checksums and ZDATASUM verified; the kernel's
stored-value sum equals the writer's separate pass (``tilewriter._image_sum``)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.format.checksum import add
from dfits.format.imagehdu import parse_storage
from dfits.format.ztable import parse_compression
from dfits.kernels.inttiles import int_batches
from dfits.write import tilewriter
from tests.write.zchecks import check_file, funpack

KINDS = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
ALGORITHMS = ["RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS"]


def values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    flat[: flat.size // 2] = np.arange(flat.size // 2) % 11
    flat[:3] = info.min, info.max, 0
    return x


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", KINDS)
def test_written_integers_read_back(tmp_path, dtype, algorithm):
    if algorithm == "RICE_1" and dtype.endswith("64"):
        pytest.skip("RICE_1 of 64-bit integers is refused")
    cases = [
        ((37, 53), (37, 53), None),  # row tiles, one chunk
        ((37, 53), (10, 20), (5, 8)),  # 2-D tiles, edge tiles, chunks realigned
        ((3, 41, 29), (2, 17, 29), (2, 8, 10)),  # 3-D tiles
    ]
    for i, (shape, chunks, tile) in enumerate(cases):
        v = values(dtype, shape, seed=i)
        path = tmp_path / f"{dtype}-{algorithm}-{i}.fits"
        dfits.to_fits(da.from_array(v, chunks=chunks), path, compression=algorithm,
                      tile_shape=tile)  # fmt: skip
        check_file(path, v, lossless=True)
        # cfitsio has no NOCOMPRESS decoder, nor one of 64-bit integer tiles (status 410)
        if algorithm != "NOCOMPRESS" and not dtype.endswith("64"):
            np.testing.assert_array_equal(funpack(path)[0], v)


@pytest.mark.parametrize("dtype", KINDS)
def test_stored_sum_equals_the_image_pass(dtype):
    """ZDATASUM summed by the kernel (each value at its byte offset in the image) equals the
    plain writer's encode-and-sum pass, for blocks at odd offsets."""
    shape = (9, 13, 7)
    image = values(dtype, shape)
    algorithm = "GZIP_1" if dtype.endswith("64") else "RICE_1"
    spec = parse_compression(shape, parse_storage(dtype, "t"), "t", compression=algorithm,
                             tile_shape=(2, 3, 7))  # fmt: skip
    for starts, block in (((0, 0, 0), shape), ((2, 3, 0), (4, 6, 7)), ((8, 12, 0), (1, 1, 7))):
        part = image[tuple(slice(s, s + b) for s, b in zip(starts, block, strict=True))]
        total = 0
        for b in int_batches(spec, part, starts, np.empty(64, np.uint8)):
            total = add(total, b.stored_sum)
        assert total == tilewriter._image_sum(spec, part, starts)
