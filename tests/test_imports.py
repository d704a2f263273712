"""Import only what the call needs (issue 49): each check runs in a fresh interpreter.

``import dfits`` and the commands that read headers only (``dfits info``, ``dfits header``)
load none of the heavy libraries: dask and numba load when the first lazy array or kernel
needs them, xarray, pandas, pyarrow, matplotlib and astropy.wcs only on the paths that use
them, and ``distributed`` only when a client is asked for.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dfits

HEAVY = [
    "dask",
    "numba",
    "llvmlite",
    "xarray",
    "distributed",
    "pandas",
    "pyarrow",
    "matplotlib",
    "astropy",
    "astropy.wcs",
    "fsspec",
    "scipy",
]


def loaded_after(script: str, watch: list[str] = HEAVY) -> list[str]:
    """The modules of ``watch`` that ``script`` leaves in ``sys.modules`` of a fresh
    interpreter (the list comes back on the last line of its output)."""
    tail = f"""
    import json, sys
    sys.stdout = sys.__stdout__
    print(json.dumps([m for m in {watch!r} if m in sys.modules]))
    """
    body = textwrap.dedent(script) + textwrap.dedent(tail)
    env = {**os.environ, "PYTHONPATH": str(Path(dfits.__file__).parents[1])}
    run = subprocess.run(
        [sys.executable, "-c", body], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A primary image, a tile-compressed image and a binary table (written by astropy)."""
    from astropy.io import fits

    path = tmp_path_factory.mktemp("imports") / "mixed.fits"
    image = np.arange(64 * 64, dtype=np.int16).reshape(64, 64)
    tiles = fits.CompImageHDU(image, compression_type="RICE_1", name="TILES")
    table = fits.BinTableHDU.from_columns(
        [fits.Column(name="E", format="E", array=np.arange(8.0))], name="EVENTS"
    )
    fits.HDUList([fits.PrimaryHDU(image), tiles, table]).writeto(path)
    return path


def test_import_dfits_loads_none_of_the_heavy_libraries() -> None:
    assert loaded_after("import dfits") == []


def test_public_names_resolve_without_the_heavy_libraries() -> None:
    # dfits.open, Header and the errors are light; the writers and fft load dask on use
    script = """
    import dfits
    from dfits import open, FitsFile, HDU, Header, verify_checksum, DfitsError
    """
    assert loaded_after(script) == []


@pytest.mark.parametrize("package", ["dfits", "dfits.array", "dfits.io", "dfits.stored"])
def test_every_public_name_resolves(package: str) -> None:
    # the lazily re-exported names (PEP 562) resolve, and ``from package import *`` works
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    exec(f"from {package} import *", {})
    assert callable(dfits.fft.fft)


@pytest.mark.parametrize("command", ["info", "header"])
def test_header_commands_load_no_dask_or_numba(command: str, mixed_file: Path) -> None:
    script = f"""
    import sys, io
    sys.stdout = io.StringIO()
    from dfits.cli import main
    sys.argv = ["dfits", {command!r}, {str(mixed_file)!r}]
    try:
        main()
    except SystemExit as stop:
        assert not stop.code, stop.code
    """
    assert loaded_after(script) == []


def test_open_and_headers_load_no_dask_or_numba(mixed_file: Path) -> None:
    script = f"""
    import io, sys
    sys.stdout = io.StringIO()
    import dfits
    f = dfits.open({str(mixed_file)!r})
    for hdu in f:
        hdu.header, hdu.shape, hdu.dtype, hdu.name, hdu.kind
    f.info()
    """
    assert loaded_after(script) == []


def test_a_local_file_loads_neither_the_remote_stack_nor_the_writers(mixed_file: Path) -> None:
    script = f"""
    import io, sys
    sys.stdout = io.StringIO()
    from dfits.cli import main
    sys.argv = ["dfits", "info", {str(mixed_file)!r}]
    main()
    """
    watch = ["dfits.io.remote", "asyncio", "ssl", "dfits.io.writer", "dfits.write"]
    assert loaded_after(script, watch) == []


def test_building_graphs_loads_dask_but_no_kernels(mixed_file: Path) -> None:
    # a client that only builds and submits graphs never needs numba: its workers load it
    script = f"""
    import dfits
    f = dfits.open({str(mixed_file)!r})
    graphs = [f[0].data.sum(), f["TILES"].data.max(), f["EVENTS"].column("E").sum()]
    graphs.append(f["EVENTS"].aggregate("mean", ["E"]))
    """
    loaded = loaded_after(script)
    assert "dask" in loaded
    assert not {"numba", "distributed", "astropy.wcs", "matplotlib"} & set(loaded)


def test_a_section_loads_numba_but_not_dask(mixed_file: Path) -> None:
    script = f"""
    import dfits
    f = dfits.open({str(mixed_file)!r})
    assert int(f[0].section[2, 3]) == 2 * 64 + 3
    """
    # numba itself imports scipy when it is installed
    assert set(loaded_after(script)) <= {"numba", "llvmlite", "scipy"}


def test_a_compressed_stamp_loads_numba_but_not_dask(mixed_file: Path) -> None:
    script = f"""
    import numpy as np, dfits
    f = dfits.open({str(mixed_file)!r})
    want = np.arange(64 * 64, dtype=np.int16).reshape(64, 64)[10:30, 5:40]
    assert (f["TILES"].section[10:30, 5:40] == want).all()
    """
    # the tiles' Rice decoder is a kernel; numba itself imports scipy when it is installed
    assert set(loaded_after(script)) <= {"numba", "llvmlite", "scipy"}


#: what the eager route (dfits.array.eager) must never load: dask.array (and, through it,
#: xarray, pandas, pyarrow) and distributed; numba loads for the kernels, dask for its config
NOT_EAGER = ["dask.array", "distributed", "xarray", "pandas", "pyarrow", "matplotlib"]


def test_one_shot_eager_reductions_load_neither_dask_array_nor_distributed(mixed_file: Path):
    # issue 49's one-shot cases, small: a tile-compressed image's sum, columns' sums, stats
    script = f"""
    import io, sys
    import numpy as np
    import dfits
    from dfits.array.eager import reduce_hdu
    f = dfits.open({str(mixed_file)!r})
    image = np.arange(64 * 64, dtype=np.int64)
    assert int(reduce_hdu(f["TILES"], "sum")) == int(image.sum())
    assert reduce_hdu(f["EVENTS"], ["sum", "max"], column="E") == [28.0, 7.0]
    assert reduce_hdu(f[0], "nanargmax", axis=0).tolist() == [63] * 64
    sys.stdout = io.StringIO()
    from dfits.cli import main
    assert main(["stats", {str(mixed_file)!r}, "--quiet"]) == 0
    text = sys.stdout.getvalue()
    assert "sum    8386560" in text, text
    """
    assert loaded_after(script, [*NOT_EAGER, "numba"]) == ["numba"]


def test_over_the_eager_limit_the_dask_route_runs(mixed_file: Path):
    script = f"""
    import dask, dfits
    from dfits.array.eager import reduce_hdu
    with dask.config.set({{"dfits.eager-bytes": 0}}):
        assert int(reduce_hdu(dfits.open({str(mixed_file)!r})[0], "sum")) == 8386560
    """
    assert "dask.array" in loaded_after(script, NOT_EAGER)
