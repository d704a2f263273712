"""Deferred import of :mod:`dfits.kernels`, so that ``dfits.open`` never loads Numba.

Opening a file and walking its headers should not pay the ~0.4 s import of numba/llvmlite;
the kernels load on the first value actually decoded or reduced.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["kernels"]


class _LazyModule:
    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)


kernels: Any = _LazyModule("dfits.kernels")
