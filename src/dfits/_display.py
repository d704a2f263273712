"""Where the display layer plugs into the objects below it: HTML reprs and quick looks.

The contract: lower layers (:mod:`dfits.file`, :mod:`dfits.format.header`) never import
:mod:`dfits.jupyter`; their ``_repr_html_`` asks :func:`html_for`, and figure methods
(``HDU.quicklook``, the xarray accessor's ``quicklook`` and ``plot_channel_maps``) ask
:func:`figure`. :mod:`dfits.jupyter` fills the registry when imported (``import dfits``
imports its light registration module). With nothing registered, ``_repr_html_`` returns None
and Jupyter shows the plain text repr.

Types are registered by their dotted name (as IPython's ``for_type_by_name`` does), so that
registering a rendering for ``dfits.file.HDU`` does not import :mod:`dfits.file` (nor the dask
it loads): ``import dfits`` stays cheap. This module imports only :mod:`dfits.errors`.

Examples
--------
>>> class Thing:
...     pass
>>> html_for(Thing()) is None
True
>>> register_html(Thing, lambda obj: "<b>thing</b>")
>>> html_for(Thing())
'<b>thing</b>'
>>> unregister_html(Thing)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dfits.errors import UnsupportedError

__all__ = ["figure", "html_for", "register_figure", "register_html", "unregister_html"]

_HTML: dict[str, Callable[[Any], str]] = {}
_FIGURES: dict[str, Callable[..., Any]] = {}


def _name(cls: type | str) -> str:
    return cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"


def register_html(cls: type | str, func: Callable[[Any], str]) -> None:
    """Render instances of ``cls`` (a class or its dotted name) and its subclasses with ``func``.

    Parameters
    ----------
    cls : type or str
        The class, or ``"module.QualName"`` to register without importing the module.
    func : callable
        ``func(obj) -> str``: the HTML shown by Jupyter.
    """
    _HTML[_name(cls)] = func


def unregister_html(cls: type | str) -> None:
    """Forget the rendering of ``cls`` (no error when there is none)."""
    _HTML.pop(_name(cls), None)


def html_for(obj: Any) -> str | None:
    """The registered HTML of ``obj`` (nearest class in its MRO first), or None."""
    if not _HTML:
        return None
    for cls in type(obj).__mro__:
        func = _HTML.get(_name(cls))
        if func is not None:
            return func(obj)
    return None


def register_figure(name: str, func: Callable[..., Any]) -> None:
    """Provide the figure ``name`` (``"quicklook"``, ``"channel_maps"``): ``func(hdu, ...)``."""
    _FIGURES[name] = func


def figure(name: str, hdu: Any, *args: Any, **kwargs: Any) -> Any:
    """Draw the registered figure ``name`` of ``hdu`` (an HDU or HDU-like view).

    Raises
    ------
    UnsupportedError
        When no display layer registered it (:mod:`dfits.jupyter` was not imported).
    """
    func = _FIGURES.get(name)
    if func is None:
        raise UnsupportedError(
            f"no {name!r} figure is registered; import dfits.jupyter to provide one"
        )
    return func(hdu, *args, **kwargs)
