"""FITS → zarr → FITS: values, dtype, header cards and BLANK/NaN survive; outputs are guarded."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.cli import main
from dfits.write.convert import fits_to_zarr, zarr_to_fits

zarr = pytest.importorskip("zarr")


def _cards(header):
    skip = {"CHECKSUM", "DATASUM", "BSCALE", "BZERO", "BLANK", "BITPIX", "EXTEND"}
    return [(k, v) for k, v in header.items() if k and k not in skip]


@pytest.fixture
def blanked(tmp_path):
    """A scaled int16 image with BLANK and WCS cards, and a float extension with NaN."""
    path = tmp_path / "in.fits"
    raw = np.arange(48, dtype="i2").reshape(6, 8)
    raw[2, 3] = -32768
    primary = fits.PrimaryHDU(raw)
    primary.header.update({"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768, "OBJECT": "M 31",
                           "CTYPE1": "RA---TAN", "CRVAL1": 10.5, "BUNIT": "Jy/beam"})  # fmt: skip
    values = np.random.default_rng(3).standard_normal((5, 7)).astype("f4")
    values[1, 1] = np.nan
    fits.HDUList([primary, fits.ImageHDU(values, name="ERR")]).writeto(path)
    return path


def test_round_trip_keeps_values_dtype_and_cards(tmp_path, blanked):
    store, back = tmp_path / "x.zarr", tmp_path / "back.fits"
    fits_to_zarr(blanked, store, overwrite=False)
    group = zarr.open_group(str(store), mode="r")
    assert group.attrs["fits_hdus"] == ["hdu0", "hdu1"]
    with fits.open(blanked) as hl:
        np.testing.assert_array_equal(group["hdu0"][:], hl[0].data)  # NaN for BLANK
        assert np.isnan(group["hdu0"][2, 3])
        assert "OBJECT  = 'M 31    '" in group["hdu0"].attrs["fits_header"]
        zarr_to_fits(store, back, overwrite=False)
        with fits.open(back, checksum=True) as out:
            # the primary's data come back in the primary, not in a first extension
            assert [h.name for h in out] == ["PRIMARY", "ERR"]
            for old, new in zip(hl, out, strict=True):
                np.testing.assert_array_equal(new.data, old.data)
                assert new.data.dtype.newbyteorder("=") == old.data.dtype.newbyteorder("=")
                want = [c for c in _cards(old.header) if c[0] not in ("SIMPLE", "XTENSION")]
                got = [
                    c for c in _cards(new.header) if c[0] not in ("SIMPLE", "XTENSION", "EXTNAME")
                ]
                assert [c for c in got if c[0] not in ("PCOUNT", "GCOUNT")] == [
                    c for c in want if c[0] not in ("PCOUNT", "GCOUNT", "EXTNAME")
                ]
    assert all(h.ok for h in dfits.verify_checksum(back))


def test_single_image_comes_back_as_the_primary(tmp_path):
    path, store, back = tmp_path / "a.fits", tmp_path / "a.zarr", tmp_path / "b.fits"
    values = np.arange(1000.0).reshape(10, 100)
    dfits.to_fits(values, path, header={"OBJECT": "X"})
    assert main(["convert", str(path), str(store)]) == 0
    assert main(["convert", str(store), str(back)]) == 0
    with fits.open(back) as hl:
        assert len(hl) == 1
        np.testing.assert_array_equal(hl[0].data, values)
        assert hl[0].header["OBJECT"] == "X"


def test_existing_outputs_need_overwrite(tmp_path, blanked, capsys):
    store, back = tmp_path / "x.zarr", tmp_path / "back.fits"
    fits_to_zarr(blanked, store, overwrite=False)
    assert main(["convert", str(blanked), str(store)]) == 1
    assert "overwrite" in capsys.readouterr().err
    assert main(["convert", str(blanked), str(store), "--overwrite"]) == 0
    back.write_bytes(b"old")
    assert main(["convert", str(store), str(back)]) == 1
    assert back.read_bytes() == b"old"
    assert main(["convert", str(store), str(back), "--overwrite"]) == 0
    assert len(fits.open(back)) == 2


def test_tables_and_unknown_directions_are_refused(tmp_path, capsys):
    path = tmp_path / "t.fits"
    table = fits.BinTableHDU.from_columns([fits.Column("A", "E", array=np.ones(3))])
    fits.HDUList([fits.PrimaryHDU(), table]).writeto(path)
    with pytest.raises(dfits.UnsupportedError, match=r"HDU 1.*only images"):
        fits_to_zarr(path, tmp_path / "t.zarr", overwrite=False)
    assert not (tmp_path / "t.zarr").exists()
    assert main(["convert", str(path), str(tmp_path / "t.npy")]) == 1
    assert "must end in .zarr" in capsys.readouterr().err


def test_compression_fits_to_fits_and_from_zarr(tmp_path, blanked):
    packed, store, back = tmp_path / "p.fits", tmp_path / "x.zarr", tmp_path / "b.fits"
    assert main(["convert", str(blanked), str(packed), "--compression", "GZIP_2"]) == 0
    fits_to_zarr(blanked, store, overwrite=False)
    zarr_to_fits(store, back, overwrite=False, compression="RICE_1")
    with fits.open(blanked) as hl:
        for path in (packed, back):
            with fits.open(path, checksum=True) as out:
                assert [h.name for h in out] == ["PRIMARY", "COMPRESSED_IMAGE", "ERR"]
                assert out[1].header["OBJECT"] == "M 31"
                # the scaled primary is written as its physical floats, quantised: NaN kept
                assert np.isnan(out[1].data[2, 3])
                np.testing.assert_allclose(out[1].data, hl[0].data, atol=0.5)
                np.testing.assert_allclose(out["ERR"].data, hl["ERR"].data, atol=0.2)
    assert main(["convert", str(blanked), str(packed), "--compression", "RICE_1"]) == 1
    assert main(["convert", str(blanked), str(store), "--compression", "RICE_1"]) == 1
