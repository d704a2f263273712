"""Kernels compiled once per machine: Numba's on-disk cache, made safe for dfits' variants.

A kernel's loop body is built by a ``functools.cache``-d factory for one *variant* (encoding
kind and options), as an ``inline="always"`` function closing over the variant's loaders.
Numba cannot cache such closures across processes: its cache key hashes the closure's cells,
and a dispatcher pickles with a random per-process id, so each process would miss and add
another entry. :func:`entry` therefore compiles the body through a *top-level* template
(:func:`_call1` ... :func:`_call14`, no closure) that calls ``body`` as a global; Numba inlines
the body at its IR level, so the compiled code is the one the body alone compiles to.

What the cache key covers, and where:

* the template's bytecode, the argument types, the CPU (name and features), the Numba and
  Python versions: Numba's own key;
* the variant: the factory's name and arguments, spelled into the function's name, which names
  the cache files;
* every line the inlined code depends on: a digest of the sources of ``dfits.kernels`` and of
  the Numba and llvmlite versions, also in the name (Numba only watches the template's file).

Numba writes index and data files atomically (a temporary file, then ``os.replace``), so
readers never see half a file. It updates an index by reading it, adding a signature and
writing it back, numbering data files in the order signatures arrive: two processes adding
*different* signatures of one variant at once could lose an entry, or leave it pointing at the
other's data file. So a variant compiles with explicit signatures (never behind our back, at
call time) under an exclusive lock file beside its cache files: processes filling one variant
take turns, and the later ones find the entry made and load it.

Where the cache lives is Numba's choice: ``NUMBA_CACHE_DIR`` when set, else ``__pycache__``
beside this file, else the user-wide directory (``~/.cache/numba``). Where none is writable (a
read-only install), kernels compile in memory, silently. An entry that cannot be loaded
(truncated, corrupt) is deleted and compiled again, with one warning per process.

Entries of older dfits (or Numba) versions carry another fingerprint and are never loaded
again: :func:`prune` (run by ``dfits warm``) removes them, :func:`clear` (``dfits warm
--clear``) removes every dfits entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.resources
import os
import re
import threading
import types
import warnings
from collections.abc import Iterator
from typing import Any

import numba

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from dfits.errors import DfitsWarning
from dfits.kernels._compile import FASTMATH

__all__ = ["Kernel", "cache_dir", "clear", "entry", "fingerprint", "prune"]

#: Set per template: the loop body the template calls (see the module docstring).
body: Any = None

_warned = False
_fingerprint: str | None = None


def _call1(a):
    return body(a)


def _call2(a, b):
    return body(a, b)


def _call3(a, b, c):
    return body(a, b, c)


def _call4(a, b, c, d):
    return body(a, b, c, d)


def _call5(a, b, c, d, e):
    return body(a, b, c, d, e)


def _call6(a, b, c, d, e, f):
    return body(a, b, c, d, e, f)


def _call7(a, b, c, d, e, f, g):
    return body(a, b, c, d, e, f, g)


def _call8(a, b, c, d, e, f, g, h):
    return body(a, b, c, d, e, f, g, h)


def _call9(a, b, c, d, e, f, g, h, i):
    return body(a, b, c, d, e, f, g, h, i)


def _call10(a, b, c, d, e, f, g, h, i, j):
    return body(a, b, c, d, e, f, g, h, i, j)


def _call11(a, b, c, d, e, f, g, h, i, j, k):
    return body(a, b, c, d, e, f, g, h, i, j, k)


def _call12(a, b, c, d, e, f, g, h, i, j, k, q):
    return body(a, b, c, d, e, f, g, h, i, j, k, q)


def _call13(a, b, c, d, e, f, g, h, i, j, k, q, m):
    return body(a, b, c, d, e, f, g, h, i, j, k, q, m)


def _call14(a, b, c, d, e, f, g, h, i, j, k, q, m, n):
    return body(a, b, c, d, e, f, g, h, i, j, k, q, m, n)


_TEMPLATES = {
    f.__code__.co_argcount: f
    for f in (_call1, _call2, _call3, _call4, _call5, _call6, _call7, _call8, _call9, _call10,
              _call11, _call12, _call13, _call14)
}  # fmt: skip


def fingerprint() -> str:
    """Digest of everything compiled kernels depend on beyond their own bytecode.

    The sources of ``dfits.kernels`` (the inlined loaders, swaps and loops live in several
    files) and the Numba and llvmlite versions. Computed once per process.
    """
    global _fingerprint
    if _fingerprint is None:
        h = hashlib.sha256()
        for dist in ("numba", "llvmlite"):
            h.update(importlib.metadata.version(dist).encode())
        pkg = importlib.resources.files("dfits.kernels")
        for item in sorted(pkg.iterdir(), key=lambda p: p.name):
            if item.name.endswith(".py"):
                h.update(item.name.encode() + b"\0" + item.read_bytes())
        _fingerprint = h.hexdigest()[:12]
    return _fingerprint


def cache_dir() -> str | None:
    """The directory Numba caches dfits' kernels in, or None where none is writable."""
    try:
        return numba.njit(cache=True)(_call6).stats.cache_path
    except RuntimeError:
        return None


