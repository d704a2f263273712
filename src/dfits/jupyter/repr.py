"""Rich HTML reprs for :class:`~dfits.FitsFile`, :class:`~dfits.HDU` and :class:`~dfits.Header`.

Every function here works from what ``dfits.open`` already holds — the layout and the header
bytes — and never reads data, builds a dask array or parses a WCS: a 10,000-HDU file renders in
milliseconds. Chunks are planned with :func:`dfits.array.chunks.normalize`, exactly as
``hdu.data`` would plan them. Everything taken from a header or a path is HTML-escaped.
"""

from __future__ import annotations

import math
from functools import lru_cache
from html import escape
from typing import Any

__all__ = ["chunk_summary", "file_html", "hdu_html", "header_html", "wcs_axes"]

_STYLE = """<style>
.dfits-repr {font-family: var(--jp-code-font-family, monospace); font-size: 12px;}
.dfits-repr table {border-collapse: collapse; margin: 2px 0 6px 0;}
.dfits-repr th, .dfits-repr td {padding: 1px 8px; text-align: left; vertical-align: top;
  border-bottom: 1px solid rgba(128, 128, 128, 0.25);}
.dfits-repr th {font-weight: bold;}
.dfits-repr .dfits-num {text-align: right;}
.dfits-repr .dfits-dim {opacity: 0.65;}
.dfits-repr pre {margin: 2px 0; max-height: 400px; overflow: auto; font-size: 11px;}
.dfits-repr summary {cursor: pointer;}
</style>"""

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _bytes(n: int | float) -> str:
    """Human-readable byte count.

    >>> _bytes(0), _bytes(2880), _bytes(3 * 2**30)
    ('0 B', '2.8 KiB', '3.0 GiB')
    """
    n = float(n)
    for unit in _UNITS:
        if abs(n) < 1024 or unit == _UNITS[-1]:
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


@lru_cache(maxsize=1024)
def _planned(
    chunks: Any,
    shape: tuple[int, ...],
    dtype: str,
    itemsize: int,
    tile: tuple[int, ...] | None,
    target: Any,
) -> tuple[tuple[int, ...], ...] | None:
    # ``target`` (dask's array.chunk-size and dfits.tile-chunk-size) is part of the key so
    # a config change is seen.
    del target
    import numpy as np

    from dfits.array.chunks import normalize

    try:
        return normalize(chunks, shape, np.dtype(dtype), itemsize, tile)
    except Exception:
        return None


def chunk_summary(hdu: Any, chunks: Any = None) -> str:
    """``"8 chunks of (32, 1024, 1024), 128.0 MiB each"``, or ``""`` for non-images.

    ``chunks`` is the file's default (``FitsFile.chunks``); nothing is read or built.
    """
    if not hdu.is_image or not hdu.shape:
        return ""
    import dask

    spec = hdu.layout.decode
    try:
        hash(chunks)
    except TypeError:
        chunks = None
    from dfits.array.chunks import TILE_TARGET_KEY

    tiles = hdu.layout.tiles
    tile = tuple(tiles.tile) if tiles is not None else None
    target = (dask.config.get("array.chunk-size"), dask.config.get(TILE_TARGET_KEY, None))
    plan = _planned(chunks, hdu.shape, str(hdu.dtype), spec.itemsize, tile, target)
    if plan is None:
        return "?"
    count = math.prod(len(c) for c in plan)
    biggest = tuple(max(c) if c else 0 for c in plan)
    each = math.prod(biggest) * hdu.dtype.itemsize
    noun = "chunk" if count == 1 else "chunks"
    return f"{count:,} {noun} of {_shape(biggest)}, {_bytes(each)} each"


def _file_chunks(hdu: Any) -> Any:
    file = getattr(hdu, "_file", None)
    return getattr(file, "chunks", None)


def _dims(hdu: Any) -> tuple[str, str]:
    """Shape and dtype cells of an HDU's row, from its header (``dfits.listing``: a table
    is ``"NR x NC"`` and its TFORMs, as astropy lists it; nothing here parses columns, so
    a table with a broken TFORM still lists)."""
    from dfits.listing import summary

    dims, form = summary(hdu)
    if isinstance(dims, tuple):
        return (_shape(dims) if dims else ""), form
    return escape(str(dims)), form


