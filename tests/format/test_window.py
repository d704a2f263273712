"""Header reads through a growing window: few reads for dense HDUs, END found or refused."""

from __future__ import annotations

import pytest

from dfits.errors import HeaderError
from dfits.format import window
from dfits.format.window import MIN_WINDOW, Window, read_header
from tests.format import fitsgen as fg


class Recorder:
    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        self.calls: list[tuple[int, int]] = []

    def __call__(self, offset: int, n: int) -> bytes:
        self.calls.append((offset, n))
        return self.blob[offset : offset + n]


def test_window_grows_while_reads_stay_close():
    blob = bytes(range(256)) * 64 * 1024  # 16 MiB
    read = Recorder(blob)
    win = Window(read, len(blob), None)
    pos = 0
    for _ in range(200):  # 200 small requests, 40 KiB apart
        buf, base = win.get(pos, 2880)
        assert buf[pos - base : pos - base + 2880] == blob[pos : pos + 2880]
        pos += 40 * 1024
    sizes = [n for _, n in read.calls]
    assert sizes[0] <= 2 * MIN_WINDOW
    assert sizes == sorted(sizes)
    assert len(read.calls) < 12


def test_window_resets_after_a_long_jump():
    blob = bytes(32 * 2**20)
    read = Recorder(blob)
    win = Window(read, len(blob), None)
    for pos in range(0, 10 * MIN_WINDOW, MIN_WINDOW):
        win.get(pos, 2880)
    win.get(30 * 2**20, 2880)
    assert read.calls[-1] == (30 * 2**20, MIN_WINDOW)


def test_whole_buffer_never_reads():
    blob = fg.header(fg.image_cards(()))

    def refuse(offset, n):
        raise AssertionError("read through a window holding the whole file")

    win = Window(refuse, None, blob)
    assert win.size == len(blob)
    assert win.get(0, 2880) == (blob, 0)


def test_a_mapper_is_called_only_past_the_first_read():
    # a stamp's file (two headers in the first read) is never mapped; a later miss maps it
    # once and every request after it is a hit
    blob = bytes(range(256)) * 1024  # 256 KiB
    read = Recorder(blob)
    maps: list[bytes] = []

    def mapper():
        maps.append(blob)
        return blob

    win = Window(read, len(blob), mapper)
    assert win.get(0, 2880)[0][:2880] == blob[:2880]
    assert win.get(2880, 2880)[0][2880:5760] == blob[2880:5760]
    assert read.calls == [(0, window.FIRST_READ)]
    assert not maps
    assert win.whole is None
    assert win.get(100_000, 2880) == (blob, 0)
    assert win.get(5760, 2880) == (blob, 0)
    assert len(read.calls) == 1
    assert len(maps) == 1
    assert win.whole is blob


def test_a_mapper_that_fails_falls_back_to_reads():
    blob = bytes(256 * 1024)
    read = Recorder(blob)
    calls = []
    win = Window(read, len(blob), lambda: calls.append(1))  # returns None: cannot map
    win.get(0, 2880)
    buf, base = win.get(100_000, 2880)
    assert buf[100_000 - base : 100_000 - base + 2880] == blob[100_000:102_880]
    win.get(200_000, 2880)
    assert calls == [1]
    assert win.whole is None
    assert len(read.calls) == 3


def test_read_header_spanning_blocks():
    cards = fg.image_cards((), extra=[("HISTORY", f"line {i}") for i in range(60)])
    blob = fg.header(cards)
    win = Window(Recorder(blob), len(blob), None)
    buf, base = win.get(0, 2880)
    raw, ncards, data_offset = read_header(win, buf, base, 0, 0, "f.fits")
    assert ncards == len(cards)
    assert raw.endswith(b"END".ljust(80))
    assert data_offset == len(blob) == 2 * 2880


def test_read_header_without_end(monkeypatch):
    monkeypatch.setattr(window, "MAX_HEADER_BYTES", 4 * 2880)
    blob = fg.header(fg.image_cards(()), end=False) + b" " * (20 * 2880)
    win = Window(Recorder(blob), len(blob), None)
    buf, base = win.get(0, 2880)
    with pytest.raises(HeaderError, match=r"f.fits.*no END card .* header size limit"):
        read_header(win, buf, base, 0, 0, "f.fits")
    short = fg.header(fg.image_cards(()), end=False)
    win = Window(Recorder(short), len(short), None)
    buf, base = win.get(0, 2880)
    with pytest.raises(HeaderError, match="the end of the file"):
        read_header(win, buf, base, 0, 0, "f.fits")


# -- where the cards stop (issue 51) ------------------------------------------------------------
def _broken_end(blob: bytes, k: int) -> bytes:
    """``blob`` with the END card of its ``k``-th header overwritten as ``END=`` (fuzzed)."""
    ends = [i for i in range(0, len(blob), 80) if blob[i : i + 80] == b"END".ljust(80)]
    return blob[: ends[k]] + b"END=    " + blob[ends[k] + 8 :]


def _multi(tmp_path=None):
    """A primary image and three extensions, written by astropy; its bytes (and path)."""
    import io

    import numpy as np
    from astropy.io import fits

    cube = np.linspace(-1, 1, 120, dtype=np.float32).reshape(4, 5, 6)
    hdus = [
        fits.PrimaryHDU(np.arange(6, dtype=np.int16)),
        fits.ImageHDU(cube, name="SCI"),
        fits.ImageHDU(np.arange(12, dtype=">i4").reshape(3, 4), name="DQ"),
        fits.ImageHDU(np.arange(3, dtype=np.int16), name="LAST"),
    ]
    buf = io.BytesIO()
    fits.HDUList(hdus).writeto(buf)
    return buf.getvalue()


