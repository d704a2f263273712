"""The dfits command: each subcommand on generated files, and one-line errors on bad ones."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from astropy.io import fits

from dfits.cli import main
from dfits.io.writer import ImageWriter


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "cube.fits"
    rng = np.random.default_rng(2)
    data = rng.random((6, 5, 4)).astype(np.float32)
    data[0, 0, 0] = np.nan
    cards = [
        ("BUNIT", "Jy/beam"),
        ("CTYPE3", "FREQ"),
        ("CRVAL3", 1.0e9),
        ("CDELT3", 2.0e6),
        ("CRPIX3", 1.0),
        ("CUNIT3", "Hz"),
    ]
    with ImageWriter(path, data.shape, ">f4", cards) as out:
        out.write(data)
    return path, data


def test_info_and_header(cube, capsys):
    path, _ = cube
    assert main(["info", str(path)]) == 0
    assert "PRIMARY" in capsys.readouterr().out
    assert main(["header", str(path)]) == 0
    assert "CTYPE3  = 'FREQ" in capsys.readouterr().out


def test_info_lists_table_columns(tmp_path, capsys):
    path = tmp_path / "t.fits"
    cols = [
        fits.Column("ENERGY", "E", unit="keV", array=np.ones(3, np.float32)),
        fits.Column("CELL", "6I", dim="(3,2)", array=np.zeros((3, 2, 3), np.int16)),
        fits.Column("VLA", "PJ()", array=[[1], [2, 3], []]),
    ]
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols, name="EV")]).writeto(path)
    assert main(["info", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("HDU 1 EV: bintable columns")
    assert lines[at + 1].split() == ["Name", "Format", "Unit", "Dtype", "Shape"]
    assert lines[at + 2].split() == ["ENERGY", "E", "keV", "float32"]
    assert lines[at + 3].split() == ["CELL", "6I", "int16", "(2,", "3)"]
    assert lines[at + 4].split() == ["VLA", "PJ(2)", "object", "(arrays", "of", "int32)"]


def test_stats_matches_numpy(cube, capsys):
    path, data = cube
    assert main(["stats", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(None, 1) for line in out.splitlines()[1:])
    assert int(lines["count"]) == np.count_nonzero(~np.isnan(data))
    assert float(lines["mean"]) == pytest.approx(np.nanmean(data), rel=1e-6)
    assert float(lines["max"]) == pytest.approx(np.nanmax(data))


@pytest.mark.parametrize("order", [0, 1, 2])
def test_moment_maps(cube, tmp_path, order):
    path, data = cube
    out = tmp_path / f"m{order}.fits"
    assert main(["moment", str(path), "--order", str(order), "--out", str(out), "--quiet"]) == 0
    got = fits.getdata(out)
    freq = 1.0e9 + np.arange(6) * 2.0e6
    d = data.astype(float)
    m0 = np.nansum(d, axis=0)
    m1 = np.nansum(d * freq[:, None, None], axis=0) / m0
    want = {
        0: m0 * 2.0e6,
        1: m1,
        2: np.sqrt(np.nansum(d * (freq[:, None, None] - m1) ** 2, axis=0) / m0),
    }[order]
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["info", "{bad}"], "not a FITS file"),
        (["stats", "{cube}", "--hdu", "9"], "no HDU 9"),
        (["stats", "{cube}", "--axis", "7"], "out of range"),
        (["moment", "{cube}", "--order", "3", "--out", "{tmp}/x.fits"], "--order must be"),
        (["header", "{missing}"], "no such file"),
    ],
)
def test_errors_are_one_line_and_nonzero(cube, tmp_path, argv, message):
    path, _ = cube
    bad = tmp_path / "bad.fits"
    bad.write_text("this is not FITS\n")
    args = [
        a.format(bad=bad, cube=path, tmp=tmp_path, missing=tmp_path / "nope.fits") for a in argv
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "dfits.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dfits: error:")
    assert message in lines[0]
    assert not (tmp_path / "x.fits").exists()


@pytest.fixture(scope="module")
def sky_cube(tmp_path_factory):
    # a long folder name: HISTORY must take several cards, not break the header
    folder = tmp_path_factory.mktemp("cli") / ("a-rather-long-folder-name-" * 4)
    folder.mkdir()
    path = folder / "sky.fits"
    data = np.random.default_rng(3).random((4, 6, 5)).astype(np.float32)
    cards = {"OBJECT": "NGC 1333", "BUNIT": "Jy/beam", "BMAJ": 3e-4, "BMIN": 2e-4, "BPA": 30.0}
    cards |= {"CTYPE1": "RA---SIN", "CRVAL1": 52.26, "CDELT1": -1e-4, "CRPIX1": 3.0}
    cards |= {"CTYPE2": "DEC--SIN", "CRVAL2": 31.3, "CDELT2": 1e-4, "CRPIX2": 4.0}
    cards |= {"CTYPE3": "FREQ", "CRVAL3": 2.3e11, "CDELT3": 5e5, "CRPIX3": 1.0, "CUNIT3": "Hz"}
    cards |= {"RADESYS": "ICRS"}
    fits.writeto(path, data, fits.Header(list(cards.items())))
    return path


def test_moment_keeps_celestial_wcs_object_and_beam(sky_cube, tmp_path):
    from astropy.wcs import WCS

    out = tmp_path / "m0.fits"
    assert main(["moment", str(sky_cube), "--out", str(out), "--quiet"]) == 0
    with fits.open(out, checksum=True) as hl:
        header = hl[0].header
        assert hl[0].data.shape == (6, 5)
    assert header["OBJECT"] == "NGC 1333"
    assert (header["BMAJ"], header["BMIN"], header["BPA"]) == (3e-4, 2e-4, 30.0)
    assert header["BUNIT"] == "Hz Jy / beam"  # the accessor's unit string (astropy's)
    assert str(sky_cube) in "".join(str(h) for h in header["HISTORY"]).replace(" ", "")
    want = WCS(fits.getheader(sky_cube)).celestial
    got = WCS(header)
    assert list(got.wcs.ctype) == list(want.wcs.ctype)
    np.testing.assert_allclose(got.wcs.crval, want.wcs.crval)
    np.testing.assert_allclose(got.pixel_to_world_values(1, 2), want.pixel_to_world_values(1, 2))
    assert all(h.ok for h in __import__("dfits").verify_checksum(out))


def test_moment_refuses_to_overwrite(sky_cube, tmp_path, capsys):
    out = tmp_path / "m.fits"
    out.write_bytes(b"keep me")
    argv = ["moment", str(sky_cube), "--out", str(out), "--quiet"]
    assert main(argv) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert out.read_bytes() == b"keep me"
    assert main([*argv, "--overwrite"]) == 0
    assert fits.getdata(out).shape == (6, 5)


# -- everyday habits: several files, pipes, progress, demo options ---------------------------


def test_info_and_header_take_several_files_and_go_on_past_a_bad_one(cube, tmp_path, capsys):
    path, _ = cube
    other = tmp_path / "other.fits"
    fits.PrimaryHDU(np.zeros((2, 3), np.int16)).writeto(other)
    missing = tmp_path / "nope.fits"
    assert main(["info", str(path), str(missing), str(other)]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("Filename:") == 2
    assert f"==> {other} <==" in captured.out
    assert str(missing) in captured.err
    assert captured.err.startswith("dfits: error:")
    assert main(["header", str(path), str(other)]) == 0
    out = capsys.readouterr().out
    assert out.index(f"==> {path} <==") < out.index("CTYPE3") < out.index(f"==> {other} <==")


def test_a_closed_pipe_ends_quietly(cube):
    path, _ = cube
    proc = subprocess.Popen(
        [sys.executable, "-m", "dfits.cli", "header", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # a reader gone before the first line: `dfits header x | head -0`
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141  # what a shell shows for a process stopped by SIGPIPE
    assert err == b""


class _Terminal:
    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize(
    ("flags", "terminal", "shown"),
    [
        ([], False, False),
        ([], True, True),
        (["--progress"], False, True),
        (["--quiet"], True, False),
    ],
    ids=["log-file", "terminal", "forced", "quiet"],
)
def test_progress_only_on_a_terminal_unless_asked(monkeypatch, flags, terminal, shown):
    from dask.diagnostics import ProgressBar

    from dfits.cli import _parser, _progress

    if terminal:
        monkeypatch.setattr(sys, "stderr", _Terminal())
    args = _parser().parse_args(["stats", "x.fits", *flags])
    assert isinstance(_progress(args), ProgressBar) is shown


def test_quiet_and_progress_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["stats", "x.fits", "--quiet", "--progress"])
    assert exc.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_demo_options_are_reachable_and_in_help(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    help_text = capsys.readouterr().out
    assert "--shape" in help_text
    assert "--keep" in help_text
    assert main(["demo", "--shape", "4,8,8", "--dir", str(tmp_path)]) == 0
    assert "4x8x8 float32 cube" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["demo", "--shape", "4,8"])
    assert "three positive integers" in capsys.readouterr().err


def test_stats_of_an_all_blank_image_raises_no_foreign_warning(tmp_path, capsys):
    path = tmp_path / "blank.fits"
    hdu = fits.PrimaryHDU(np.full((4, 5), -32768, np.int16))
    hdu.header["BLANK"] = -32768
    hdu.writeto(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarnings included
        assert main(["stats", str(path), "--quiet"]) == 0
        assert main(["stats", str(path), "--quiet", "--axis", "0"]) == 0
    out = capsys.readouterr().out
    assert "count  0" in out
    assert "mean   nan" in out


def test_moment_takes_the_spectral_axis_from_the_wcs(tmp_path, capsys):
    from astropy.wcs import WCS

    # ALMA's order: (Stokes, freq, y, x); axis 0 would be Stokes
    data = np.random.default_rng(5).random((1, 4, 3, 2)).astype(np.float32)
    header = fits.Header([("CTYPE1", "RA---SIN"), ("CTYPE2", "DEC--SIN"), ("CTYPE3", "FREQ"),
                          ("CRVAL3", 1e11), ("CDELT3", 1e6), ("CUNIT3", "Hz"),
                          ("CTYPE4", "STOKES")])  # fmt: skip
    path = tmp_path / "alma.fits"
    fits.writeto(path, data, header)
    out = tmp_path / "m1.fits"
    assert main(["moment", str(path), "--order", "1", "--out", str(out), "--quiet"]) == 0
    got = fits.getdata(out)
    # CRPIX3 is absent: 0, as the standard and wcslib say (pixel 1 is CRVAL3 + CDELT3)
    freq = WCS(header).spectral.pixel_to_world_values(np.arange(4))
    assert freq[0] == 1e11 + 1e6
    want = (data * freq[:, None, None]).sum(axis=1) / data.sum(axis=1)
    # the one Stokes plane is dropped: a 2-D float32 map with the celestial WCS
    np.testing.assert_allclose(got, want[0].astype(np.float32), rtol=1e-6)
    head = fits.getheader(out)
    assert (head["NAXIS"], head["BITPIX"], head["WCSAXES"]) == (2, -32, 2)
    assert (head["CTYPE1"], head["CTYPE2"]) == ("RA---SIN", "DEC--SIN")
    flat = tmp_path / "image.fits"
    fits.writeto(flat, data[0], fits.Header([("CTYPE1", "RA---SIN"), ("CTYPE2", "DEC--SIN")]))
    assert main(["moment", str(flat), "--out", str(tmp_path / "x.fits"), "--quiet"]) == 1
    assert "no (separable) spectral axis" in capsys.readouterr().err
    assert not (tmp_path / "x.fits").exists()


@pytest.mark.parametrize("order", [0, 1])
def test_moment_in_another_spectral_unit_equals_spectral_cube(sky_cube, tmp_path, order):
    import astropy.units as u
    from spectral_cube import SpectralCube

    with fits.open(sky_cube) as hl:
        header = hl[0].header.copy()
        data = hl[0].data
    header["RESTFRQ"] = 2.3001e11
    path = tmp_path / "rest.fits"
    fits.writeto(path, data, header)
    out = tmp_path / f"m{order}.fits"
    argv = ["moment", str(path), "--order", str(order), "--out", str(out), "--quiet"]
    assert main([*argv, "--unit", "km/s", "--velocity-convention", "radio"]) == 0
    cube = SpectralCube.read(path).with_spectral_unit(u.km / u.s, velocity_convention="radio")
    want = cube.moment(order=order, axis=0)
    if order == 1:
        want = want.to(u.km / u.s)
    with fits.open(out) as hl:
        got = hl[0].data
        assert u.Unit(hl[0].header["BUNIT"]) == want.unit
    np.testing.assert_allclose(got, want.value.astype(np.float32), rtol=2e-6)


@pytest.mark.parametrize(
    ("ctype", "crval", "cdelt", "cunit", "unit"),
    [
        ("FREQ-LOG", 1.0e11, 5.0e8, "Hz", None),  # non-linear: logarithmic channels
        ("VOPT-F2W", 3.0e5, -2.0e5, "m/s", None),  # optical velocity, linear in frequency
        ("FREQ", 2.3e11, 5e5, "Hz", "km/s"),  # converted to radio velocity by wcslib
    ],
)
@pytest.mark.parametrize("order", [0, 1, 2])
def test_moment_equals_the_accessors(tmp_path, ctype, crval, cdelt, cunit, unit, order):
    """The CLI takes its spectral axis from the accessor's code, not from CRVAL/CDELT."""
    import xarray as xr

    rng = np.random.default_rng(11)
    data = rng.random((7, 4, 3)).astype(np.float32) + 0.5
    data[2, 1, 1] = np.nan
    cards = [("CTYPE1", "RA---SIN"), ("CRVAL1", 52.0), ("CDELT1", -1e-4), ("CRPIX1", 2.0),
             ("CTYPE2", "DEC--SIN"), ("CRVAL2", 31.0), ("CDELT2", 1e-4), ("CRPIX2", 2.0),
             ("CTYPE3", ctype), ("CRVAL3", crval), ("CDELT3", cdelt), ("CRPIX3", 3.0),
             ("CUNIT3", cunit), ("RESTFRQ", 2.3001e11), ("BUNIT", "Jy/beam")]  # fmt: skip
    path = tmp_path / "cube.fits"
    fits.writeto(path, data, fits.Header(cards))
    out = tmp_path / "m.fits"
    argv = ["moment", str(path), "--order", str(order), "--out", str(out), "--quiet"]
    cube = xr.open_dataarray(path, engine="dfits")
    if unit:
        argv += ["--unit", unit, "--velocity-convention", "radio"]
        cube = cube.fits.with_spectral_unit(unit, velocity_convention="radio")
    assert main(argv) == 0
    want = cube.fits.moment(order)
    with fits.open(out) as hl:
        np.testing.assert_allclose(hl[0].data, want.values.astype(np.float32), rtol=1e-6)
        assert hl[0].header["BUNIT"] == want.attrs["units"]
    if unit is None:  # CRVAL + CDELT·(i + 1 - CRPIX) would be wrong here
        step = np.diff(cube[cube.fits.spectral_dim].values)
        assert not np.allclose(step, step[0], rtol=1e-9)


