"""The demo (README's first command) on a small cube: its results are numpy's."""

from __future__ import annotations

import re
import warnings

import numpy as np
from astropy.io import fits

from dfits import demo


def test_demo_results_match_numpy(tmp_path, capsys):
    assert demo.main(["--shape", "16,40,48", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    data = fits.getdata(tmp_path / "demo_cube.fits").astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mom0 = np.nansum(data, axis=0) * 0.5e6 / 1e9
        peaks = np.nanargmax(data, axis=0)
        spec = np.nanmean(data, axis=(1, 2))
    iy, ix = np.unravel_index(np.nanargmax(mom0), mom0.shape)
    assert f"at (y={iy}, x={ix})" in out
    got = re.search(r"peak-channel map \(40, 48\): channel (\d+) at the moment-0 maximum", out)
    assert got is not None
    assert int(got.group(1)) == peaks[iy, ix]
    assert f"line peak at channel {int(np.nanargmax(spec))}" in out