@pytest.mark.parametrize(("odd", "stops"), [(1440, False), (1441, True), (2880, True), (5, False)])
def test_cards_stop_at_a_block_mostly_not_printable(odd, stops):
    block = (bytes(odd) + b"COMMENT".ljust(2880))[:2880]
    cards = b"HISTORY ok".ljust(2880)
    assert window.cards_stop(cards + block + cards, 0, 3 * 2880) == (2880 if stops else -1)
    # only whole blocks are judged: a partial one never stops the cards
    assert window.cards_stop(cards + block, 0, 2880 + 2879) == -1


def test_read_header_stops_where_the_cards_stop():
    cards = fg.image_cards((), extra=[("HISTORY", f"line {i}") for i in range(20)])
    blob = fg.header(cards, end=False) + bytes(2880) + fg.header([("COMMENT", "x")])
    win = Window(Recorder(blob), len(blob), None)
    buf, base = win.get(0, 2880)
    with pytest.raises(window.CardsStopError, match=r"f.fits', HDU 3: .* at offset 2880") as err:
        read_header(win, buf, base, 0, 3, "f.fits")
    assert err.value.offset == 2880
    assert isinstance(err.value, HeaderError)


def test_read_header_stops_early_not_at_the_size_limit():
    # END damaged before 8 MiB of zeros: the search stops at the first block of them, not
    # after reading up to MAX_HEADER_BYTES (64 MiB) for an END card
    blob = fg.header(fg.image_cards(()), end=False) + bytes(8 << 20)
    read = Recorder(blob)
    win = Window(read, len(blob), None)
    buf, base = win.get(0, 2880)
    with pytest.raises(window.CardsStopError, match="offset 2880"):
        read_header(win, buf, base, 0, 1, "f.fits")
    assert len(read.calls) == 1
    assert read.calls[0][1] < 1 << 20


def test_a_few_bad_bytes_in_a_long_header_stay_a_warning():
    from dfits.errors import DfitsWarning
    from tests.format.checks import scan_bytes

    extra = [("HISTORY", f"line {i}") for i in range(40)] + ["COMMENT caf\xe9 \x00\x01"]
    blob = fg.image_file((2, 3), 16, extra=extra)
    with pytest.warns(DfitsWarning, match="outside printable ASCII"):
        (hdu,) = scan_bytes(blob).hdus
    assert hdu.shape == (2, 3)


@pytest.mark.parametrize("whole", [False, True], ids=["ranges", "mapped"])
@pytest.mark.parametrize(("k", "offset"), [(1, 8640), (2, 14400), (3, 20160)])
def test_scan_keeps_the_hdus_before_a_header_that_runs_into_data(whole, k, offset):
    from dfits.errors import DfitsWarning
    from dfits.format.layout import scan

    blob = _broken_end(_multi(), k)
    read = lambda at, n: blob[at : at + n]  # noqa: E731
    pattern = rf"t.fits', HDU {k}: .* cannot be cards at offset {offset}.* before it are read"
    with pytest.warns(DfitsWarning, match=pattern):
        layout = scan(read, len(blob), filename="t.fits", whole=blob if whole else None)
    assert [h.index for h in layout.hdus] == list(range(k))
    assert f"HDU {k}:" in layout.stopped
    assert f"offset {offset}" in layout.stopped


def test_primary_header_that_runs_into_data_is_an_error():
    from tests.format.checks import scan_bytes

    with pytest.raises(HeaderError, match=r"t.fits', HDU 0: .* cannot be cards at offset 2880"):
        scan_bytes(_broken_end(_multi(), 0))


def test_open_reads_the_hdus_before_and_names_the_broken_one(tmp_path):
    import warnings

    import numpy as np
    from astropy.io import fits

    import dfits
    from dfits.errors import DfitsWarning, HDUNotFoundError

    good = tmp_path / "good.fits"
    good.write_bytes(_multi())
    path = tmp_path / "broken.fits"
    path.write_bytes(_broken_end(_multi(), 2))
    with pytest.warns(DfitsWarning, match=r"HDU 2: .* cards at offset 14400"):
        f = dfits.open(path)
    with f, warnings.catch_warnings(), fits.open(good) as want:
        warnings.simplefilter("error")  # nothing more to say about the HDUs before
        assert len(f) == 2
        assert [h.name for h in f] == ["PRIMARY", "SCI"]
        for i in range(2):
            np.testing.assert_array_equal(f[i].data.compute(), want[i].data)
            np.testing.assert_array_equal(f[i].section[:2], want[i].data[:2])
        assert f.info(output=False)[1][1] == "SCI"
        where = r"broken.fits', HDU 2: the header that starts at offset \d+ runs into bytes"
        with pytest.raises(HeaderError, match=where + r".*offset 14400"):
            f[2]
        with pytest.raises(HeaderError, match=where):
            f[3]
        with pytest.raises(HDUNotFoundError, match=r"no HDU named 'DQ'.*then: .*HDU 2"):
            f["DQ"]
        assert "DQ" not in f
