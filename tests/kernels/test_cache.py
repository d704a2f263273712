"""The on-disk kernel cache (``dfits.kernels._cache``), exercised in fresh processes.

Each test points ``NUMBA_CACHE_DIR`` at its own directory and only lets Numba use that
location, so nothing is read from or written to a shared cache. The tests that start from a
filled cache get a copy of one that a fresh process filled once per module (:func:`filled`):
filling it compiles for seconds, and the copy is what another process would have left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: Runs a few kernels of one encoding, with two signatures of one variant (float64 and
#: float32 sums) in the order given, and prints the results and the warnings as JSON. The sums
#: run over the last axis: a row kernel compiles in a third of a column kernel's time, and
#: these tests compile it into empty or spoilt caches a dozen times.
SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
import pytest
start = float(sys.argv[1]); order = sys.argv[2]
while time.time() < start:  # every process starts compiling at the same moment
    time.sleep(0.001)
from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
spec = parse_decode_spec(16, 0.5, 3.0, -5)[0]
raw = (np.arange(4 * 5 * 6, dtype=">i2").reshape(4, 5, 6) * 7 - 300).astype(">i2")
raw[1, 2, 3] = -5
u = raw.view("u2")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = {"decode": kernels.decode(u, spec).tolist()}
    dtypes = [np.float64, np.float32] if order == "a" else [np.float32, np.float64]
    for dt in dtypes:
        s, n = kernels.sum_count(u, spec, 2, skipna=True, dtype=dt)
        out[f"sum_{np.dtype(dt).name}"] = s.tolist()
    out["n"] = n.tolist()
out["warnings"] = [str(w.message) for w in caught]
print(json.dumps(out))
"""


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(cache)
    # only the directory named: never __pycache__ in the source tree, nor ~/.cache
    env["NUMBA_CACHE_LOCATOR_CLASSES"] = "UserProvidedCacheLocator"
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


def _start(cache: Path, order: str = "a", delay: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(time.time() + delay), order],
        env=_env(cache),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _run(cache: Path) -> dict:
    return _result(_start(cache))


def _check(res: dict) -> None:
    """The results against numpy, decoded as astropy decodes (float32 arithmetic)."""
    raw = (np.arange(4 * 5 * 6, dtype=">i2").reshape(4, 5, 6) * 7 - 300).astype(">i2")
    raw[1, 2, 3] = -5
    want = raw.astype(np.float32) * np.float32(0.5) + np.float32(3.0)
    want[raw == -5] = np.nan
    np.testing.assert_array_equal(np.array(res["decode"], np.float32), want)
    exact = np.nansum(raw.astype(np.float64) * 0.5 + 3.0 + np.where(raw == -5, np.nan, 0), 2)
    np.testing.assert_array_equal(res["sum_float64"], exact)
    np.testing.assert_array_equal(res["sum_float32"], exact.astype(np.float32))
    np.testing.assert_array_equal(res["n"], (raw != -5).sum(2))


def _files(cache: Path) -> dict[str, float]:
    return {str(p.relative_to(cache)): p.stat().st_mtime_ns for p in cache.rglob("*.nb*")}


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> tuple[Path, dict]:
    """A cache that one fresh process filled from empty, and what that process printed."""
    cache = tmp_path_factory.mktemp("filled")
    first = _run(cache)
    _check(first)
    assert not first["warnings"]
    assert any(name.endswith(".nbi") for name in _files(cache))
    return cache, first


@pytest.fixture
def cache(filled, tmp_path) -> Path:
    """A private copy of :func:`filled`'s cache (file times kept), for one test to spoil."""
    return Path(shutil.copytree(filled[0], tmp_path / "cache"))


def test_a_second_process_loads_what_the_first_compiled(filled, cache):
    made = _files(cache)
    assert made == _files(filled[0])
    second = _run(cache)
    assert second == filled[1]
    assert _files(cache) == made  # loaded: nothing compiled, nothing written again


def test_concurrent_processes_fill_one_cache(tmp_path):
    """Four processes compile the same kernels into an empty cache at the same moment, two of
    them adding the signatures of one variant in the other order; a fifth loads them all."""
    procs = [_start(tmp_path, order, delay=3.0) for order in "abab"]
    results = [_result(p) for p in procs]
    for res in results:
        _check(res)
        assert not res["warnings"]
    made = _files(tmp_path)
    last = _run(tmp_path)
    _check(last)
    assert _files(tmp_path) == made


def test_unwritable_cache_location_compiles_in_memory_silently(tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the cache directory would be")
    res = _run(blocked)
    _check(res)
    assert not res["warnings"]


def test_truncated_data_file_recompiles_and_warns_once(cache):
    data = sorted(cache.rglob("*.nbc"))
    assert data
    for path in data:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    res = _run(cache)
    _check(res)
    assert len(res["warnings"]) == 1
    assert "could not be loaded" in res["warnings"][0]
    again = _run(cache)  # the entries were replaced by good ones
    _check(again)
    assert not again["warnings"]


def test_deleted_index_recompiles_silently(cache):
    for path in cache.rglob("*.nbi"):
        path.unlink()
    res = _run(cache)
    _check(res)
    assert not res["warnings"]


def test_garbage_index_recompiles_and_warns_once(cache):
    for path in cache.rglob("*.nbi"):
        path.write_bytes(b"\x80\x04not a pickle")
    res = _run(cache)
    _check(res)
    assert len(res["warnings"]) == 1


def test_import_compiles_nothing(tmp_path):
    code = (
        "import sys, time; t = time.perf_counter(); import dfits; "
        "print(time.perf_counter() - t, 'numba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    _, numba_loaded = out.stdout.split()
    assert numba_loaded == "False"
    assert not _files(tmp_path)


def test_kernel_names_cover_the_variant():
    from dfits.kernels._loaders import Kind
    from dfits.kernels.sums import _sum_rows

    a = _sum_rows(Kind(16, "scaled", True, True), True)
    b = _sum_rows(Kind(16, "scaled", True, False), True)
    c = _sum_rows(Kind(16, "scaled", True, True), False)
    assert len({repr(a), repr(b), repr(c)}) == 3


def test_threads_calling_a_new_kernel_at_once_all_get_its_result(tmp_path, monkeypatch):
    """dask calls one kernel from several threads at once: the ones that wait while another
    compiles it call the new dispatcher, instead of raising 'not compiled yet'."""
    import threading

    import numba

    from dfits.kernels import _cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))

    @numba.njit(inline="always")
    def body(a, b, c, d, e, f):
        return a.sum() + b + c + d + e + f

    kernel = _cache.entry(body, "threads", str(tmp_path))
    results, errors = [], []
    start = threading.Barrier(8)

    def call():
        start.wait()
        try:
            results.append(kernel(np.ones(10), 1, 2, 3, 4, 5))
        except Exception as err:  # what the race gave: TypeError('not compiled yet')
            errors.append(err)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == [25.0] * 8


