"""Runs of alike HDUs: the bulk check and the scan that uses it, against the one-by-one scan."""

from __future__ import annotations

import mmap
import re
import warnings

import numpy as np
import pytest
from astropy.io import fits
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits.errors import DfitsError
from dfits.format import layout as layout_mod
from dfits.format.layout import scan
from dfits.format.runs import alike_run, fixed_mask
from tests.format import fitsgen as fg
from tests.format.checks import scan_bytes

PRIMARY0 = fg.header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0), ("EXTEND", True)])
DATA = fg.pad(fg.data_for((3, 4), 16))


def ext_cards(ver: object = None, *, extra=(), shape=(3, 4), name="SCI") -> list:
    more = [("EXTNAME", name), *([("EXTVER", ver)] if ver is not None else []), *extra]
    return fg.image_cards(shape, 16, primary=False, extra=more)


def ext(ver: object = None, **kwargs) -> bytes:
    shape = kwargs.get("shape", (3, 4))
    return fg.header(ext_cards(ver, **kwargs)) + fg.pad(fg.data_for(shape, 16))


def template(ver: object = 1, **kwargs) -> tuple[bytes, np.ndarray, int, int]:
    """Raw header through END, its fixed mask, card count and EXTVER card."""
    specs = ext_cards(ver, **kwargs)
    raw = fg.cards([*specs, b"END"])
    ncards = len(specs)
    # what the scan's plan reads: every card up to the last mandatory one, then EXTNAME
    mandatory = slice(0, 7 * 80)
    return raw, fixed_mask(ncards, [mandatory, slice(560, 640)], raw), ncards, 8


def run_of(*hdus: bytes, count: int | None = None) -> tuple[list[bytes], list[int]]:
    raw, fixed, _, card = template()
    blob = b"".join(hdus)
    stride = len(hdus[0])
    return alike_run(blob, 0, stride, count or len(hdus), raw, fixed, card)


# -- the bulk check ---------------------------------------------------------------------------
def test_alike_headers_match_with_their_extver():
    raws, vers = run_of(*(ext(v) for v in (1, 2, 30, 999_999_999_999_999_999)))
    assert vers == [1, 2, 30, 999_999_999_999_999_999]
    assert raws[2] == fg.cards([*ext_cards(30), b"END"])


@pytest.mark.parametrize(
    ("odd", "why"),
    [
        (ext(3, shape=(3, 5)), "another NAXIS1"),
        (ext(3, name="ERR"), "another EXTNAME"),
        (ext(3, extra=[("BSCALE", 2.0)]), "one more keyword"),
        (ext(b"3"), "EXTVER in free format"),
        (ext(b"                  -3"), "a signed EXTVER"),
        (ext(b"1234567890123456789"), "19 digits"),
        (ext(b"              3 junk"), "text after the value"),
        (ext(b"                 3.0"), "a float EXTVER"),
        (ext(b"                   3 x"), "text after the value, no slash"),
        (ext(3).replace(b"'SCI     '", b"'SC\x01    '"), "a control byte in a fixed card"),
        (ext(b"                   3 / v\x01"), "a control byte in a free card"),
        (ext(b"                   3 / v\xe9"), "a byte above 126 in a free card"),
    ],
)
def test_anything_unpredicted_stops_the_run(odd: bytes, why: str):
    raws, vers = run_of(ext(1), ext(2), odd, ext(4))
    assert vers == [1, 2], why
    assert len(raws) == 2


def test_a_comment_after_the_extver_is_plain():
    commented = fg.header(ext_cards(b"                   3 / version")) + DATA
    assert run_of(ext(1), commented, ext(4))[1] == [1, 3, 4]


def test_an_earlier_end_keyword_card_is_fixed_whole():
    cards = [*ext_cards(1), b"END     = 1"]
    raw = fg.cards([*cards, b"END"])
    mask = fixed_mask(len(cards), [slice(0, 560)], raw)
    assert mask[len(ext_cards(1)) * 80 : (len(cards) + 1) * 80].all()


def test_reads_outside_the_buffer_are_refused():
    raw, fixed, _, card = template()
    blob = ext(1) + ext(2)
    with pytest.raises(ValueError, match="leave the buffer"):
        alike_run(blob, 0, len(ext(1)), 3, raw, fixed, card)
    with pytest.raises(ValueError, match="leave the buffer"):
        alike_run(blob, 0, 80, 2, raw, fixed, card)  # a stride shorter than a header