def test_moment_unit_options_are_checked(sky_cube, tmp_path, capsys):
    out = tmp_path / "m.fits"
    base = ["moment", str(sky_cube), "--out", str(out), "--quiet"]
    assert main([*base, "--velocity-convention", "radio"]) == 1
    assert "goes with --unit" in capsys.readouterr().err
    # FREQ to velocity without a rest frequency: the error says what to add
    assert main([*base, "--unit", "km/s", "--velocity-convention", "radio"]) == 1
    assert "RESTFRQ" in capsys.readouterr().err
    assert main([*base, "--unit", "GHz", "--axis", "0"]) == 1
    assert "leave --axis out" in capsys.readouterr().err
    # a velocity without a convention: the option to pass, and the file, not the keyword
    assert main([*base, "--unit", "km/s"]) == 1
    err = capsys.readouterr().err
    assert "--velocity-convention" in err
    assert "velocity_convention=" not in err
    assert f"{sky_cube.name}" in err
    assert "HDU 0" in err
    assert not out.exists()


def test_stats_prints_integers_as_integers(tmp_path, capsys):
    path = tmp_path / "ints.fits"
    fits.writeto(path, np.full((300, 2, 2), 7, np.int16))
    assert main(["stats", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "  count  1200\n" in out
    assert "  sum    8400\n" in out
    assert "e+" not in out


@pytest.mark.parametrize("suffix", [".fits", ".npy", ".npz"])
def test_stats_axis_summarises_large_arrays_and_saves_them(cube, tmp_path, capsys, suffix):
    path, data = cube
    out = tmp_path / f"map{suffix}"
    stat = ["--stat", "mean"] if suffix == ".npy" else []
    argv = ["stats", str(path), "--axis", "0", "--quiet", "--output", str(out), *stat]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "(--output saves it)" in text  # 5 × 4 values: a summary, not the array
    assert "[[" not in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = {"count": np.sum(~np.isnan(data), 0), "mean": np.nanmean(data, 0),
                "max": np.nanmax(data, 0)}  # fmt: skip
    if suffix == ".npy":
        got = {"mean": np.load(out)}
    elif suffix == ".npz":
        got = dict(np.load(out))
    else:
        with fits.open(out) as hl:
            got = {h.name.lower(): h.data for h in hl[1:]}
    assert set(got) >= {"mean"}
    for name, value in got.items():
        if name in want:
            np.testing.assert_allclose(value, want[name], rtol=1e-6)
    assert main(argv) == 1  # exists
    assert "--overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0


def test_stats_output_options_are_checked(cube, tmp_path, capsys):
    path, _ = cube
    base = ["stats", str(path), "--quiet", "--output"]
    assert main([*base, str(tmp_path / "m.npy")]) == 1
    assert "pass --stat" in capsys.readouterr().err
    assert main([*base, str(tmp_path / "m.txt")]) == 1
    assert ".fits, .npy, .npz" in capsys.readouterr().err
    assert main(["stats", str(path), "--stat", "median"]) == 1
    assert "choose from count" in capsys.readouterr().err
    assert main(["stats", str(path), "--quiet", "--stat", "max", "--axis", "1,2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("  max    array (6,): [")
    one = tmp_path / "one.fits"
    assert main(["stats", str(path), "--quiet", "--stat", "max", "--axis", "0", "--output",
                 str(one)]) == 0  # fmt: skip
    assert fits.getdata(one).shape == (5, 4)  # one statistic: the primary HDU


# (the ``counted`` fixture: tests/conftest.py)


def _chunked_cube(tmp_path):
    import dfits

    data = np.random.default_rng(4).random((6, 50, 40)).astype(np.float32)
    data[0, 0, 0] = np.nan
    header = fits.Header([("CTYPE3", "FREQ"), ("CRVAL3", 1e9), ("CDELT3", 1e6), ("CRPIX3", 1.0)])
    path = tmp_path / "chunked.fits"
    fits.writeto(path, data, header)
    return path, dfits.open(path)[0]


def test_stats_and_moment_count_their_kernel_passes(tmp_path, counted, capsys):
    """``moment``: one weighted-sums pass per chunk; ``stats``: its six statistics in at most
    four passes per chunk (sums and counts unless the chunk's moments came first, moments,
    maximum, minimum). Nothing decodes."""
    import dask

    path, hdu = _chunked_cube(tmp_path)
    with dask.config.set({"array.chunk-size": "8KiB"}):
        stats_chunks = hdu.data.npartitions
        moment_chunks = hdu.to_dask(reduce_axis=0).npartitions
        assert main(["stats", str(path), "--quiet"]) == 0
        # sums and counts come from the moments' memo where that pass ran first (the threads
        # scheduler's order decides: none at all is possible)
        assert {"moments", "extrema"} <= set(counted) <= {"sum_count", "moments", "extrema"}
        assert counted.get("sum_count", 0) <= stats_chunks
        assert (counted["moments"], counted["extrema"]) == (stats_chunks, 2 * stats_chunks)
        counted.clear()
        out = tmp_path / "m1.fits"
        assert main(["moment", str(path), "--order", "1", "--out", str(out), "--quiet"]) == 0
        assert counted == {"weighted_sums": moment_chunks}
    assert stats_chunks > 2
    assert moment_chunks > 1


# -- docs/cli.md lists every option of every subcommand, with the parser's defaults ---------

#: the generated part of docs/cli.md lies between these lines
DOC_BEGIN = "<!-- options: generated from dfits.cli's parser; tests/test_cli.py checks it -->"
DOC_END = "<!-- end of options -->"


def _default(action) -> str:
    import argparse

    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    if action.default is None or action.required:
        return "—"
    return f"`{action.default}`"


def options_markdown() -> str:
    """The options of every subcommand as markdown tables, from the parser itself."""
    from dfits.cli import _parser

    parser = _parser()
    (sub,) = (a for a in parser._actions if a.choices and a.dest == "command")
    out = []
    for name, p in sub.choices.items():
        out += [f"### `dfits {name}`", "", "| argument | default | meaning |", "|---|---|---|"]
        for a in p._actions:
            if "--help" in a.option_strings:
                continue
            flag = ", ".join(a.option_strings) or a.dest.upper()
            if a.nargs == "+":
                flag += " ..."
            if a.choices is not None:
                flag += " {" + ",".join(map(str, a.choices)) + "}"
            text = (a.help or "").replace("|", "\\|") + (" (required)" if a.required else "")
            out.append(f"| `{flag}` | {_default(a)} | {text} |")
        out.append("")
    return "\n".join(out)


def test_docs_list_every_option_with_its_default():
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    begin, end = doc.index(DOC_BEGIN) + len(DOC_BEGIN), doc.index(DOC_END)
    want = options_markdown()
    assert doc[begin:end].strip() == want.strip(), f"docs/cli.md's options should read:\n{want}"
