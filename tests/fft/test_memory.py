"""An FFT through the scratch store runs in memory ∝ block × threads, not array size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dfits.io.writer import ImageWriter

MiB = 1 << 20


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_out_of_core_fft_peak_rss_is_bounded(tmp_path):
    n = 1 << 25  # 256 MiB of complex64, stored as (n, 2) float32
    path = tmp_path / "series.fits"
    rng = np.random.default_rng(0)
    with ImageWriter(path, (n, 2), ">f4") as out:
        for _ in range(16):
            out.write(rng.standard_normal((n // 16, 2), dtype=np.float32))
    block = 4 * MiB
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("rss_fft.py")), str(path), str(tmp_path),
         str(block)],
        capture_output=True, text=True, check=True, env=env, timeout=600,
    )  # fmt: skip
    rss = json.loads(result.stdout.strip().splitlines()[-1])
    grown = rss["peak"] - rss["base"]
    # a few blocks per thread plus zarr's buffers: far below the 256 MiB array (or its
    # 512 MiB result in numpy's complex128 promotion)
    assert grown < 40 * block, f"peak grew by {grown / MiB:.0f} MiB"