def _row(cells: list[str], *, th: bool = False, num: tuple[int, ...] = ()) -> str:
    tag = "th" if th else "td"
    out = []
    for i, cell in enumerate(cells):
        cls = ' class="dfits-num"' if i in num else ""
        out.append(f"<{tag}{cls}>{cell}</{tag}>")
    return "<tr>" + "".join(out) + "</tr>"


def file_html(file: Any, max_rows: int = 40) -> str:
    """An HDU table like astropy's ``info()``: name, kind, shape, dtype, size and chunks.

    Files with more than ``max_rows`` HDUs show the first and last ``max_rows // 2``.
    """
    n = len(file)
    layout = file.layout
    kinds: dict[str, int] = {}
    total = 0
    for h in layout.hdus:
        kinds[h.kind] = kinds.get(h.kind, 0) + 1
        total += h.data_size
    if n > max_rows:
        half = max(1, max_rows // 2)
        picks: list[int | None] = [*range(half), None, *range(n - half, n)]
    else:
        picks = list(range(n))
    chunks = getattr(file, "chunks", None)
    rows = [
        _row(
            ["No.", "Name", "Ver", "Kind", "Shape", "Dtype", "Stored", "Chunks"],
            th=True,
        )
    ]
    for i in picks:
        if i is None:
            hidden = n - 2 * half
            rows.append(f'<tr><td colspan="8" class="dfits-dim">… {hidden:,} more HDUs …</td></tr>')
            continue
        hdu = file[i]  # wrappers are built for the shown rows only
        dims, form = _dims(hdu)
        rows.append(
            _row(
                [
                    str(hdu.index),
                    escape(hdu.name),
                    str(hdu.ver),
                    escape(hdu.kind),
                    dims,
                    escape(form),
                    _bytes(hdu.layout.data_size) if hdu.layout.data_size else "",
                    escape(chunk_summary(hdu, chunks)),
                ],
                num=(0, 2, 6),
            )
        )
    size = "" if layout.size is None else f", {_bytes(layout.size)} on disk"
    kind_text = ", ".join(f"{v:,} {escape(k)}" for k, v in sorted(kinds.items()))
    title = (
        f"<b>dfits.FitsFile</b> {escape(str(file.filename))}<br>"
        f'<span class="dfits-dim">{n:,} HDUs ({kind_text}); {_bytes(total)} of data'
        f"{size}</span>"
    )
    return f'{_STYLE}<div class="dfits-repr">{title}<table>{"".join(rows)}</table></div>'


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:.10g}"
    return escape(str(value))


def wcs_axes(header: Any) -> list[dict[str, Any]]:
    """Per-axis CTYPE, CUNIT, CRVAL, CDELT, CRPIX straight from the header (no WCS parse).

    CDELT falls back to the diagonal ``CDi_i`` when absent. Axes are FITS-numbered (1 =
    fastest, the last numpy axis). Returns ``[]`` when no axis has a ``CTYPE``.
    """
    naxis = header.get("NAXIS", 0)
    wcsaxes = header.get("WCSAXES", naxis)
    try:
        count = int(max(naxis, wcsaxes))
    except (TypeError, ValueError):
        return []
    axes = []
    for i in range(1, min(count, 999) + 1):
        cdelt = header.get(f"CDELT{i}")
        if cdelt is None:
            cdelt = header.get(f"CD{i}_{i}")
        axes.append(
            {
                "axis": i,
                "naxis": header.get(f"NAXIS{i}"),
                "ctype": header.get(f"CTYPE{i}"),
                "cunit": header.get(f"CUNIT{i}"),
                "crval": header.get(f"CRVAL{i}"),
                "cdelt": cdelt,
                "crpix": header.get(f"CRPIX{i}"),
            }
        )
    if not any(a["ctype"] for a in axes):
        return []
    return axes


def _wcs_html(header: Any) -> str:
    axes = wcs_axes(header)
    if not axes:
        return ""
    rows = [_row(["Axis", "NAXIS", "CTYPE", "CUNIT", "CRVAL", "CDELT", "CRPIX"], th=True)]
    keys = ("naxis", "ctype", "cunit", "crval", "cdelt", "crpix")
    rows.extend(
        _row([str(a["axis"]), *(_number(a[k]) for k in keys)], num=(0, 1, 4, 5, 6)) for a in axes
    )
    extras = [
        f"{k} = {_number(header[k])}"
        for k in ("RADESYS", "EQUINOX", "SPECSYS", "RESTFRQ", "BUNIT")
        if k in header and header[k] is not None
    ]
    note = f'<div class="dfits-dim">{"; ".join(extras)}</div>' if extras else ""
    return f"<b>WCS</b> (from the header){note}<table>{''.join(rows)}</table>"


