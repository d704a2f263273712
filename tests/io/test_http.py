"""The multipart/byteranges parser of dfits.io.http, on hand-made answers."""

from __future__ import annotations

import pytest

from dfits.errors import FileChangedError
from dfits.io.http import _boundary, _split
from dfits.io.retries import PermanentError


class _Source:
    url, size, etag = "http://x/f.fits", 1000, None


def _answer(parts, boundary=b"B0", total=1000, case="Content-Range"):
    out = b""
    for first, data in parts:
        out += b"\r\n--" + boundary + b"\r\nContent-Type: application/octet-stream\r\n"
        out += f"{case}: bytes {first}-{first + len(data) - 1}/{total}\r\n\r\n".encode()
        out += data
    return bytearray(out + b"\r\n--" + boundary + b"--\r\n")


def test_parts_are_cut_by_their_content_range_not_by_the_boundary():
    # a part holding the boundary's bytes stays whole: its length comes from Content-Range
    parts = [(0, b"ab"), (100, b"x\r\n--B0\r\ny"), (998, b"zz")]
    got = _split(_Source(), _answer(parts), b"B0", {})
    assert [(f, bytes(d)) for f, d in got] == parts
    got = _split(_Source(), _answer(parts, case="content-range"), b"B0", {})
    assert [(f, bytes(d)) for f, d in got] == parts


def test_a_body_cut_short_gives_the_whole_parts_before_the_cut():
    body = _answer([(0, b"abcd"), (50, b"efgh")])
    cut = body[: body.index(b"efgh") + 2]
    assert [(f, bytes(d)) for f, d in _split(_Source(), cut, b"B0", {})] == [(0, b"abcd")]
    assert _split(_Source(), bytearray(b"garbage"), b"B0", {}) == []


def test_a_part_of_another_file_or_without_a_range_is_refused():
    with pytest.raises(FileChangedError, match="changed since it was opened"):
        _split(_Source(), _answer([(0, b"ab")], total=999), b"B0", {})
    body = bytearray(b"\r\n--B0\r\nContent-Type: x\r\n\r\nab\r\n--B0--")
    with pytest.raises(PermanentError, match="Content-Range"):
        _split(_Source(), body, b"B0", {})


def test_boundary_parameter():
    assert _boundary('multipart/byteranges; boundary="q 1"') == b"q 1"
    assert _boundary("multipart/byteranges;charset=x; Boundary=00000042") == b"00000042"
    with pytest.raises(PermanentError, match="boundary"):
        _boundary("multipart/byteranges")
