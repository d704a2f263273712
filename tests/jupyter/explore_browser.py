"""What the explorer's browser tests share: the tools they need (skipping, saying why, where
one is missing), a free port, the notebook they serve, headless Chromium, and the waits and
reads of what the widget drew (its canvas and spectrum keep their state in ``data-*``)."""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest

Q = "document.querySelector"


def tools(*servers: str) -> tuple[str, str]:
    """Chromium and chromedriver's paths; skips unless they, selenium, anywidget and the
    Python packages ``servers`` are installed."""
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chrome or not driver:
        pytest.skip("chromium and chromium-driver are not installed (apt-get install them)")
    pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium)")
    for name in servers:
        pytest.importorskip(name, reason=f"{name} is not installed (pip install {name})")
    pytest.importorskip("anywidget", reason="anywidget is not installed")
    return chrome, driver


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(folder: Path, cube: str, view: int) -> Path:
    """``explore.ipynb`` in ``folder``: one cell that shows ``dfits.explore(cube)``."""
    import nbformat

    code = f"import dfits\nw = dfits.explore({cube!r}, view=({view}, {view}))\nw"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "explore.ipynb"
    nbformat.write(nb, path)
    return path


def chromium(chrome: str, driver: str, size: str = "1100,1000"):
    """Headless Chromium driven by selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={size}"):  # fmt: skip
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=opts)


def wait_for_port(port: int, server, log: Path, deadline: float) -> None:
    """Until the server listens on ``port``; fails with its log if it exits first."""
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None:
                pytest.fail(log.read_text()[-3000:])
            time.sleep(0.5)
    pytest.fail(f"the server did not listen on port {port}\n{log.read_text()[-3000:]}")


def wait(browser, script: str, deadline: float, log: Path | None = None):
    """Until ``script`` returns something true: that value (fails with the widget's error
    and the server's log at ``deadline``)."""
    while time.monotonic() < deadline:
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    text = log.read_text()[-3000:] if log else ""
    errors = browser.execute_script(f"return {Q}('.dfx-error')?.textContent")
    pytest.fail(f"timed out waiting for: {script}\nwidget error: {errors}\n{text}")


def draws(browser) -> int:
    return int(browser.execute_script(f"return +{Q}('.dfx-canvas').dataset.draws"))


def pixels(browser) -> str:
    return browser.execute_script(f"return {Q}('.dfx-canvas').toDataURL()")


def move_slider(browser, slider, move: int, expected: int) -> None:
    """One arrow key on the slider, then until the canvas shows channel ``expected``."""
    from selenium.webdriver.common.keys import Keys

    before = draws(browser)
    slider.send_keys(Keys.ARROW_LEFT if move < 0 else Keys.ARROW_RIGHT)
    wait(
        browser,
        f"return +{Q}('.dfx-canvas').dataset.draws > {before} && "
        f"+{Q}('.dfx-canvas').dataset.channel === {expected}",
        time.monotonic() + 30,
    )


def spectrum_at(browser, canvas, dx: int, dy: int) -> tuple[tuple[int, ...], list]:
    """Click the canvas at (dx, dy) from its centre: the file pixel and the drawn values."""
    import json

    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element_with_offset(canvas, dx, dy).click().perform()
    where = wait(browser, f"return {Q}('.dfx-spectrum').dataset.box === '0' && "
                 f"{Q}('.dfx-spectrum').dataset.where", time.monotonic() + 30)  # fmt: skip
    values = json.loads(browser.execute_script(f"return {Q}('.dfx-spectrum').dataset.values"))
    return tuple(int(v) for v in where.split(",")), values
