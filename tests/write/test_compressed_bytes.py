"""The bytes of compressed writes stay what they were: a fixed input per case, its file's
SHA-256 recorded before the write path was fused into chunk kernels (issue 46). A change that
alters bytes on purpose must still read back equal in funpack and astropy
(tests/write/test_compressed.py) and update these digests, saying why in its commit."""

from __future__ import annotations

import hashlib

import dask.array as da
import numpy as np
import pytest

import dfits
from tests.write.zchecks import values_of


def _image(kind: str) -> np.ndarray:
    rng = np.random.default_rng(46)
    if kind == "f4-edge":
        return values_of("float32")
    if kind == "f8-edge":
        return values_of("float64")
    if kind == "f4-uniform":
        return rng.random((96, 130)).astype("f4")
    if kind == "f4-nan-rows":
        x = rng.normal(0, 1, (40, 70)).astype("f4")
        x[2] = np.nan  # an all-NaN tile
        x[4, :68] = np.nan  # a tile of two values
        x[6, ::2] = np.nan
        x[9, :] = 0.0
        return x
    if kind == "f4-wide":
        return rng.normal(50, 3, (256, 3000)).astype("f4")
    if kind == "i2-ramp":
        x = (np.arange(64 * 90).reshape(64, 90) % 977 - 400).astype("i2")
        x[5] = 0  # a zero block: Rice's low-entropy code
        x[7] = rng.integers(-32768, 32767, 90)  # high entropy
        return x
    if kind == "u1":
        return rng.integers(0, 256, (33, 47)).astype("u1")
    if kind == "i1":
        return rng.integers(-128, 128, (33, 47)).astype("i1")
    if kind == "u2":
        return rng.integers(0, 65536, (33, 47)).astype("u2")
    if kind == "i4":
        x = rng.integers(-(2**31), 2**31 - 1, (33, 47), dtype=np.int64).astype("i4")
        x[3:6] = rng.integers(-50, 50, (3, 47))
        return x
    raise AssertionError(kind)


CASES = {
    # name: (image, chunks, options)
    "rice-f4-edge": ("f4-edge", (10, 20), {"compression": "RICE_1"}),
    "rice-f4-d1": ("f4-edge", (37, 53), {"compression": "RICE_1",
                                        "quantize_method": "SUBTRACTIVE_DITHER_1"}),
    "rice-f4-nodither": ("f4-edge", (37, 53), {"compression": "RICE_1",
                                              "quantize_method": "NO_DITHER"}),
    "rice-f8-edge": ("f8-edge", (37, 53), {"compression": "RICE_1", "quantize_level": 4}),
    "rice-f4-uniform": ("f4-uniform", (40, 130), {"compression": "RICE_1"}),
    "rice-f4-tile2d": ("f4-uniform", (96, 130), {"compression": "RICE_1",
                                                "tile_shape": (16, 32)}),
    "rice-f4-block16": ("f4-uniform", (96, 130), {"compression": "RICE_1",
                                                 "rice_blocksize": 16}),
    "rice-f4-scale": ("f4-uniform", (96, 130), {"compression": "RICE_1",
                                               "quantize_level": -0.01}),
    "rice-f4-nan": ("f4-nan-rows", (40, 70), {"compression": "RICE_1"}),
    "rice-f4-wide": ("f4-wide", (64, 3000), {"compression": "RICE_1"}),
    "gzip1-f4-wide": ("f4-wide", (100, 3000), {"compression": "GZIP_1"}),
    "gzip1-f4-edge": ("f4-edge", (10, 20), {"compression": "GZIP_1"}),
    "gzip1-f4-tile2d": ("f4-uniform", (96, 130), {"compression": "GZIP_1",
                                                 "tile_shape": (8, 130)}),
    "gzip2-f4-nan": ("f4-nan-rows", (40, 70), {"compression": "GZIP_2"}),
    "gzip1-f4-lossless": ("f4-uniform", (96, 130), {"compression": "GZIP_1",
                                                   "quantize_level": 0}),
    "nocomp-f4": ("f4-edge", (37, 53), {"compression": "NOCOMPRESS"}),
    "hcomp-f4": ("f4-uniform", (96, 130), {"compression": "HCOMPRESS_1"}),
    "rice-i2": ("i2-ramp", (64, 90), {"compression": "RICE_1"}),
    "rice-i2-block16": ("i2-ramp", (64, 90), {"compression": "RICE_1", "rice_blocksize": 16}),
    "rice-u1": ("u1", (33, 47), {"compression": "RICE_1"}),
    "rice-i1": ("i1", (33, 47), {"compression": "RICE_1"}),
    "rice-u2": ("u2", (33, 47), {"compression": "RICE_1"}),
    "rice-i4": ("i4", (33, 47), {"compression": "RICE_1"}),
    "gzip1-i2": ("i2-ramp", (64, 90), {"compression": "GZIP_1"}),
    "plio-i2": ("u1", (33, 47), {"compression": "PLIO_1"}),
}  # fmt: skip

