"""The table half of a fuzz case: every table route of dfits against astropy (issue 44).

:func:`read_tables` reads every table HDU through each route a user has, column by column
where the route is per column: ``hdu.column(name)``, ``hdu.data[name]``, ``hdu.read()``,
``hdu.data[rows]``, ``to_pandas()``, ``to_arrow()``, ``hdu.where`` and ``read(where=)``.
A route may raise a :class:`dfits.DfitsError` (noted, as for images), and its message must
name the file and the HDU (``unnamed`` fails the case). :func:`compare_tables` then holds
every value read against astropy's: the file's own table, or for a tile-compressed table
(ZTABLE) the plain table :func:`tests.fuzz.ztable.rebuild` decodes without dfits. Every
column kind is compared, none dropped.

The per-column comparison and astropy's known table quirks (the oracle rules) are in
:mod:`tests.fuzz.tableoracle`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import dfits
from tests.fuzz.tableoracle import as_numpy, equal, oracle_value

__all__ = ["TableRead", "compare_tables", "oracle_value", "read_tables"]

#: routes read per column (each its own compute; ``data[name]`` is checked to be the same
#: graph) and whole-table routes
COLUMN_ROUTES = ("column", "data[name]")
TABLE_ROUTES = ("read", "data[rows]", "to_pandas", "to_arrow", "read(where=)")


@dataclass
class TableRead:
    """What dfits read of one table HDU: per route, per column, the values."""

    columns: list[Any]
    routes: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: np.ndarray | None = None  # hdu.where's row numbers
    rule: str = ""  # the where expression
    unnamed: list[str] = field(default_factory=list)


def _named(err: Exception, path: str, index: int) -> bool:
    text = str(err)
    return os.path.basename(path) in text and f"HDU {index}" in text


def _route(read: TableRead, route: str, path: str, index: int, outcome: Any, call) -> Any:
    try:
        return call()
    except dfits.DfitsError as err:
        outcome.errors.append(f"HDU {index} {route}: {type(err).__name__}: {err}")
        if not _named(err, path, index):
            read.unnamed.append(f"HDU {index} {route}: {type(err).__name__}: {err}")
        return None


def _rule(columns: list[Any]) -> str:
    """A where expression on the first plain numeric or logical column ("" if none)."""
    for c in columns:
        if c.code in "PQ" or c.shape or c.dtype.kind not in "biuf":
            continue
        name = "`" + c.name.replace("`", "") + "`"
        return name if c.dtype.kind == "b" else f"{name} > 0"
    return ""


def _read_hdu(hdu: Any, path: str, outcome: Any) -> TableRead:
    i = hdu.index
    read = TableRead(list(hdu.columns))
    names = [c.name for c in read.columns]
    unique = [n for n in names if names.count(n) == 1]
    data = _route(read, "data", path, i, outcome, lambda: hdu.data)
    read.routes = {"column": _all_columns(hdu, unique)}
    for n in unique:
        if read.routes["column"]:
            break  # all read in one compute
        value = _route(read, f"column({n!r})", path, i, outcome, lambda n=n: _computed(hdu, n))
        if value is not None:
            read.routes["column"][n] = value
        if data is not None and n == unique[0]:
            # hdu.data[name] is hdu.column(name)'s graph (the same name: the same values);
            # one column says so, its dask graph costs milliseconds
            same = _route(
                read, f"data[{n!r}]", path, i, outcome, lambda n=n: _same_graph(hdu, data, n)
            )
            if same is False:
                read.unnamed.append(f"HDU {i}: data[{n!r}] is not the graph of column({n!r})")
    whole = {
        "read": hdu.read,
        "data[rows]": lambda: hdu.data[:],
        "to_pandas": hdu.to_pandas,
        "to_arrow": hdu.to_arrow,
    }
    for route, call in whole.items():
        value = _route(read, route, path, i, outcome, call)
        if value is not None:
            read.routes[route] = _per_column(route, value, read.columns)
    read.rule = _rule(read.columns)
    if read.rule:
        read.rows = _route(read, "where", path, i, outcome, lambda: hdu.where(read.rule))
        value = _route(read, "read(where=)", path, i, outcome, lambda: hdu.read(where=read.rule))
        if value is not None:
            read.routes["read(where=)"] = _per_column("read", value, read.columns)
    return read


def _computed(hdu: Any, name: str) -> Any:
    # one thread: the values are the scheduler's business, not the fuzz's (as the image walk)
    return _owned(hdu.column(name).compute(scheduler="sync"))


def _all_columns(hdu: Any, names: list[str]) -> dict[str, Any]:
    """Every column's hdu.column graph computed at once ({} if any raises: then each is
    read alone, so that each error is told apart)."""
    import dask

    try:
        values = dask.compute(*[hdu.column(n) for n in names], scheduler="sync")
    except dfits.DfitsError:
        return {}
    return {n: _owned(v) for n, v in zip(names, values, strict=True)}


def _owned(values: Any) -> Any:
    """A copy that owns its memory: a decoded column's ``base`` may be the stored chunk,
    which keeps the file's map alive while the values live (see docs/fuzzing.md); the
    descriptor check is about what dfits holds, not what the fuzzer keeps."""
    if isinstance(values, np.ndarray) and values.dtype == object:
        out = np.empty(values.shape, object)
        out.ravel()[:] = [_owned(v) for v in values.ravel()]
        return out
    if isinstance(values, np.ndarray):
        return values.copy()
    return values


def _same_graph(hdu: Any, data: Any, name: str) -> bool:
    return data[name].name == hdu.column(name).name


def read_tables(path: str, outcome: Any) -> dict[int, TableRead]:
    """Every table HDU of ``path`` read through every route (DfitsErrors noted in
    ``outcome``; anything else propagates: an escape)."""
    out: dict[int, TableRead] = {}
    try:
        f = dfits.open(path)
    except dfits.DfitsError:
        return out  # read_with_dfits noted it
    with f:
        for hdu in f:
            if hdu.kind not in ("bintable", "table"):
                continue
            try:
                _ = hdu.columns
            except dfits.DfitsError as err:
                outcome.errors.append(f"HDU {hdu.index} columns: {type(err).__name__}: {err}")
                continue
            out[hdu.index] = _read_hdu(hdu, path, outcome)
    return out


def _per_column(route: str, table: Any, columns: list[Any]) -> dict[str, Any]:
    """A whole-table route's result as numpy cells per column, read now: the result itself
    is let go before the descriptor check (an Arrow table of some kinds keeps a reference
    to the file's mapped rows after close; see docs/fuzzing.md)."""
    names = _names(table)
    return {
        c.name: _owned(np.asarray(as_numpy(route, table, c)) if route != "to_arrow" else
                       as_numpy(route, table, c))
        for c in columns if names.count(c.name) == 1
    }  # fmt: skip


def _oracle(path: str, index: int) -> tuple[Any, int, dict[str, str]]:
    """astropy's file holding the table, the table's index in it (a rebuilt plain file for
    a ZTABLE) and the columns whose cells do not decode."""
    from astropy.io import fits

    from tests.fuzz.ztable import rebuild

    hdul = fits.open(path, memmap=False)
    if hdul[index].header.get("ZTABLE") is not True:
        return hdul, index, {}
    hdul.close()
    rebuilt = rebuild(path, index)
    copy = str(Path(path).with_suffix(".ztable-plain.fits"))
    Path(copy).write_bytes(rebuilt.blob)
    return fits.open(copy, memmap=False), 1, rebuilt.corrupt


def _compare_hdu(path: str, index: int, read: TableRead, unchecked: list[str]) -> list[str]:
    from tests.fuzz.ztable import NoOracle
    from tests.tables.test_access import check_column

    try:
        hdul, at, corrupt = _oracle(path, index)
    except NoOracle as err:
        unchecked.append(f"HDU {index}: no ZTABLE oracle ({err})")
        return []
    except Exception:  # astropy cannot read the file or the HDU: no oracle (rule 5)
        unchecked.append(f"HDU {index}: astropy cannot open it")
        return []
    problems = []
    with hdul:
        try:
            data, acols = hdul[at].data, hdul[at].columns
        except Exception:
            unchecked.append(f"HDU {index}: astropy cannot read its table")
            return []
        for c in read.columns:
            problems += _compare_column(read, c, data, acols, corrupt, unchecked, check_column)
    return [f"HDU {index}: {p}" for p in problems]


def _want(data: Any, acols: Any, c: Any) -> Any:
    if data is None:
        return np.zeros((0, *c.shape), c.dtype) if c.code not in "PQ" else []
    names = [a.name for a in acols]
    acol = acols[c.number - 1]  # rule 11: by position (names may differ)
    if names.count(acol.name) != 1 or acol.name is None:
        raise LookupError(f"astropy's name {acol.name!r} is not one column's")
    return oracle_value(data, acol, c)


def _compare_column(read, c, data, acols, corrupt, unchecked, check_column) -> list[str]:
    got = {r: v[c.name] for r, v in read.routes.items() if c.name in v}
    if not got:
        return []
    if c.name in corrupt:  # rule 9: only the rows a route read count (where=)
        out = []
        for route in sorted(got):
            why = corrupt[c.name].hit(read.rows if route == "read(where=)" else None)
            if why:
                out.append(f"{c.name}: read by {route} but its cells do not decode: {why}")
        got = {r: v for r, v in got.items() if r == "read(where=)"} if not out else {}
        if out or not got:
            return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # astropy's own (rule 3)
            want = _want(data, acols, c)
    except Exception as err:  # rule 5: astropy refuses, dfits reads
        unchecked.append(f"{c.name}: astropy: {type(err).__name__}: {err}"[:200])
        return []
    if len(want) == 0:  # rule 12: astropy's empty columns drop the cell shape
        return [f"{c.name} via {r}: {len(v)} rows, astropy none" for r, v in got.items() if len(v)]
    out = []
    for route, value in got.items():
        expect = want
        if route == "read(where=)" and read.rows is not None:
            expect = [want[k] for k in read.rows] if isinstance(want, list) else want[read.rows]
        if route == "column" and not (c.code in "PQ" and c.form.element == "A"):
            try:
                check_column(value, expect, c.name)
            except AssertionError as err:
                out.append(f"{c.name} via {route}: {err}"[:2000])
            continue
        if not equal(value, expect):
            out.append(f"{c.name} via {route}: {value!r} but astropy {expect!r}"[:2000])
    if read.rule and read.rows is not None and "column" in got:
        out += _check_where(read, c, got["column"])
    return out


def _check_where(read: TableRead, c: Any, values: Any) -> list[str]:
    """hdu.where's rows are those where the rule column's values say True."""
    if _rule([c]) != read.rule:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mask = values if values.dtype.kind == "b" else values > 0
    want = np.flatnonzero(mask)
    if not np.array_equal(read.rows, want):
        return [f"where({read.rule!r}) gave {read.rows!r}, the column {want!r}"]
    return []


def _names(table: Any) -> list[str]:
    if hasattr(table, "column_names"):
        return list(table.column_names)
    if hasattr(table, "dtype") and table.dtype.names:
        return list(table.dtype.names)
    return list(table.keys()) if hasattr(table, "keys") else list(table)


def compare_tables(path: str, tables: dict[int, TableRead], unchecked: list[str]) -> str:
    """Differences between dfits's table reads and astropy's ("" when none); columns
    without an oracle are listed in ``unchecked``."""
    problems = []
    for index, read in tables.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problems += _compare_hdu(path, index, read, unchecked)
    return "\n".join(problems)
