"""dfits' entry points choose the scheduler without importing ``distributed`` (issue 49), and
still run on a client when one is in use."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.array import reduce
from dfits.array.scheduler import compute, scheduler
from tests.test_imports import loaded_after


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory: pytest.TempPathFactory):
    from astropy.io import fits

    path = tmp_path_factory.mktemp("scheduler") / "mixed.fits"
    image = np.arange(64 * 64, dtype=np.int16).reshape(64, 64)
    table = fits.BinTableHDU.from_columns(
        [fits.Column(name="E", format="E", array=np.arange(8.0))], name="EVENTS"
    )
    fits.HDUList([fits.PrimaryHDU(image), table]).writeto(path)
    return path


def test_reductions_through_dfits_leave_distributed_unloaded(mixed_file, tmp_path) -> None:
    path, out = str(mixed_file), str(tmp_path / "out.fits")
    script = f"""
    import io, sys
    import dask
    import dfits
    from dfits.array import reduce
    from dfits.array.scheduler import compute
    from dfits.cli import main
    from dfits.jupyter import compute as compute_with_progress

    f = dfits.open({path!r})
    x = f[0].data
    assert compute(reduce(x, "sum"))[0] == sum(range(64 * 64))
    assert compute_with_progress(x.max(), progress=False)[0] == 64 * 64 - 1
    with dask.config.set(scheduler="threads"):
        assert compute(x.sum())[0] == sum(range(64 * 64))
    assert compute(x.sum(), scheduler="sync")[0] == sum(range(64 * 64))
    assert float(compute(f["EVENTS"].aggregate("sum", ["E"]))[0]["E"]) == 28.0
    assert int(f[0].section[1, 2]) == 66
    assert list(f["EVENTS"].data[2:4]["E"]) == [2.0, 3.0]
    dfits.to_fits(x, {out!r})
    sys.stdout = io.StringIO()
    sys.argv = ["dfits", "stats", {path!r}]
    try:
        main()
    except SystemExit as stop:
        assert not stop.code, stop.code
    assert "sum    8386560" in sys.stdout.getvalue(), sys.stdout.getvalue()
    """
    loaded = loaded_after(script)
    assert "dask" in loaded
    assert "distributed" not in loaded


def test_local_choices_follow_dask() -> None:
    from dask.local import get_sync
    from dask.threaded import get

    x = da.ones(4, chunks=2)
    assert scheduler(x) is get
    assert scheduler(x, requested="single-threaded") is get_sync
    with dask.config.set(scheduler="sync"):
        assert scheduler(x) is get_sync
        assert scheduler(x, requested="threads") is get
    with dask.config.set(scheduler=get_sync):
        assert scheduler() is get_sync
    assert compute(x.sum(), scheduler="threads") == (4.0,)
    assert compute([dask.delayed(1), x.sum()]) == ([1, 4.0],)


def test_an_unknown_name_is_dasks_error() -> None:
    with pytest.raises(ValueError, match="Expected one of"):
        scheduler(da.ones(2), requested="no-such-scheduler")


@pytest.mark.distributed
def test_a_client_in_use_runs_the_work(mixed_file) -> None:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        x = dfits.open(mixed_file)[0].data
        assert getattr(scheduler(x), "__self__", None) is client
        with distributed.get_task_stream(client) as stream:
            (total,) = compute(reduce(x, "sum"))
        assert total == sum(range(64 * 64))
        assert stream.data, "no task ran on the client"
        with dask.config.set(scheduler="threads"):  # asked for by name: dask's choice
            assert getattr(scheduler(x), "__self__", None) is None
