"""Every file of the shared corpus: dfits's layout scan against astropy's reading of it."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest
from astropy.io import fits

from dfits.errors import DfitsError, DfitsWarning, NotFITSError, TruncatedFileError
from dfits.format.layout import FileLayout, scan
from tests.format.checks import CORPUS, check_header

#: Files dfits refuses or warns about, with what it says (astropy's behaviour in comments).
#: Every other corpus file must scan silently and agree with astropy HDU by HDU.
ODD = {
    # whole-file compression: astropy decompresses (or lacks uncompresspy for .Z)
    "astropy/dist_lookup.fits.gz": (NotFITSError, "gzip signature"),
    "nom-tam-fits/test.fits.gz": (NotFITSError, "gzip signature"),
    "nom-tam-fits/test.fits.bz2": (NotFITSError, "bzip2 signature"),
    "astropy/lzw.fits.Z": (NotFITSError, r"compress \(.Z\) signature"),
    "nom-tam-fits/rp600245n00_im1.fits.Z": (NotFITSError, r"compress \(.Z\) signature"),
    # not FITS: astropy raises OSError "No SIMPLE card found"
    "astropy/idcompspec.fits": (NotFITSError, r"offset 0 holds b'# Thu 16:08:18"),
    "astropy/locale.hdr": (NotFITSError, r"offset 0 holds b'WCSAXES ="),
    "astropy/sip-broken.hdr": (NotFITSError, "starts with an XTENSION card"),
    # header promising 240 MB of data: astropy opens it and warns "may have been truncated"
    "astropy/unit.hdr": (TruncatedFileError, r"data needs bytes 2880 to 240962880 .* holds 2880"),
    # astropy: _NonstandardHDU, "File may have been truncated" warning
    "astropy/header_with_time_wcslib71.fits": (
        DfitsWarning,
        r"SIMPLE = False: the file does not claim.*|240 bytes after the last HDU, at offset "
        r"8640, ignored: zero or blank padding",
    ),
    # astropy: silent
    "astropy/verify.fits": (DfitsWarning, r"out of order \(BITPIX at card 2, NAXIS at card 1"),
    # astropy: "File may have been truncated" warnings
    "crds/truncated.fits": (DfitsWarning, r"HDU 1: the last block is not padded.* 7000"),
    # ... and astropy's VerifyWarning "Invalid value for 'BLANK' keyword in header: -32768.0"
    "fitsrs/Npix8.fits": (
        DfitsWarning,
        r"HDU 0 \('PRIMARY'\): (the last block is not padded|BLANK = -32768.0 is not an integer)",
    ),
    "fitsrs/Npix691539.fits": (
        DfitsWarning,
        r"HDU 0 \('PRIMARY'\): (the last block is not padded|BLANK = -32768.0 is not an integer)",
    ),
    # astropy: warnings about null bytes and non-ASCII in "HDU 1", which it drops
    "fitsrs/Astro_UIT.fits": (
        DfitsWarning,
        r"326250 bytes after the last HDU, at offset 538560, ignored: not an HDU .*xef\\xbf",
    ),
    **{
        # IMAGE extensions without PCOUNT/GCOUNT: astropy reads them silently
        f"astrogo/file-img2-bitpix{b}.fits": (DfitsWarning, "HDU 1: mandatory PCOUNT and GCOUNT")
        for b in ("+08", "+16", "+32", "+64", "-32", "-64")
    },
}

FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*") if p.name != "SOURCES.md"
) if CORPUS.is_dir() else []  # fmt: skip

KINDS = {
    "PrimaryHDU": "primary",
    "_NonstandardHDU": "primary",
    "ImageHDU": "image",
    "BinTableHDU": "bintable",
    "TableHDU": "table",
    "GroupsHDU": "random_groups",
}


def _scan(path: Path) -> FileLayout:
    fd = os.open(path, os.O_RDONLY)
    try:
        return scan(lambda o, n: os.pread(fd, n, o), os.fstat(fd).st_size, filename=path.name)
    finally:
        os.close(fd)


def test_corpus_is_known(corpus):
    assert set(ODD) <= set(FILES)
    assert len(FILES) >= 70


@pytest.mark.parametrize("name", [f for f in FILES if f in ODD])
def test_odd_corpus_files(corpus, name):
    error, pattern = ODD[name]
    if issubclass(error, Warning):
        with pytest.warns(error) as record:
            _scan(corpus / name)
        for warning in record:
            assert re.search(pattern, str(warning.message)), str(warning.message)
        return
    with pytest.raises(error, match=pattern):
        _scan(corpus / name)


@pytest.mark.filterwarnings("ignore::astropy.utils.exceptions.AstropyUserWarning")
@pytest.mark.filterwarnings("ignore::astropy.io.fits.verify.VerifyWarning")
@pytest.mark.parametrize("name", FILES)
def test_corpus_file_matches_astropy(corpus, name):
    path = corpus / name
    if name in ODD and not issubclass(ODD[name][0], Warning):
        pytest.skip("dfits refuses it (see test_odd_corpus_files)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DfitsWarning)
        layout = _scan(path)
    with fits.open(path, memmap=False, disable_image_compression=True) as hdul:
        assert len(layout.hdus) == len(hdul)
        for ours, theirs in zip(layout.hdus, hdul, strict=True):
            # astropy edits some headers as it opens them (adds PCOUNT/GCOUNT to astrogo's
            # IMAGE extensions): compare with its parse of the stored bytes.
            check_header(ours.header, fits.Header.fromstring(ours.header.tostring()))
            assert ours.header.ncards <= len(theirs.header.cards)
            assert ours.data_offset == theirs._data_offset
            if isinstance(theirs, fits.hdu.base._NonstandardHDU):
                # SIMPLE = F: to astropy the rest of the file is data of an unnamed HDU;
                # dfits reads it as its header says (a primary HDU).
                assert (ours.kind, ours.name) == ("primary", "PRIMARY")
                continue
            assert ours.padded_size == theirs._data_size
            kind = KINDS[type(theirs).__name__]
            if kind == "bintable" and theirs.header.get("ZIMAGE") is True:
                kind = "compressed_image"
            assert ours.kind == kind
            name = theirs.name
            if kind == "compressed_image":
                # the image's name, as astropy's CompImageHDU gives it (issue 46)
                with fits.open(path, memmap=False) as images:
                    name = images[ours.index].name
            assert (ours.name, ours.ver) == (name, theirs.ver)
            if kind in ("primary", "image"):
                assert ours.shape == theirs.shape


def _scan_whole(path: Path) -> FileLayout:
    with open(path, "rb") as f:
        data = f.read()
    return scan(None, len(data), filename=path.name, whole=data)  # type: ignore[arg-type]


def _outcome(fn, path: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            layout = fn(path)
        except DfitsError as err:
            return type(err), str(err), []
    hdus = [(h, h.header.tostring()) for h in layout.hdus]
    return hdus, layout.size, [str(w.message) for w in caught]


@pytest.mark.parametrize("name", FILES)
def test_whole_file_scan_equals_windowed_scan(corpus, name):
    # dfits.open scans local files through a map of the whole file: it must find exactly
    # what the windowed reads (remote files) find, errors and warnings included.
    assert _outcome(_scan_whole, corpus / name) == _outcome(_scan, corpus / name)
