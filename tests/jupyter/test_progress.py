"""dfits.jupyter.progress.compute picks its WorkBar or distributed.progress; the bar advances
inside the tasks of a graph of few large ones."""

from __future__ import annotations

import re
import sys

import dask
import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.demo import make_cube
from dfits.jupyter import progress
from dfits.jupyter.progress import WorkBar, compute, current_client
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


def _percents(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"(\d+)% Completed", text)]


@pytest.mark.parametrize("case", ["spectral", "spatial"])
def test_bar_advances_inside_few_large_tasks(tmp_path, capsys, monkeypatch, case):
    """A smoothing then a moment 0 over a cube of four chunks (on dask's threads): between
    two task ends the bar takes several values (the kernels in flight report what they have
    read), never goes back, and ends at 100 %."""
    import xarray as xr

    path = make_cube(str(tmp_path / "cube.fits"), shape=(128, 256, 256))
    bars = []
    monkeypatch.setattr(progress, "INTERVAL", 0.001)
    monkeypatch.setattr(progress, "WorkBar", lambda: bars.append(WorkBar()) or bars[-1])
    # both smoothings plan chunks of half the chunk size (room for the output): 8 MiB here
    with dask.config.set({"array.chunk-size": "16MiB"}):
        f = xr.open_dataarray(path, engine="dfits").fits
        if case == "spectral":  # whole spectra
            smoothed = f.spectral_smooth(2.0)
        else:  # whole planes
            smoothed = f.spatial_smooth(1.0, raise_error_jybm=False)
    m0 = smoothed.fits.moment(0).data
    assert smoothed.data.npartitions == 4
    want = m0.compute()  # the kernels loaded: the bar below times the work alone
    capsys.readouterr()
    (got,) = compute(m0, progress=True, scheduler="threads")
    shown = _percents(capsys.readouterr().out)
    np.testing.assert_array_equal(got, want)
    assert shown == sorted(shown)
    assert shown[-1] == 100
    (bar,) = bars
    between = {}  # fractions drawn while a given number of tasks had finished
    for fraction, finished in bar.drawn[:-1]:
        between.setdefault(finished, set()).add(round(fraction, 3))
    assert max(len(values) for values in between.values()) >= 3, between
