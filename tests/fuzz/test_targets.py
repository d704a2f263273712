"""The coverage-guided fuzzer's targets and its runner (``./run fuzz --atheris``).

The targets run without atheris: every seed file and its mutations of one seed end quietly
or in a DfitsError. The runner needs atheris (optional); without it, it says how to get it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.atheris_run import main as atheris_main
from tests.fuzz.mutate import mutated
from tests.fuzz.seeds import seeds
from tests.fuzz.targets import open_and_read, parse_layout

ROOT = Path(__file__).resolve().parents[2]
HAVE_ATHERIS = importlib.util.find_spec("atheris") is not None


def test_layout_target_takes_seeds_and_mutations():
    for _, blob in seeds():
        parse_layout(blob)
    for case in range(200):
        parse_layout(mutated(37, case)[1])
    parse_layout(b"")


def test_open_target_takes_mutations(tmp_path):
    path = str(tmp_path / "case.fits")
    for case in range(20):
        open_and_read(mutated(37, case)[1], path)


def test_layout_target_raises_what_is_not_a_dfits_error(monkeypatch):
    # the harness must let escapes through (that is what atheris reports)
    import tests.fuzz.targets as targets

    def broken(*args, **kwargs):
        raise KeyError("escape")

    monkeypatch.setattr(targets, "scan", broken)
    with pytest.raises(KeyError):
        parse_layout(seeds()[0][1])


@pytest.mark.skipif(HAVE_ATHERIS, reason="atheris is installed")
def test_runner_without_atheris_says_how_to_get_it(capsys):
    assert atheris_main(["--", "-runs=1"]) == 2
    assert "pip install 'dfits[fuzz]'" in capsys.readouterr().err


@pytest.mark.skipif(not HAVE_ATHERIS, reason="atheris is not installed (pip install 'dfits[fuzz]')")
def test_atheris_layout_run_finds_nothing(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), *sys.path])}
    argv = ["--out", str(tmp_path), "--", "-runs=500", "-seed=1"]
    run = [sys.executable, "-m", "tests.fuzz.atheris_run", *argv]
    done = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 500 runs" in done.stderr
    assert not list(tmp_path.glob("crash-*"))
    assert any((tmp_path / "corpus-layout").iterdir())
