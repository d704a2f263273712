from __future__ import annotations

import gc
import os
import threading
import time
import warnings

import numpy as np
import pytest

import dfits
from dfits.io import local
from dfits.io.descriptors import Descriptors
from tests.format import fitsgen as fg
from tests.format.fitsgen import image_file
from tests.fuzz.check import held


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _deleted_fds() -> list[str]:
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.endswith(" (deleted)"):
            out.append(target)
    return out


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


@pytest.fixture
def files(tmp_path):
    paths = []
    for i in range(6):
        path = tmp_path / f"f{i}.fits"
        path.write_bytes(image_file((4, 5), bitpix=16))
        paths.append(str(path))
    return paths


def test_cache_is_bounded_and_least_recently_used_goes_first(files):
    cache = Descriptors(limit=3)
    before = _open_fds()
    for path in files:
        with cache.use((path, 0, 0)) as fd:
            assert os.pread(fd, 6, 0) == b"SIMPLE"
    assert len(cache) == 3
    assert _open_fds() == before + 3
    with cache.use((files[3], 0, 0)):  # touched: now the most recent
        pass
    with cache.use((files[0], 0, 0)):
        pass
    kept = {full[1][0] for full in cache._open}
    assert kept == {files[3], files[5], files[0]}
    cache.clear()
    assert _open_fds() == before


def test_a_descriptor_in_use_is_closed_only_by_its_last_user(files):
    cache = Descriptors(limit=1)
    before = _open_fds()
    with cache.use((files[0], 0, 0)) as fd:
        cache.close((files[0], 0, 0))
        with cache.use((files[1], 0, 0)):
            pass
        # still ours: dropped from the cache but open until this block ends
        assert os.pread(fd, 6, 0) == b"SIMPLE"
        assert len(cache) == 1
    cache.clear()
    assert _open_fds() == before


def test_open_section_close_cycles_hold_no_descriptors(files):
    local.descriptors.clear()
    before = _open_fds()
    for _ in range(30):
        for path in files:
            with dfits.open(path) as f:
                f[0].section[1:3, 2:4]
                f[0].data.sum().compute(scheduler="sync")
    assert _open_fds() <= before + 1


def test_many_files_open_at_once_stay_within_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(local.descriptors, "limit", 8)
    local.descriptors.clear()
    before = _open_fds()
    opened = []
    for i in range(40):
        path = tmp_path / f"g{i}.fits"
        path.write_bytes(image_file((3, 3), bitpix=-32, values=np.full((3, 3), i)))
        f = dfits.open(path)
        assert f[0].data.sum().compute(scheduler="sync") == 9 * i
        opened.append(f)
    assert _open_fds() <= before + 8
    local.descriptors.clear()


def test_deleted_files_are_released_by_close(files):
    f = dfits.open(files[2])
    f[0].section[0]
    os.unlink(files[2])
    assert any(files[2] in target for target in _deleted_fds())
    f.close()
    assert not any(files[2] in target for target in _deleted_fds())


def test_a_closed_file_reopens_on_use_and_notices_a_change(files):
    f = dfits.open(files[0])
    x = f[0].data
    f.close()
    np.testing.assert_array_equal(x.compute(), np.arange(20).reshape(4, 5))
    f.close()
    with open(files[0], "ab") as out:
        out.write(b"\0" * 2880)
    with pytest.raises(dfits.FileChangedError, match="changed since it was opened"):
        x.compute()


def test_threads_share_the_cache_safely(files):
    cache = Descriptors(limit=2)
    errors = []

    def reader(k: int) -> None:
        for i in range(300):
            path = files[(i + k) % len(files)]
            with cache.use((path, 0, 0)) as fd:
                if os.pread(fd, 6, 0) != b"SIMPLE":
                    errors.append(path)
            if i % 7 == 0:
                cache.close((path, 0, 0))

    before = _open_fds()
    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    cache.clear()
    assert _open_fds() == before


# -- every error path releases what it took (issue 51, item 4) ------------------------------


def _cached(path: str) -> bool:
    return any(full[1][0] == path for full in list(local.descriptors._open))


