"""Graphs stay small: a 10 TB virtual image is a handful of layers, not 80,000 tasks of data."""

from __future__ import annotations

import pickle

import numpy as np

from dfits.array.chunks import normalize
from dfits.array.image import ImageReader
from dfits.array.reader import dask_array
from dfits.format.dtypes import parse_decode_spec
from dfits.io.local import FileIdentity, LocalSource


def test_ten_terabyte_virtual_image_graph_is_small():
    spec = parse_decode_spec(-32)[0]
    shape = (10000, 16384, 16384)  # 10.7 TB of float32; no such file needs to exist
    size = 2880 + int(np.prod(shape, dtype=object)) * 4
    src = LocalSource("/virtual/ten_tb.fits", FileIdentity(size, 1))
    chunks = normalize(None, shape, spec.physical, spec.itemsize)
    x = dask_array(ImageReader(src, 2880, shape, spec), chunks, "ten-tb")
    assert x.npartitions == 80000
    assert x.chunksize == (1, 2048, 16384)  # a plane is 1 GiB: split rows, 128 MiB each
    # the collection pickles as one array-like and a blockwise layer, never per-chunk data
    assert len(x.dask.layers) <= 2
    assert len(pickle.dumps(x)) < 100_000
    red = x.mean(axis=0)
    assert red.shape == shape[1:]
