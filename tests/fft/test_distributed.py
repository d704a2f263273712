"""The FFT graph on dask.distributed with worker processes: picklable tasks, same values."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from astropy.io import fits

import dfits
import dfits.fft as F
from tests.clusters import process_cluster
from tests.fft.checks import check

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def client():
    with process_cluster() as (_, c):
        yield c


def test_six_step_and_scratch_transposes_on_a_process_cluster(client, tmp_path):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((2, 4096)).astype(np.float32)
    path = tmp_path / "series.fits"
    fits.PrimaryHDU(values.astype(">f4")).writeto(path)
    x = dfits.open(path, chunks=(2, 512))[0].data
    # in memory (tasks rechunk, P2P where the scheduler picks it) and through the scratch store
    in_memory = F.fft(x, axis=1, block_size=8192)
    on_disk = F.fft(x, axis=1, block_size=8192, memory_limit=0, scratch=tmp_path / "scratch")
    want = np.fft.fft(values, axis=1)
    for got in dask.compute(in_memory, on_disk):
        check(got, want)
    assert list((tmp_path / "scratch").glob("transpose-*.tiles"))
