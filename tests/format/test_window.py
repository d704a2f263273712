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
