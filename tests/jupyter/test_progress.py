"""dfits.jupyter.progress.compute picks dask's ProgressBar or distributed.progress."""

from __future__ import annotations

import sys

import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.jupyter.progress import compute, current_client
from tests.test_progress import fake_ipython_with_kernel


def test_local_scheduler_progress_bar(cube_path, capsys):
    cube = dfits.open(cube_path)[0].data
    mom0, spec = compute(da.nansum(cube, axis=0), da.nanmean(cube, axis=(1, 2)), progress=True)
    assert "Completed" in capsys.readouterr().out
    ref = dfits.open(cube_path)[0].section[:, :, :]
    np.testing.assert_allclose(mom0, np.nansum(ref, axis=0), rtol=1e-5, atol=1e-5)
    assert spec.shape == (ref.shape[0],)


def test_no_progress_is_quiet(capsys):
    assert compute(da.ones(4, chunks=2).sum(), progress=False) == (4.0,)
    assert capsys.readouterr().out == ""


def test_progress_by_default_only_where_watched(capsys, monkeypatch):
    x = da.ones(4, chunks=2).sum()
    assert compute(x) == (4.0,)  # a script logging to a file: no \r updates in the log
    assert capsys.readouterr().out == ""
    monkeypatch.setitem(sys.modules, "IPython", fake_ipython_with_kernel())
    assert compute(x) == (4.0,)
    assert "Completed" in capsys.readouterr().out


@pytest.mark.distributed
def test_distributed_progress(cube_path, capsys):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        x = dfits.open(cube_path)[0].data
        assert current_client(x) is client
        (total,) = compute(da.nansum(x), progress=True)
        assert "Completed" in capsys.readouterr().out
    assert current_client(x) is None
    assert np.isfinite(total)
