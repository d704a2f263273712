"""verify_checksum on the corpus: the verdicts astropy gives, per HDU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from astropy.io import fits

import dfits

CASES = [
    "astropy/checksum.fits",
    "astropy/checksum_false.fits",
    "astropy/chandra_time.fits",
    "astropy/m13.fits",
    "astropy/m13_rice.fits",
    "astropy/compressed_with_nan.fits",
    "crds/s7g1700gl_dead_bad_xsum.fits",
    "crds/s7g1700gl_dead_good_xsum.fits",
    "nom-tam-fits/checksum.fits",
]


_VERDICT = {1: True, 0: False, 2: None}


def _astropy_verdicts(path):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path, checksum=True, disable_image_compression=True) as hl:
            # astropy's public verdicts: 1 valid, 0 invalid, 2 missing
            out += [(_VERDICT[h.verify_datasum()], _VERDICT[h.verify_checksum()]) for h in hl]
    return out


@pytest.mark.parametrize("name", CASES)
def test_verdicts_match_astropy(corpus, name):
    got = dfits.verify_checksum(corpus / name)
    for check, (datasum, checksum) in zip(got, _astropy_verdicts(corpus / name), strict=True):
        if checksum is not None:
            assert check.checksum.status == ("ok" if checksum else "mismatch")
        if datasum is not None and check.datasum.status != "absent":
            assert check.datasum.status == ("ok" if datasum else "mismatch")


def test_reports_expected_and_computed(corpus):
    bad = dfits.verify_checksum(corpus / "astropy/checksum_false.fits")[0]
    assert bad.datasum.status == "mismatch"
    assert bad.datasum.expected != bad.datasum.computed
    assert not bad.ok


def test_blank_datasum_is_absent(corpus):
    # memtest.fits: DATASUM = '' on the primary (not computed, by the convention); astropy
    # cannot open the file with checksum=True at all
    primary, table = dfits.verify_checksum(corpus / "astropy/memtest.fits")
    assert (primary.datasum.status, primary.checksum.status) == ("absent", "ok")
    assert table.datasum.status == "mismatch"


def test_unparseable_and_absent(tmp_path):
    path = tmp_path / "x.fits"
    dfits.to_fits(np.ones(4), path, header=[("OBJECT", "x")], checksum=False)
    assert dfits.verify_checksum(path)[0].datasum.status == "absent"
    raw = bytearray(path.read_bytes())
    at = raw.find(b"OBJECT  =")
    raw[at : at + 80] = b"DATASUM = 'abc'".ljust(80)
    path.write_bytes(bytes(raw))
    assert dfits.verify_checksum(path)[0].datasum.status == "unparseable"


def test_large_file_in_pieces(tmp_path, monkeypatch):
    import dfits.io.verify as verify

    monkeypatch.setattr(verify, "PIECE", 4096)
    path = tmp_path / "big.fits"
    dfits.to_fits(np.random.default_rng(0).standard_normal(100_000), path)
    assert all(h.ok for h in dfits.verify_checksum(path, threads=2))
