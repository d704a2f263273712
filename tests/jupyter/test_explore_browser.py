"""The cube explorer in a real browser: Voila serves a notebook that explores a generated cube
on a local port, headless Chromium (selenium) moves the slider, clicks a pixel, drags a box and
changes the stretch, checks what is drawn against ``hdu.section`` and the WCS labels, saves the
screenshots docs/explore.md shows, and prints the latencies measured inside the page
(``performance.now()`` from input event to drawn canvas).

Skips, saying why, where Chromium, chromedriver, selenium or Voila is missing (``./run test``
installs Debian's ``chromium`` and ``chromium-driver`` where apt works).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import dfits
from dfits.demo import make_cube
from dfits.jupyter.explore_model import ExploreModel

from . import explore_browser as b

# float32: the "1k × 1k plane" figure. DFITS_EXPLORE_SHAPE="48,4096,4096" and
# DFITS_EXPLORE_VIEW=1024 measure other sizes (the docs' screenshots come from the default)
DEFAULT = ((48, 1024, 1024), 512)
SHAPE = tuple(int(v) for v in os.environ.get("DFITS_EXPLORE_SHAPE", "48,1024,1024").split(","))
VIEW = int(os.environ.get("DFITS_EXPLORE_VIEW", "512"))
RICE = os.environ.get("DFITS_EXPLORE_RICE", "") == "1"  # explore a RICE_1 copy of the cube
DOCS = Path(__file__).resolve().parents[2] / "docs" / "explore"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    chrome, driver = b.tools("voila")
    folder = tmp_path_factory.mktemp("explore")
    cube = make_cube(str(folder / "cube.fits"), SHAPE)
    if RICE:
        plain, cube = cube, str(folder / "rice.fits")
        dfits.to_fits(dfits.open(plain)[0].data, cube, compression="RICE_1")
        os.remove(plain)
    nb = b.notebook(folder, cube, VIEW)
    port = b.free_port()
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = open(folder / "voila.log", "wb")  # noqa: SIM115  (closed at teardown)
    server = subprocess.Popen(
        [str(VENV_BIN / "voila"), str(nb), "--no-browser", f"--port={port}",
         "--Voila.ip=127.0.0.1", "--show_tracebacks=True"],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    browser = b.chromium(chrome, driver)
    try:
        _open(browser, port, server, folder)
        yield browser, cube
    finally:
        browser.quit()
        server.terminate()
        server.wait(30)
        log.close()


def _open(browser, port: int, server, folder: Path) -> None:
    deadline = time.monotonic() + 150
    b.wait_for_port(port, server, folder / "voila.log", deadline)
    browser.get(f"http://127.0.0.1:{port}/")
    b.wait(browser, "return (+document.querySelector('.dfx-canvas')?.dataset.draws || 0) >= 1",
           deadline, folder / "voila.log")  # fmt: skip


def _shot(browser, name: str) -> None:
    """A screenshot of the widget for the docs, as a small palette PNG (noise compresses
    badly: 64 colours, 3/4 scale keep each under 200 KB)."""
    from PIL import Image

    if (SHAPE, VIEW) != DEFAULT or RICE:
        return
    DOCS.mkdir(parents=True, exist_ok=True)
    path = DOCS / name
    browser.find_element("css selector", ".dfits-explore").screenshot(str(path))
    with Image.open(path) as img:
        small = img.convert("RGB").resize((img.width * 3 // 4, img.height * 3 // 4))
    small.quantize(64).save(path, optimize=True)
    assert path.stat().st_size < 200_000, f"{name}: {path.stat().st_size} bytes"


def test_explorer_in_a_real_browser(page):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    browser, cube = page
    model = ExploreModel(cube, view=(VIEW, VIEW))
    section = model.source.section  # the image HDU (HDU 1 of a compressed file)
    q = b.Q
    canvas = browser.find_element("css selector", ".dfx-canvas")
    first = b.pixels(browser)
    start = int(canvas.get_attribute("data-channel"))

    # the slider: one plane per move (down 20 channels and back), label = the channel's
    # velocity from the WCS
    slider = browser.find_element("css selector", ".dfx-slider")
    expected, moves = start, min(20, start)
    for move in [-1] * moves + [1] * moves:
        expected += move
        b.move_slider(browser, slider, move, expected)
        if expected == start - moves:
            assert b.pixels(browser) != first
            assert canvas.get_attribute("data-label") == model.channel_label(expected)
    assert canvas.get_attribute("data-label") == model.channel_label(start)
    assert browser.find_element("css selector", ".dfx-label").text == model.channel_label(start)
    _shot(browser, "channel.png")

    # a click: the drawn spectrum is hdu.section[:, y, x]
    (y, x), drawn = b.spectrum_at(browser, canvas, 40, -60)
    want = section[:, y, x]
    np.testing.assert_array_equal(np.array(drawn, dtype=float), want.astype(float))
    assert SHAPE[1] // 2 < y < SHAPE[1]  # above the centre: origin lower left
    _shot(browser, "spectrum.png")

    # a box: its mean spectrum
    ActionChains(browser).move_to_element_with_offset(canvas, -80, -80).click_and_hold() \
        .move_by_offset(60, 50).release().perform()  # fmt: skip
    where = b.wait(browser, f"return {q}('.dfx-spectrum').dataset.box === '1' && "
                  f"{q}('.dfx-spectrum').dataset.where", time.monotonic() + 30)  # fmt: skip
    y0, y1, x0, x1 = (int(v) for v in where.split(","))
    assert y1 > y0
    assert x1 > x0
    drawn = np.array(json.loads(browser.execute_script(
        f"return {q}('.dfx-spectrum').dataset.values")), dtype=float)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmean(section[:, y0:y1, x0:x1].astype(np.float64), axis=(1, 2))
    np.testing.assert_allclose(drawn, want, rtol=1e-6, equal_nan=True)
    _shot(browser, "box.png")

    # the stretch: redrawn in the browser, nothing read
    before, image = b.draws(browser), b.pixels(browser)
    Select(browser.find_element("css selector", ".dfx-stretch")).select_by_value("log")
    b.wait(browser, f"return {q}('.dfx-canvas').dataset.stretch === 'log' && "
          f"+{q}('.dfx-canvas').dataset.draws > {before}", time.monotonic() + 10)  # fmt: skip
    assert b.pixels(browser) != image
    _shot(browser, "stretch-log.png")

    lat = browser.execute_script(f"return {q}('.dfits-explore').__dfits.lat")
    planes = lat["plane"][-2 * moves :]
    stored = "RICE_1" if RICE else "float32"
    print(
        f"\nexplorer latencies in the browser, {SHAPE} {stored} cube, {VIEW}px view "
        f"(plane read strided x{-(-max(SHAPE[1:]) // VIEW)}):"
    )
    for kind in ("plane", "spectrum", "box", "cursor"):
        values = planes if kind == "plane" else lat[kind]
        if values:
            print(f"  {kind:8s} median {np.median(values):7.1f} ms  (n={len(values)})")
    assert len(planes) == 2 * moves