def _tiles(tmp_path) -> bytes:
    """A GZIP image of 256 one-row tiles whose middle tile's stream is broken: a threaded
    ``compute`` raises there while other tasks still run, and read, after ``close``."""
    from astropy.io import fits

    data = np.random.default_rng(5).integers(0, 1000, (256, 512)).astype(np.int32)
    hdu = fits.CompImageHDU(data, compression_type="GZIP_1", tile_shape=(1, 512))
    path = tmp_path / "tiles-seed.fits"
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    with dfits.open(path) as f:
        reader = f[1]._block(raw=False)
        _, offset = reader.descriptors.spans["COMPRESSED_DATA"][128]
        at = reader.heap_offset + int(offset)
    blob = bytearray(path.read_bytes())
    blob[at : at + 16] = b"\xff" * 16
    return bytes(blob)


def _table(tform: str, rows: bytes, nrows: int, width: int, pcount: int = 0) -> bytes:
    from tests.tablefiles import card, pad

    primary = [card("SIMPLE", True), card("BITPIX", 8), card("NAXIS", 0), b"END".ljust(80)]
    head = [
        card("XTENSION", "BINTABLE"), card("BITPIX", 8), card("NAXIS", 2),
        card("NAXIS1", width), card("NAXIS2", nrows), card("PCOUNT", pcount),
        card("GCOUNT", 1), card("TFIELDS", 1), card("TTYPE1", "A"), card("TFORM1", tform),
        b"END".ljust(80),
    ]  # fmt: skip
    return pad(b"".join(primary), b" ") + pad(b"".join(head), b" ") + pad(rows)


_IMAGE = image_file((64, 32), bitpix=16)
#: name -> bytes, or a function of tmp_path giving them; each raises a DfitsError somewhere
HOSTILE = {
    "not-fits": b"hello, not a FITS file\n" * 200,
    "empty": b"",
    "no-end": _IMAGE[:2800] + b" " * 80,
    "bad-bitpix": image_file((4, 4), bitpix=16).replace(b"BITPIX  =                   16",
                                                        b"BITPIX  =                   17"),
    "truncated-data": _IMAGE[: 2880 + 1000],
    "bscale-zero": image_file((64, 32), bitpix=16, extra=[("BSCALE", 0.0)]),
    "bscale-text": image_file((64, 32), bitpix=16, extra=[("BSCALE", "abc")]),
    "many-axes": fg.hdu(fg.image_cards((1,) * 70, 8), b"\0"),
    "unknown-xtension": image_file((4, 4)) + _IMAGE.replace(b"SIMPLE  =                    T",
                                                            b"XTENSION= 'WEIRD   '          "),
    "bad-tform": _table("9Z", bytes(40), 10, 4),
    "heap-out-of-range": _table("1PJ(5)", np.array([[5, 10**6]] * 10, ">i4").tobytes(), 10, 8),
    "corrupt-tiles": _tiles,
    "changed-after-open": _IMAGE,
}  # fmt: skip


def _use(path: str, change: bool = False, scheduler: str = "threads") -> list[str]:
    """Open ``path`` and read all of it a user might; the DfitsErrors met."""
    errors = []
    try:
        f = dfits.open(path)
    except dfits.DfitsError as err:
        return [f"open: {err}"]
    with f:
        if change:
            with open(path, "ab") as out:
                out.write(b"\0" * 2880)
        for hdu in f:
            for step in _steps(hdu, scheduler):
                try:
                    step()
                except dfits.DfitsError as err:
                    errors.append(f"HDU {hdu.index}: {err}")
                    break
    return errors


