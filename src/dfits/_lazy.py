"""Deferred imports, so that ``dfits.open`` and graph building never load Numba.

Opening a file, walking its headers and building a dask graph should not pay the ~0.4 s
import of numba/llvmlite (nor its ~50 MiB): the kernels load on the first value actually
decoded or reduced, which on a cluster happens on the workers only. A module that calls
kernels only inside its tasks names them through :func:`lazy_module` (or :data:`kernels`).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["kernels", "lazy_module"]


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


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it at its first attribute lookup.

    >>> fieldsums = lazy_module("dfits.kernels.fieldsums")
    >>> fieldsums.KINDS["E"]
    4
    """
    return _LazyModule(name)


kernels: Any = lazy_module("dfits.kernels")
