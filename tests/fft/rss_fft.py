"""Transform a FITS series through the scratch store in a fresh process; print peak RSS."""

from __future__ import annotations

import json
import sys

import dask

import dfits
import dfits.fft


def _rss(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    path, scratch, block = sys.argv[1:4]
    # input chunks of one block: the first pass holds whole input chunks, whatever their size
    pairs = dfits.open(path, chunks=(int(block) // 8, 2))[0].data
    x = pairs[:, 0] + 1j * pairs[:, 1]
    with dask.config.set(scheduler="threads", num_workers=2):
        small = x[: 1 << 12].rechunk(1 << 9)
        dfits.fft.fft(small, block_size=1 << 12, memory_limit=0, scratch=scratch).compute()
        base = _rss("VmRSS:")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak (VmHWM) to the current RSS
        y = dfits.fft.fft(x, block_size=int(block), memory_limit=0, scratch=scratch)
        y.to_zarr(f"{scratch}/out.zarr")
    print(json.dumps({"base": base, "peak": _rss("VmHWM:")}))


if __name__ == "__main__":
    main()
