"""Run one full-file reduction in a fresh process and print its peak RSS (for test_memory)."""

from __future__ import annotations

import json
import sys

import dask
import dask.array as da
import numpy as np

from dfits.array.chunks import normalize
from dfits.array.image import ImageReader
from dfits.array.reader import dask_array
from dfits.format.dtypes import parse_decode_spec
from dfits.io import open_source


def _rss(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    path, offset, n0, n1, bitpix, chunk_rows, op = sys.argv[1:8]
    spec = parse_decode_spec(int(bitpix))[0]
    shape: tuple[int, ...] = (int(n0), int(n1))
    chunks: tuple[int, ...] = (int(chunk_rows), shape[1])
    if op.startswith("plane"):
        # the image as a cube of 64 planes, in a moment-map plan's chunks: every plane's
        # first rows, one strided run per plane
        shape = (64, shape[0] // 64, shape[1])
        chunks = (64, int(chunk_rows), shape[2])
    block = ImageReader(open_source(path), int(offset), shape, spec)
    x = dask_array(block, normalize(chunks, shape, spec.physical, spec.itemsize), "rss")
    funcs = {
        "sum": lambda a: a.sum(),
        "nanmean": da.nanmean,
        "std": lambda a: a.std(),
        "nanmax": da.nanmax,
        "mean0": lambda a: a.mean(axis=0),
        "std0": lambda a: a.std(axis=0),
        "planes_mean0": lambda a: a.mean(axis=0),
    }
    with dask.config.set(scheduler="threads", num_workers=2):
        funcs[op](x[:8]).compute()  # compile first: JIT memory is not what we measure
        base = _rss("VmRSS:")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak (VmHWM) to the current RSS
        value = funcs[op](x).compute()
    print(json.dumps({"base": base, "peak": _rss("VmHWM:"), "value": float(np.mean(value))}))


if __name__ == "__main__":
    main()