def _header_body(header: Any) -> str:
    lines = []
    for line in repr(header).split("\n"):
        if not line:
            continue
        lines.append(f"<b>{escape(line[:8])}</b>{escape(line[8:].rstrip())}")
    return "\n".join(lines)


def header_html(header: Any, open: bool = True) -> str:
    """The header's cards in a collapsible block, keywords in bold, everything escaped."""
    ncards = header.ncards
    attr = " open" if open else ""
    return (
        f'{_STYLE}<div class="dfits-repr"><details{attr}><summary><b>Header</b> '
        f'<span class="dfits-dim">{ncards:,} cards</span></summary>'
        f"<pre>{_header_body(header)}</pre></details></div>"
    )


def _columns_html(hdu: Any) -> str:
    """A table HDU's columns: name, TFORM, unit, dtype and cell shape (or why unreadable)."""
    from dfits.errors import DfitsError
    from dfits.listing import column_rows

    try:
        rows = column_rows(hdu.columns)
    except DfitsError as err:
        return f"unreadable: {escape(str(err))}"
    head = _row(["Name", "Format", "Unit", "Dtype", "Shape"], th=True)
    body = "".join(_row([escape(v) for v in r]) for r in rows)
    return f"{len(rows):,} columns<table>{head}{body}</table>"


def hdu_html(hdu: Any) -> str:
    """Shape, dtype, chunks, byte layout, a WCS summary and a collapsible header."""
    layout = hdu.layout
    spec = layout.decode
    header = hdu.header
    rows = []
    if hdu.shape:
        rows.append(("Shape", _shape(hdu.shape)))
    if spec is not None:
        stored = f"BITPIX = {spec.bitpix} ({spec.stored.str})"
        if spec.mode != "raw":
            stored += f", {escape(spec.mode)}: BSCALE = {spec.bscale:g}, BZERO = {spec.bzero:g}"
        if spec.blank is not None:
            stored += f", BLANK = {spec.blank}"
        rows.append(
            (
                "Dtype",
                f"{escape(str(spec.physical))} <span class='dfits-dim'>(stored {stored})</span>",
            )
        )
        if spec.error:
            rows.append(("Data", f"unreadable: {escape(spec.error)}"))
    elif layout.bitpix:
        rows.append(("BITPIX", str(layout.bitpix)))
    if hdu.is_image and hdu.shape:
        phys = math.prod(hdu.shape) * hdu.dtype.itemsize
        rows.append(("Array", f"{_bytes(phys)} as {escape(str(hdu.dtype))}"))
        rows.append(("Chunks", escape(chunk_summary(hdu, _file_chunks(hdu)))))
    if hdu.is_table:
        rows.append(("Columns", _columns_html(hdu)))
    header_bytes = layout.data_offset - layout.header_offset
    rows.append(
        (
            "Bytes",
            f"header at {layout.header_offset:,} ({header_bytes:,} B); "
            f"data at {layout.data_offset:,} ({layout.data_size:,} B"
            f" + {layout.padded_size - layout.data_size:,} B padding); "
            f"next HDU at {layout.end:,}",
        )
    )
    xt = f" XTENSION = {escape(str(layout.xtension))}" if layout.xtension else ""
    title = (
        f"<b>dfits.HDU</b> {hdu.index} <b>{escape(hdu.name)}</b> ver {hdu.ver}"
        f' <span class="dfits-dim">{escape(hdu.kind)}{xt}</span>'
    )
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    ncards = header.ncards
    head = (
        f'<details><summary><b>Header</b> <span class="dfits-dim">{ncards:,} cards'
        f"</span></summary><pre>{_header_body(header)}</pre></details>"
    )
    return (
        f'{_STYLE}<div class="dfits-repr">{title}<table>{table}</table>'
        f"{_wcs_html(header)}{head}</div>"
    )