#: A dfits cache file: Numba's index (``.nbi``) or data (``.N.nbc``) of a kernel compiled through
#: a template of this module, or the lock beside them; group 1 is the fingerprint in its name.
_ENTRY = re.compile(r"^_cache\..*-([0-9a-f]{12})-\d+\.py\d+(?:\.\d+)?\.nb[ic]$")
_LOCK = re.compile(r"^.*-([0-9a-f]{12})\.lock$")
#: Entries of the ASCII-table parsers from before they moved onto the templates (Numba's own
#: naming: module, function, line): never loaded again
_LEGACY = re.compile(r"^asciiparse\.[A-Za-z_]+-\d+\.py\d+(?:\.\d+)?\.nb[ic]$")


def _entries() -> Iterator[tuple[str, str]]:
    """``(path, fingerprint)`` of every dfits cache file in :func:`cache_dir`."""
    where = cache_dir()
    if where is None or not os.path.isdir(where):
        return
    for name in os.listdir(where):
        match = _ENTRY.match(name) or _LOCK.match(name)
        if match:
            yield os.path.join(where, name), match.group(1)
        elif _LEGACY.match(name):
            yield os.path.join(where, name), "legacy"


def _remove(paths: list[str]) -> int:
    removed = 0
    for path in paths:
        with contextlib.suppress(OSError):  # gone already, or a read-only cache
            os.remove(path)
            removed += 1
    return removed


def prune() -> int:
    """Remove the cache files that older dfits versions (or Numba versions) left; their count.

    A kernel's cache files carry :func:`fingerprint` in their names, so files of another
    fingerprint can never be loaded again by this install: they only take disk space (a few
    MB per version). Entries of other Python versions (``.py312`` beside ``.py311``) are kept:
    another interpreter may share the directory.
    """
    current = fingerprint()
    return _remove([path for path, fp in _entries() if fp != current])


def clear() -> int:
    """Remove every dfits kernel from the on-disk cache (any version); the files' count.

    Processes running now keep the kernels they loaded; later ones compile them again.
    """
    return _remove([path for path, _ in _entries()])


def entry(body_: Any, *variant: Any, fastmath: bool = True) -> Kernel:
    """A cached kernel that runs ``body_`` (an ``inline="always"`` function) for one variant.

    ``variant`` must be every argument of the factory that built ``body_``: it names the cache
    files, so two variants never share one. ``fastmath=False`` compiles in strict IEEE
    arithmetic (parsers whose one division must stay correctly rounded).
    """
    return Kernel(body_, variant, fastmath=fastmath)


