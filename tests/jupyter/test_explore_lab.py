"""The cube explorer in JupyterLab 4 and Notebook 7: each serves a notebook that explores a
generated cube (headless, a free port, a token); headless Chromium (selenium) opens it, runs
it, and checks that the widget draws, that a slider move changes the canvas and labels the
channel with its WCS velocity, and that a click draws ``hdu.section[:, y, x]``.

The Voila test (``test_explore_browser.py``) covers the rest of the widget; this one proves
the anywidget loads and talks to its kernel in the two front ends users run. Slow (a front
end's start and first page take 30-40 s each here): ``-m slow``. Skips, saying why,
where Chromium, chromedriver, selenium, anywidget or the front end is missing.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dfits.demo import make_cube
from dfits.jupyter.explore_model import ExploreModel

from . import explore_browser as b

pytestmark = pytest.mark.slow

SHAPE = (16, 256, 256)
VIEW = 256
VENV_BIN = Path(sys.executable).parent
FRONT_ENDS = {
    # package, command, its option that sets window.jupyterapp, the notebook's page
    "lab": ("jupyterlab", "lab", "LabApp", "lab/tree/explore.ipynb"),
    "notebook": ("notebook", "notebook", "JupyterNotebookApp", "notebooks/explore.ipynb"),
}


@pytest.fixture(scope="module", params=sorted(FRONT_ENDS))
def page(request, tmp_path_factory):
    package, command, app, route = FRONT_ENDS[request.param]
    chrome, driver = b.tools(package, "ipykernel")
    folder = tmp_path_factory.mktemp(f"explore-{command}")
    cube = make_cube(str(folder / "cube.fits"), SHAPE)
    b.notebook(folder, cube, VIEW)
    port, token = b.free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        # nothing of the user's Jupyter settings, and nothing written into them
        "JUPYTER_CONFIG_DIR": str(folder / "config"),
        "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(folder / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(folder / "workspaces"),
    }
    log_path = folder / "server.log"
    log = open(log_path, "wb")  # noqa: SIM115  (closed at teardown)
    server = subprocess.Popen(
        [str(VENV_BIN / "jupyter"), command, "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
         f"--{app}.expose_app_in_browser=True", "--ServerApp.allow_root=True",
         "--LabServerApp.extension_manager=readonly"],  # never asks PyPI
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    browser = b.chromium(chrome, driver)
    try:
        deadline = time.monotonic() + 180
        b.wait_for_port(port, server, log_path, deadline)
        browser.get(f"http://127.0.0.1:{port}/{route}?token={token}")
        _run_notebook(browser, deadline, log_path)
        yield browser, cube
    finally:
        browser.quit()
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _run_notebook(browser, deadline: float, log: Path) -> None:
    """Run all cells once the notebook's kernel is idle, then until the explorer draws."""
    panel = "window.jupyterapp?.shell?.currentWidget"
    b.wait(browser, f"const p = {panel}; return !!p?.sessionContext?.isReady && "
           "p.sessionContext.session?.kernel?.status === 'idle'", deadline, log)  # fmt: skip
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    b.wait(browser, f"return +({b.Q}('.dfx-canvas')?.dataset.draws || 0) >= 1", deadline, log)


def test_explorer_draws_moves_and_clicks(page):
    browser, cube = page
    model = ExploreModel(cube, view=(VIEW, VIEW))
    canvas = browser.find_element("css selector", ".dfx-canvas")
    first = b.pixels(browser)
    start = int(canvas.get_attribute("data-channel"))
    assert canvas.get_attribute("data-label") == model.channel_label(start)

    slider = browser.find_element("css selector", ".dfx-slider")
    b.move_slider(browser, slider, -1, start - 1)
    assert b.pixels(browser) != first
    assert canvas.get_attribute("data-label") == model.channel_label(start - 1)
    label = browser.find_element("css selector", ".dfx-label").text
    assert label == model.channel_label(start - 1)
    assert "km/s" in label

    (y, x), drawn = b.spectrum_at(browser, canvas, 30, -40)
    want = model.source.section[:, y, x]
    np.testing.assert_array_equal(np.array(drawn, dtype=float), want.astype(float))