#: One call of every kernel outside the reduction modules (checksums, the scaled-integer
#: writer, tile codecs and dequantisation, ASCII table parsing), results printed as JSON.
OTHERS = r"""
import json, sys
import numpy as np
import pytest
from dfits.kernels.checksum import encode_rows, word_sum
from dfits.kernels.plio import plio_decode
from dfits.kernels.asciiparse import parse_ints
out = {"word_sum": word_sum(np.arange(4000, dtype=np.uint8))}
enc = np.empty((2, 3), np.uint16)
out["encode"] = encode_rows(np.arange(6, dtype=np.int16).reshape(2, 3), enc, 0).tolist()
out["plio"] = plio_decode(np.array([0, 0, 6, 0x1005, 0, 0x4003], np.int16), 5).tolist()
status = np.empty(2, np.uint8); ints = np.empty(2, np.int64)
parse_ints(np.frombuffer(b"  12 -7 ", np.uint8), 0, 4, 2, 4, np.zeros(0, np.uint8), False,
           ints, status)
out["ints"] = ints.tolist()
if sys.argv[1] == "all":
    from dfits.kernels.dequantize import dequantize
    from dfits.kernels.quantize import quantize_rows
    from dfits.kernels.rice import rice_decode
    from dfits.kernels.tilegroup import place_group, rice_group
    q = np.empty((1, 4), np.uint16)
    out["quantize"] = quantize_rows(np.ones((1, 4)), q, 0.5, 0.0, -32768, -32767, 32767).tolist()
    f = np.empty((2, 2), np.float32)
    dequantize(np.arange(4, dtype=np.int32), f, 0.5, 1.0, 1, 0, 1, None)
    out["dequantize"] = f.tolist()
    stream = np.array([0, 5, 0x00], np.uint8)  # first pixel 5, then a block of zero diffs
    out["rice"] = rice_decode(stream, 4, 32, 2).tolist()
    packed, bad, _ = rice_group(stream, np.array([0]), np.array([3]), np.array([4]), 32, 2)
    tile = np.empty((2, 2), np.int16)
    place_group(packed, tile, np.array([[2, 2]]), np.array([[0, 0]]))
    out["group"] = tile.tolist()
print(json.dumps(out))
"""


def _others(cache: Path, which: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", OTHERS, which], env=_env(cache), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check_others(res: dict) -> None:
    from dfits.kernels.checksum import word_sum_oracle

    assert res["word_sum"] == word_sum_oracle(np.arange(4000, dtype=np.uint8))
    assert res["plio"] == [5, 5, 5, 0, 0]
    assert res["ints"] == [12, -7]
    if "rice" in res:
        assert res["rice"] == [5, 5, 5, 5]
        assert res["group"] == [[5, 5], [5, 5]]


@pytest.mark.parametrize(
    "which",
    ["some", pytest.param("all", marks=pytest.mark.slow)],
)
def test_other_kernels_load_from_the_cache(tmp_path, which):
    """Checksums, codecs, dequantisation and table parsing are cached kernels too: a second
    process loads them (no file written) and gets the same results."""
    first = _others(tmp_path, which)
    _check_others(first)
    made = _files(tmp_path)
    assert any("plio" in name for name in made)
    assert any("asciiparse" in name for name in made)
    assert _others(tmp_path, which) == first
    assert _files(tmp_path) == made


#: What a read-only directory does to a process that is not root (this one may be): creating
#: a file in it fails. Numba tests exactly that before it uses a cache location.
READ_ONLY = r"""
import errno, os, sys, tempfile
_where, _real = os.path.realpath(sys.argv.pop()), tempfile.TemporaryFile
def _refuse(*args, dir=None, **kwargs):
    if dir is not None and os.path.realpath(dir).startswith(_where):
        raise PermissionError(errno.EACCES, "Permission denied", dir)
    return _real(*args, dir=dir, **kwargs)
tempfile.TemporaryFile = _refuse
"""


def test_read_only_cache_compiles_in_memory_silently(cache):
    """A filled cache that this process may not write (an installed image run by another
    user): Numba will not use it, so kernels compile in memory, with correct results, no
    warning and nothing written."""
    made = _files(cache)
    modes = {p: p.stat().st_mode for p in [cache, *cache.rglob("*")]}
    for path in modes:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        code = READ_ONLY + SCRIPT
        argv = [sys.executable, "-c", code, str(time.time()), "a", str(cache)]
        proc = subprocess.Popen(
            argv, env=_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        res = _result(proc)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    _check(res)
    assert not res["warnings"]
    assert _files(cache) == made