def _steps(hdu, scheduler: str) -> list:
    """What a user reads of one HDU, in order; each may raise (the rest is then skipped)."""
    if hdu.is_table:
        return [lambda: [hdu.column(c).compute(scheduler=scheduler) for c in hdu.colnames]]
    # 64 chunks or so in 8 threads: a compute that raises leaves other tasks reading
    rows = (max(1, hdu.shape[0] // 64), *hdu.shape[1:]) if hdu.shape else None
    threads = {"num_workers": 8} if scheduler == "threads" else {}
    return [
        lambda: repr(hdu.header),
        lambda: (
            None
            if hdu.data is None
            else hdu.to_dask(rows).sum().compute(scheduler=scheduler, **threads)
        ),
        lambda: None if hdu.data is None else hdu.section[(slice(0, 2),) * len(hdu.shape)],
    ]


def _released(path: str, seconds: float = 10.0) -> tuple[int, int]:
    """``held(path)`` once tasks that ``compute`` left running have ended (or time is up).

    A threaded ``compute`` raises at its first failed task while the others go on in the
    pool; they may read the file after ``close()``, but must not leave a descriptor cached.
    """
    deadline = time.monotonic() + seconds
    while held(path) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.02)
        gc.collect()
    return held(path)


@pytest.mark.parametrize("unlink", [False, True], ids=["kept", "deleted"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_every_error_path_leaves_nothing_held_after_close(tmp_path, kind, unlink):
    blob = HOSTILE[kind]
    path = str(tmp_path / f"{kind}.fits")
    with open(path, "wb") as out:
        out.write(blob(tmp_path) if callable(blob) else blob)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dfits.DfitsWarning)
        errors = _use(path, change=kind == "changed-after-open")
    assert errors, f"{kind}: no DfitsError was raised, so no error path was taken"
    if unlink:
        os.unlink(path)  # a deleted file must not stay held (the cache kept it before)
    assert _released(path) == (0, 0), errors
    assert not _cached(path)


def test_acquire_and_release_hold_like_use(files):
    # the read path's acquire/release pair (no context manager) holds as use() does
    cache = Descriptors(limit=1)
    before = _open_fds()
    entry = cache.acquire((files[0], 0, 0))
    cache.close((files[0], 0, 0))
    assert os.pread(entry.fd, 6, 0) == b"SIMPLE"  # closed only by its last user
    assert _open_fds() == before + 1
    cache.release(entry)
    assert _open_fds() == before
    with pytest.raises(FileNotFoundError):
        cache.acquire((files[0] + ".gone", 0, 0))
    assert _open_fds() == before


def test_a_read_of_a_removed_or_replaced_file_raises(files):
    source = local.LocalSource.open(files[2])
    assert source.read_exact(0, 6) == b"SIMPLE"
    source.close()
    os.unlink(files[2])
    with pytest.raises(dfits.errors.FileChangedError, match="removed since it was opened"):
        source.read(0, 6)
    with open(files[2], "wb") as out:
        out.write(image_file((4, 6), bitpix=16))
    with pytest.raises(dfits.errors.FileChangedError, match="changed since it was opened"):
        source.read_exact(0, 6)
    assert held(files[2]) == (0, 0)


def test_a_read_after_close_opens_for_itself_only(files):
    # an array used after close() reads (its docstring's promise) and leaves nothing held
    f = dfits.open(files[1])
    x = f[0].data
    f.close()
    for _ in range(3):
        np.testing.assert_array_equal(x.compute(), np.arange(20).reshape(4, 5))
    assert held(files[1]) == (0, 0)
    assert not _cached(files[1])
    with dfits.open(files[1]) as g:  # opened again: cached again
        g[0].section[0]
        assert _cached(files[1])
    assert held(files[1]) == (0, 0)


def test_the_closed_keys_remembered_are_bounded(files, monkeypatch):
    from dfits.io import descriptors as module

    monkeypatch.setattr(module, "CLOSED_KEYS", 4)
    cache = Descriptors()
    for i in range(50):
        cache.close((files[0], i, 0))
    assert len(cache._closed) == 4
    with cache.use((files[0], 49, 0)):  # remembered: not cached
        pass
    with cache.use((files[0], 0, 0)):  # forgotten: cached, as any unknown key
        pass
    assert len(cache) == 1
    cache.clear()


def _mutated_cycles(tmp_path, cases: int) -> None:
    """Open, fail and close ``cases`` hostile files (the fuzzer's mutations of its seeds),
    counting the descriptors and maps of the file after each."""
    from tests.fuzz.mutate import mutated

    path = str(tmp_path / "case.fits")
    kept, failed = [], 0
    before = _open_fds()
    for case in range(cases):
        _, blob, ops = mutated(51, case)
        with open(path, "wb") as out:
            out.write(blob)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            errors = _use(path, scheduler="sync")  # threads: the kinds above
        failed += bool(errors)
        if _released(path, seconds=1.0) != (0, 0):
            kept.append((case, ops, held(path), errors[:1]))
    print(f"\nhostile files: {cases} opened, {failed} failed, {len(kept)} left something held")
    assert not kept, kept[:5]
    assert failed > cases // 4  # most cases took an error path
    assert _open_fds() <= before + 2
    assert len(local.descriptors) <= local.MAX_DESCRIPTORS


@pytest.mark.parametrize(
    "cases",
    [500, pytest.param(10_000, marks=[pytest.mark.slow, pytest.mark.timeout(1800)])],
    ids=["500", "10k"],
)
def test_hostile_files_opened_failed_and_closed_hold_nothing(tmp_path, cases):
    _mutated_cycles(tmp_path, cases)