class Kernel:
    """A kernel variant, called like the body it wraps; compiled or loaded on first use.

    Calls go straight to a Numba dispatcher built with explicit signatures (so it never
    compiles behind our back). Arguments of new types make it raise ``TypeError``; the
    dispatcher is then rebuilt with the new signature added, under a lock (see the module
    docstring), loading the others from the cache. Thread-safe.
    """

    def __init__(self, body_: Any, variant: tuple, *, fastmath: bool = True) -> None:
        self._body = body_
        self._opts = {"nogil": True, "fastmath": set(FASTMATH) if fastmath else False}
        self._opts["error_model"] = "numpy"
        if not fastmath:  # the flags are not in the cache key: they must be in the name
            variant = (*variant, "strict")
        self._template = _TEMPLATES[body_.py_func.__code__.co_argcount]
        name = f"{body_.py_func.__module__.rsplit('.', 1)[-1]}.{body_.py_func.__qualname__}"
        name = name.replace(".<locals>.", ".")
        self._name = _safe(f"{name}[{'-'.join(_token(v) for v in variant)}]")
        self._run: Any = self._unready
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<dfits kernel {self._name}>"

    def __call__(self, *args: Any) -> Any:
        run = self._run
        try:
            return run(*args)
        except TypeError:
            # Numba's "no matching definition": new argument types (kernels raise nothing).
            # Another thread may have added them meanwhile (dask calls one kernel from
            # several threads at once): then the dispatcher has changed, so call it again.
            if not self._add(args) and self._run is run:
                raise
        return self._run(*args)

    @property
    def signatures(self) -> list:
        """The argument types compiled (or loaded) so far, as a Numba dispatcher lists them."""
        return list(getattr(self._run, "signatures", ()))

    def inspect_asm(self, signature: Any) -> str:
        """The machine code of one signature (what the vectorisation tests read)."""
        asm = self._run.inspect_asm(signature)
        if "\t.text" not in asm:
            # loaded from the cache: Numba keeps no assembly for that, so compile one copy
            fn = types.FunctionType(self._template.__code__, {"body": self._body}, self._name)
            asm = numba.njit([signature], **self._opts)(fn).inspect_asm(signature)
        return asm

    def _unready(self, *args: Any) -> Any:
        raise TypeError("not compiled yet")

    def _add(self, args: tuple) -> bool:
        """Make the dispatcher take the types of ``args``; False if it already did."""
        sig = tuple(numba.typeof(a) for a in args)
        with self._lock:
            known = list(getattr(self._run, "signatures", ()))
            if any(tuple(s) == sig for s in known):
                return False
            self._run = self._compile([*known, sig])
        return True

    def _compile(self, sigs: list) -> Any:
        qualname = f"{self._name}-{fingerprint()}"
        fn = types.FunctionType(
            self._template.__code__, {"body": self._body, "__name__": __name__}, qualname
        )
        fn.__qualname__ = qualname
        opts = self._opts
        try:
            probe = numba.njit(cache=True, **opts)(fn)  # no signature: compiles nothing
        except RuntimeError:
            # no writable cache location (a read-only install): compile in memory, silently
            return numba.njit(**opts)(fn)  # compiles each new signature in memory
        where = probe.stats.cache_path
        with _file_lock(os.path.join(where, f"{qualname}.lock")):
            try:
                # with explicit signatures Numba loads or compiles them now, and only them
                return numba.njit(sigs, cache=True, **opts)(fn)
            except Exception as err:  # a corrupt entry fails in pickle, llvmlite, anywhere
                _warn_once(qualname, err)
            # the entry is unreadable: drop its files (named after this variant alone) and
            # compile afresh, so that the next process finds a good entry
            for name in os.listdir(where):
                if qualname in name and name.endswith((".nbi", ".nbc")):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(where, name))
            try:
                return numba.njit(sigs, cache=True, **opts)(fn)
            except Exception:  # still unreadable or unwritable: this process only
                return numba.njit(**opts)(fn)


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` across processes (where ``fcntl`` exists).

    Numba updates an index by reading it, adding an entry and replacing it: two processes
    adding different signatures at once could lose one entry or point it at the other's
    data file. The lock makes those updates take turns; readers need none (files are
    replaced atomically).
    """
    if fcntl is None:  # Windows: Numba's own guards only
        yield
        return
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _warn_once(name: str, err: Exception) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"dfits: the compiled-kernel cache entry for {name} could not be loaded "
            f"({type(err).__name__}: {err}); it is compiled again and replaced.",
            DfitsWarning,
            stacklevel=4,
        )


def _token(value: Any) -> str:
    if isinstance(value, tuple):  # a Kind: its fields
        return "_".join(_token(v) for v in value)
    return str(value)


def _safe(text: str) -> str:
    # only characters that every file system takes in a file name
    return re.sub(r"[^A-Za-z0-9_.\[\]-]", "_", text)
