"""Header-scan progress for slow (remote) many-HDU files: quiet for the first 2 seconds.

:func:`dfits.open` passes a :class:`ScanProgress` to the layout scan for remote files. Nothing
is shown for scans that finish quickly; past ``delay`` seconds a tqdm bar (when tqdm is
installed) or a one-line counter on stderr reports bytes and HDUs scanned.

:func:`interactive` is the one rule for showing progress by default, everywhere (scan, CLI,
:func:`dfits.jupyter.compute`): only where someone watches — a terminal or a Jupyter kernel.
Redirected to a log file, ``\r`` updates would be dozens of lines for a few seconds' work.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

__all__ = ["ScanProgress", "interactive"]


def interactive(stream: TextIO | None = None) -> bool:
    """True when progress written to ``stream`` (default ``sys.stderr``) is seen live.

    That is a terminal, or any output of a Jupyter kernel (which renders ``\r`` updates
    in place). Never imports IPython: a kernel has imported it already.
    """
    stream = sys.stderr if stream is None else stream
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        pass
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return getattr(shell, "kernel", None) is not None


class ScanProgress:
    """Callable ``(offset, size, hdus)`` progress reporter for :func:`dfits.format.layout.scan`."""

    def __init__(self, delay: float = 2.0, out: TextIO | None = None) -> None:
        self.delay = delay
        self.out = out
        self._start = time.monotonic()
        self._bar: Any = None
        self._shown = False

    def __call__(self, offset: int, size: int | None, hdus: int) -> None:
        if not self._shown and time.monotonic() - self._start < self.delay:
            return
        out = self.out if self.out is not None else sys.stderr
        self._shown = True
        if self._bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                self._bar = False
            else:
                self._bar = tqdm(
                    total=size,
                    unit="B",
                    unit_scale=True,
                    desc="scanning headers",
                    file=out,
                    leave=False,
                )
        if self._bar:
            self._bar.update(offset - self._bar.n)
            self._bar.set_postfix(hdus=hdus)
            return
        total = f" of {size / 1e6:.1f} MB" if size else ""
        out.write(f"\rdfits: scanned {hdus} HDUs, {offset / 1e6:.1f} MB{total}")
        if size is not None and offset >= size:
            out.write("\n")
        out.flush()