def test_an_mmap_closes_after_a_run(tmp_path):
    path = fg.write(tmp_path / "x.fits", ext(1) + ext(2))
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        raw, fixed, _, card = template()
        assert alike_run(m, 0, len(ext(1)), 2, raw, fixed, card)[1] == [1, 2]
        m.close()  # BufferError if a view into the map had survived


# -- the scan with runs against the scan without ----------------------------------------------
def scanned(blob: bytes, whole: bool) -> tuple[list, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if whole:
            layout = scan(lambda o, n: blob[o : o + n], len(blob), filename="t.fits", whole=blob)
        else:
            layout = scan_bytes(blob)
    hdus = [(h, h.header_offset, h.ver, h.header._raw) for h in layout.hdus]
    return hdus, [str(w.message) for w in caught]


ODD = {
    "plain": lambda v: ext(v),
    "no extver": lambda v: ext(None),
    "free extver": lambda v: ext(str(v).encode()),
    "signed extver": lambda v: ext(f"{-v:>20}".encode()),
    "other shape": lambda v: ext(v, shape=(2, 2)),
    "other name": lambda v: ext(v, name="ERR"),
    "scaled": lambda v: ext(v, extra=[("BSCALE", 2.0), ("BZERO", 1.0)]),
    "blank on float": lambda v: fg.header(
        fg.image_cards((2,), -32, primary=False, extra=[("EXTVER", v), ("BLANK", 1)])
    ) + fg.pad(fg.data_for((2,), -32)),
    "object": lambda v: ext(v, extra=[("OBJECT", "cafe")]),
    "non-ascii": lambda v: ext(v, extra=[("OBJECT", b"'caf\xe9'")]),
    "two blocks": lambda v: ext(v, extra=[("COMMENT", f"c{i}") for i in range(40)]),
    "table": lambda v: fg.hdu([("XTENSION", "BINTABLE"), ("BITPIX", 8), ("NAXIS", 2),
                               ("NAXIS1", 4), ("NAXIS2", 3), ("PCOUNT", 0), ("GCOUNT", 1),
                               ("TFIELDS", 1), ("TFORM1", "J"), ("EXTVER", v)], bytes(12)),
}  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(sorted(ODD)), min_size=1, max_size=40),
    batch=st.sampled_from([1, 2, 3, 5, 4096]),
    backoff=st.sampled_from([0, 1, 16]),
    tail=st.sampled_from([b"", b"\0" * 2880, b"junk" * 10]),
    cut=st.sampled_from([0, 0, 1000, 2880]),
)
def test_runs_change_nothing(kinds, batch, backoff, tail, cut):
    blob = PRIMARY0 + b"".join(ODD[k](i + 1) for i, k in enumerate(kinds)) + tail
    blob = blob[: len(blob) - cut] if cut and not tail else blob
    patch = pytest.MonkeyPatch()
    patch.setattr(layout_mod, "_RUN_BATCH", batch)
    patch.setattr(layout_mod, "_RUN_BACKOFF", backoff)
    try:
        try:
            expected = scanned(blob, whole=False)
        except DfitsError as err:  # a truncated last HDU: both ways must refuse it alike
            with pytest.raises(type(err), match=re.escape(str(err))):
                scanned(blob, whole=True)
            return
        assert scanned(blob, whole=True) == expected
    finally:
        patch.undo()


def test_a_long_run_reads_like_astropy(tmp_path):
    from dfits.file import open as dfits_open

    vers = [*range(1, 300), 5, *range(301, 700)]
    blob = PRIMARY0 + b"".join(ext(v) for v in vers) + ext(b"7") + ext(700, shape=(2, 2))
    path = fg.write(tmp_path / "many.fits", blob)
    ours = dfits_open(path)
    with fits.open(path) as theirs:
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            shape = () if b.data is None else b.data.shape
            assert (a.name, a.ver, a.shape) == (b.name, b.ver, shape)
            assert a.header.ncards == len(b.header)
        np.testing.assert_array_equal(ours[-1].data.compute(), theirs[-1].data)