DIGESTS = {
    "gzip1-f4-edge": "64be5e9d23a94d2de6637a79042abf8435fe71dee1911c3d96f1981d863bcd6a",
    "gzip1-f4-lossless": "029de76bb5e5d813c8a3574d212779375c548ecf1d3030da73449e95585db2e1",
    "gzip1-f4-tile2d": "f6f0c2e7a365dcfd0b13738b7098c87e4ad5910579c02332af7ae47a03d7e7cc",
    "gzip1-f4-wide": "b7311112e836815003a611e40fac3a9359a8c1a14e3cd3f250fdf324597dc143",
    "gzip1-i2": "aed089ae4b77bdb7bf6fc810451593b85d1307186890bea3f6d0b0f6e4ddd720",
    "gzip2-f4-nan": "4d4ffc9ab9661c5828cd61170665abf6b53a4e6714a9a7e03dc05bbb0e5e9a25",
    "hcomp-f4": "197b03e628e9439bced62c33eb6b2d3015583276f4fc4b4a53c7d20b7b034a30",
    "nocomp-f4": "0fc90fd7be20e3b59a619af67a0edf788910791b5e00a5fa54ce54cf478d43b7",
    "plio-i2": "6b9cdaaf9f06bc1529db5ebb7ad213cb4ba38b2223a82338738d53daab8f55a7",
    "rice-f4-block16": "3c404f8ddc28445d3ebc2217d84b1c8caf39ec48b2e9c926af160068487b6e7c",
    "rice-f4-d1": "0802e73cc4c059b35381b45fbe63a9eb1416ee1cb7592066e2084a448014c217",
    "rice-f4-edge": "cc26378d2d5d8df008d278f0201e01839c58ab1da7bda76c9e872d8a8b6cc9f3",
    "rice-f4-nan": "31682f282c9ce7c0d14e673afa7d3a49e488cd81f0c946ebdab24609a5117335",
    "rice-f4-nodither": "f821c0c8e4e2bd7b0847199121205f6c8676a8ff90fd08bc8e68ed871276af09",
    "rice-f4-scale": "226bbd803736b36859163e672df9722f21f3b150905f1378eae77387c1dba03f",
    "rice-f4-tile2d": "99317a5583a29c1fe655b6ad4fc7108dcac5937bbd00b0c8628fb970c5e4b8d2",
    "rice-f4-uniform": "831c0afa85ca3f28b9ff85bc26446476eade12a15913d87752374db5278c00a8",
    "rice-f4-wide": "20ece8a2068f3639ddcce6f33e71d8935f7b7f3994fbfe9ad23d269de59c6755",
    "rice-f8-edge": "f9e018f1b245c3f1293574791b242dd42e3177d81511b8210a22724af721f10b",
    "rice-i1": "bc377a32184ee7c73147ba2f4df7753ab414341642f8438695eafcbed90be887",
    "rice-i2": "57c25658300f72becb0333307958ac92ee69af39d9d1c2a1dc97cd9bb8516d43",
    "rice-i2-block16": "a74252a130d2efeb5c8a2f4dfdc80086a175037747b6182e353e703dd9536481",
    "rice-i4": "e9913653599e13ca0698b462295e1d4ffa9e5bfc9d152d6f8e36466dd71a1563",
    "rice-u1": "44bbbe91b01cbf587c2fc9d1f7160a0b29f61521b1106efc469df5314bf4416b",
    "rice-u2": "a9ef8b1566aeb9cc390b97ed1b68bec5422df7ed4ece48a0bc58e35a85d458cd",
}


def _digest(tmp_path, name: str) -> str:
    kind, chunks, options = CASES[name]
    path = tmp_path / f"{name}.fits"
    x = da.from_array(_image(kind), chunks=chunks)
    dfits.to_fits(x, path, dither_seed=17, **options)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_written_bytes_are_unchanged(tmp_path, name):
    assert _digest(tmp_path, name) == DIGESTS[name]


def _tiles_of(path) -> list:
    from astropy.io import fits

    with fits.open(path, disable_image_compression=True) as hl:
        t = hl[1].data
        return [(bytes(r["COMPRESSED_DATA"]), float(r["ZSCALE"]), float(r["ZZERO"])) for r in t]


@pytest.mark.parametrize("tile", [None, (8, 16)])
def test_every_chunking_writes_the_same_tiles(tmp_path, tile):
    """Parts cut as views of chunks, gathered from several chunks, or a numpy array's slabs:
    each tile's bytes and scaling are the same (the heap's order may differ)."""
    x = _image("f4-uniform")
    opts = {"compression": "RICE_1", "tile_shape": tile, "dither_seed": 3}
    dfits.to_fits(x, tmp_path / "n.fits", **opts)
    want = _tiles_of(tmp_path / "n.fits")
    for chunks in [(96, 130), (16, 130), (7, 130), (30, 50), (11, 17)]:
        path = tmp_path / f"{chunks}.fits"
        dfits.to_fits(da.from_array(x, chunks=chunks), path, **opts)
        assert _tiles_of(path) == want, chunks
        back = dfits.open(path)[1].data.compute()
        np.testing.assert_array_equal(back, dfits.open(tmp_path / "n.fits")[1].data.compute())
