"""Kill a writer mid-write, deterministically: the script prints ``started`` at the point to
kill and blocks on stdin, so the test never guesses with a sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import dfits


def kill_when_started(script: str, *args: str) -> None:
    """Run ``script`` (Python source) with ``args``; SIGKILL it once it prints ``started``."""
    env = {**os.environ, "PYTHONPATH": str(Path(dfits.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stdin.close()
        proc.stdout.close()
