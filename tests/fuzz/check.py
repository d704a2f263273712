"""One fuzz case: read a file with dfits the way users do, then compare with astropy.

The allowed outcomes (issue 34): success, a :class:`dfits.DfitsError` (with any number of
``DfitsWarning``\\ s), and values equal to astropy's wherever astropy reads the same bytes
without error. Whatever happened, once dfits has closed the file this process holds no
descriptor and no map of it (issue 51): anything left is a ``descriptor`` failure.
:func:`check_file` returns an :class:`Outcome` naming which, and for anything else the
traceback or the differing values.
"""

from __future__ import annotations

import gc
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from astropy.utils.exceptions import AstropyWarning

import dfits
from dfits.format.cards import is_printable

__all__ = ["Outcome", "check_file", "held", "read_with_dfits", "walk_header"]

#: outcomes that fail a campaign
FAILURES = ("escape", "mismatch", "hang", "memory", "warning", "descriptor", "unnamed")


@dataclass
class Outcome:
    """What happened: ``ok``, ``dfits_error`` or one of :data:`FAILURES`, and why."""

    kind: str = "ok"
    detail: str = ""
    errors: list[str] = field(default_factory=list)
    #: table columns dfits read that no oracle could check (astropy refused them)
    unchecked: list[str] = field(default_factory=list)
    #: a table case whose file stayed mapped after close until the garbage collector ran or
    #: a pool thread let go (a DataError's traceback in a reference cycle; see
    #: docs/fuzzing.md): noted and counted, not failed
    held_until_gc: bool = False


@dataclass
class _Read:
    """What dfits returned for one image HDU."""

    shape: tuple[int, ...]
    dtype: np.dtype
    index: tuple[slice, ...]
    section: np.ndarray
    total: Any = None
    peak: Any = None


def walk_header(header: Any) -> None:
    """Every read a user makes of a header: reprs, keys, values, and astropy's copy."""
    repr(header)
    header._repr_html_()
    for key in header:
        header.get(key)
    for i in range(header.ncards):
        header.value_at(i)
    with warnings.catch_warnings():
        # to_astropy hands the bytes to astropy, which reports what it dislikes in them with
        # its own warnings: that is astropy's verdict through astropy's API, not a dfits leak
        warnings.filterwarnings("ignore", category=AstropyWarning)
        header.to_astropy()


def _read_hdu(hdu: Any) -> _Read | None:
    """Everything a user touches on one HDU; the data part only for readable images."""
    walk_header(hdu.header)
    repr(hdu)
    hdu._repr_html_()
    shape, dtype = hdu.shape, hdu.dtype
    x = hdu.data  # raises a DfitsError for HDUs without image data
    if x is None:
        return None  # NAXIS = 0: no data, as astropy
    index = tuple(slice(0, 3) for _ in shape)
    section = np.asarray(hdu.section[index])
    read = _Read(shape, dtype, index, section)
    if x.size:
        read.total = x.sum().compute(scheduler="sync")
        read.peak = np.nanmax(x[index]).compute(scheduler="sync")
    return read


def read_with_dfits(path: str, outcome: Outcome) -> dict[int, _Read]:
    """Open and walk ``path``; DfitsErrors are noted in ``outcome``, others propagate."""
    reads: dict[int, _Read] = {}
    try:
        f = dfits.open(path)
    except dfits.DfitsError as err:
        outcome.errors.append(f"open: {type(err).__name__}: {err}")
        return reads
    with f:
        repr(f)
        f._repr_html_()
        f.info(output=False)  # rows, nothing printed
        for hdu in f:
            try:
                got = _read_hdu(hdu)
            except dfits.DfitsError as err:
                outcome.errors.append(f"HDU {hdu.index}: {type(err).__name__}: {err}")
                continue
            if got is not None:
                reads[hdu.index] = got
    return reads


def held(path: str) -> tuple[int, int]:
    """This process's open descriptors of ``path`` and its map lines naming it, the file
    deleted or not ((0, 0) where ``/proc`` is missing)."""
    if not os.path.isdir("/proc/self/fd"):
        return 0, 0
    real = os.path.realpath(path)  # as /proc spells it
    names = (real, f"{real} (deleted)")
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds += os.readlink(f"/proc/self/fd/{fd}") in names
        except OSError:
            continue  # the listing's own descriptor, closed by now
    with open("/proc/self/maps") as maps:
        lines = sum(line.rstrip("\n").endswith(tuple(" " + n for n in names)) for line in maps)
    return fds, lines


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a, b, equal_nan=True))


def _close_sum(got: Any, data: np.ndarray) -> bool:
    if data.dtype.kind in "iub":
        return int(got) == int(data.sum(dtype=np.uint64 if data.dtype.kind == "u" else np.int64))
    ref = data.astype(np.float64).sum()
    kind = np.asarray(got).dtype
    got = float(got)
    if np.isinf(got) and kind.kind == "f" and np.isfinite(ref):
        # a float32 sum past float32's range: dfits adds in float64 and rounds the total to
        # the result's dtype, which gives the infinity of its sign (fuzz seed 5 case 3751;
        # numpy's float32 sum overflows on the way, to inf or nan)
        with np.errstate(over="ignore"):
            return bool(kind.type(ref) == got)
    if np.isnan(ref) or np.isnan(got):
        return bool(np.isnan(ref) and np.isnan(got)) or not np.isfinite(data).all()
    scale = float(np.abs(data.astype(np.float64)).sum())
    if not np.isfinite(scale):
        return True  # both overflow somewhere, in different orders: nothing to compare
    return abs(got - ref) <= 1e-5 * scale + 1e-300


def compare(path: str, reads: dict[int, _Read]) -> str:
    """Differences between dfits's reads and astropy's data ("" when none or no oracle)."""
    from astropy.io import fits

    problems = []
    path = _last_scaling_only(path)
    skip = _cfitsio_reads_otherwise(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            hdul = fits.open(path, memmap=False)
        except Exception:
            return ""  # astropy cannot read it: no oracle
        with hdul:
            for i, got in reads.items():
                if i in skip:
                    continue
                try:
                    data = hdul[i].data
                    data = None if data is None else np.asarray(data)
                except Exception:
                    continue
                if data is None or data.shape != got.shape:
                    continue  # astropy describes this HDU differently: not the same bytes read
                try:
                    data = _blank_zero(path, i, data)
                except Exception:
                    # astropy's header cannot say what its BLANK is (fuzz seed 5 case 6029:
                    # `BLANK = /` then a CONTINUE card, VerifyError), so its data is no oracle;
                    # raised here, it killed the worker and came back as an 'oracle hang'
                    continue
                problems += _differences(i, got, data)
    return "\n".join(problems)


_ODD_END = re.compile(rb"END {0,76}[^A-Z0-9_-]")
_SCALING = (b"BSCALE  =", b"BZERO   =", b"BLANK   =")
_QUANTISED = (b"ZSCALE", b"ZZERO", b"ZBLANK")


def _last_scaling_only(path: str) -> str:
    """``path``, or a copy where only the last of repeated BSCALE/BZERO/BLANK cards remains.

    DESIGN's rule: the last card applies, with a warning. astropy's data follows the last one
    when its fast header parser reads the header, but the first when a card elsewhere sends
    it to its full parser (non-ASCII bytes: fuzz seed 1 case 7709). So the oracle reads a copy
    whose earlier duplicates are turned into COMMENT cards, where astropy has only one choice.

    Likewise ``HIERARCH BSCALE = ...`` (and BZERO, BLANK): not the reserved keyword (DESIGN,
    and astropy's fast parser), but the full parser files it as BSCALE and scales the data
    (fuzz seed 5 case 12238). And a card whose keyword is END with more after it
    (``END     = 1000``): only ``END`` and blanks ends a header for dfits and astropy's fast
    parser, but the full parser ends it there (fuzz seed 5 case 12235). The copy makes those
    cards COMMENT cards too.

    And a scaling card holding a byte outside printable ASCII (a tab in column 80, fuzz seed
    33 case 26442): DESIGN's rule makes its value unusable, so dfits ignores it with a warning;
    astropy reads past the byte and applies it. The copy makes it a COMMENT card.

    And ``BLANK = T`` (or ``F``), when it is the BLANK that applies: not an integer, so
    ignored (DESIGN, the standard). astropy takes T as 1 (a Python bool is an int) and blanks
    every 1, in plain and in compressed images (fuzz seed 21 cases 24111, 25450: compressed
    images, which an earlier ``ignore_blank=True`` read did not cover): the copy has no BLANK.
    """
    blob = bytearray(Path(path).read_bytes())
    changed = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dfits.open(path) as f:
            spans = [(h.layout.header_offset, h.layout.data_offset) for h in f]
    for start, stop in spans:
        seen: dict[bytes, list[int]] = {}
        for at in range(start, min(stop, len(blob)) - 79, 80):
            if bytes(blob[at : at + 9]) in _SCALING and not is_printable(blob[at : at + 80]):
                blob[at : at + 8], changed = b"COMMENT ", True
            elif bytes(blob[at : at + 9]) in _SCALING:
                seen.setdefault(bytes(blob[at : at + 9]), []).append(at)
            elif _parser_dependent(bytes(blob[at : at + 80])):
                blob[at : at + 8], changed = b"COMMENT ", True
        for key, places in seen.items():
            if key == b"BLANK   =" and _logical(bytes(blob[places[-1] : places[-1] + 80])):
                places.append(-1)  # the BLANK that applies is T or F: none applies
            for at in places[:-1]:
                blob[at : at + 8], changed = b"COMMENT ", True
    if not changed:
        return path
    copy = str(Path(path).with_suffix(".last-scaling.fits"))
    Path(copy).write_bytes(bytes(blob))
    return copy


def _cfitsio_reads_otherwise(path: str) -> set[int]:
    """HDUs where astropy's data is no oracle, because cfitsio (funpack) reads them otherwise.

    A subtractive dither without ZDITHER0: cfitsio and dfits start the tiles' random sequence
    at 1, astropy at 0 (fuzz seed 31 case 5733: a bit flip renamed ZDITHER0). And a quantised
    table whose ZSCALE/ZZERO/ZBLANK column name is spelled in another case ('ZsCALE'): the
    standard compares TTYPEn values without regard to case, as cfitsio and dfits do; astropy
    looks the column up as spelled and misses it (fuzz seed 40 case 95220).
    """
    blob = Path(path).read_bytes()
    out = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dfits.open(path) as f:
            spans = [(h.index, h.layout.header_offset, h.layout.data_offset) for h in f]
    for i, start, stop in spans:
        cards = [blob[at : at + 80] for at in range(start, min(stop, len(blob)) - 79, 80)]
        keys = {card[:8] for card in cards}
        dither = any(c[:8] == b"ZQUANTIZ" and b"SUBTRACTIVE_DITHER" in c for c in cards)
        if dither and b"ZDITHER0" not in keys:
            out.add(i)
        names = [c[10:].partition(b"/")[0].strip(b" '") for c in cards if c[:5] == b"TTYPE"]
        odd = [n for n in names if n.upper() in _QUANTISED and n not in _QUANTISED]
        if odd and b"ZIMAGE  =                    T" in b"".join(cards):
            out.add(i)
    return out


def _parser_dependent(card: bytes) -> bool:
    """A card astropy reads one way or another depending on which parser reads the header."""
    if _ODD_END.match(card) and card != b"END".ljust(80):
        return True  # astropy's full parser: END, blanks, then a byte no keyword holds
    name = card[8:].partition(b"=")[0].strip().upper()
    return card[:8] == b"HIERARCH" and name in (b"BSCALE", b"BZERO", b"BLANK")


def _logical(card: bytes) -> bool:
    return card[10:].partition(b"/")[0].strip() in (b"T", b"F")


def _blank_zero(path: str, i: int, data: np.ndarray) -> np.ndarray:
    """astropy's data with DESIGN's one deliberate difference applied: BLANK = 0 is a BLANK.

    astropy tests ``if self._blank:`` and so skips BLANK = 0 on scaled data; the FITS standard
    (and dfits) make 0 a BLANK like any other integer.
    """
    from astropy.io import fits

    if data.dtype.kind != "f":
        return data
    # unscaled, astropy keeps BLANK in the header (scaling moves it out)
    with fits.open(path, memmap=False, do_not_scale_image_data=True) as raw:
        header = raw[i].header
        blank = header.get("BLANK")
        if blank != 0 or type(blank) is not int or header["BITPIX"] < 0:
            return data
        stored = np.asarray(raw[i].data)
    return np.where(stored == 0, np.nan, data).astype(data.dtype)


def _differences(i: int, got: _Read, data: np.ndarray) -> list[str]:
    out = []
    if data.dtype.newbyteorder("=") != got.dtype:
        out.append(f"HDU {i}: dtype {got.dtype} but astropy {data.dtype}")
    want = data[got.index]
    if not _same(got.section, want):
        out.append(f"HDU {i}: section {got.index} {got.section!r} but astropy {want!r}")
    if got.total is not None and not _close_sum(got.total, data):
        out.append(f"HDU {i}: sum {got.total!r} but astropy {data.astype(float).sum()!r}")
    if got.peak is not None and want.size and not np.isnan(want).all():
        peak = np.nanmax(want)
        if not _same(got.peak, peak):
            out.append(f"HDU {i}: nanmax {got.peak!r} but astropy {peak!r}")
    return out


def _released_late(path: str) -> tuple[int, int]:
    """What is still held of ``path`` once the garbage collector has run and a pool thread
    has had time to let go (table cases: see :attr:`Outcome.held_until_gc`)."""
    gc.collect(1)  # the case's own young cycles first: a full collection takes 0.5 s
    for _ in range(10):
        left = held(path)
        if left == (0, 0):
            return left
        gc.collect()
        time.sleep(0.05)
    return held(path)


def check_file(
    path: str, before_oracle: Callable[[], None] | None = None, tables: bool = False
) -> Outcome:
    """Run one file through dfits and the astropy comparison; never raises.

    ``before_oracle`` is called when dfits is done and astropy is about to read the file.
    ``tables``: read every table HDU through every table route too, and compare those
    (:mod:`tests.fuzz.tablecheck`: the campaign's table cases).
    """
    from tests.fuzz.tablecheck import compare_tables, read_tables

    outcome = Outcome()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            reads = read_with_dfits(path, outcome)
            table_reads = read_tables(path, outcome) if tables else {}
        if tables:  # a table's data are its columns: the image walk's refusal is no finding
            outcome.errors = [e for e in outcome.errors if "image data that dfits" not in e]
    except MemoryError:
        return Outcome("memory", traceback.format_exc(), outcome.errors)
    except Exception:
        return Outcome("escape", traceback.format_exc(), outcome.errors)
    left = held(path)
    if left != (0, 0) and tables:
        left = _released_late(path)
        outcome.held_until_gc = left == (0, 0)
    if left != (0, 0):
        text = f"after close, {left[0]} descriptors and {left[1]} maps of the file were held"
        return Outcome("descriptor", text, outcome.errors)
    foreign = [w for w in seen if not issubclass(w.category, dfits.DfitsWarning)]
    if foreign:
        text = "\n".join(
            f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in foreign
        )
        return Outcome("warning", text, outcome.errors)
    unnamed = [u for read in table_reads.values() for u in read.unnamed]
    if unnamed:
        return Outcome("unnamed", "\n".join(unnamed), outcome.errors)
    if before_oracle is not None:
        before_oracle()
    mismatch = compare(path, reads) if reads else ""
    if table_reads:
        mismatch += compare_tables(path, table_reads, outcome.unchecked)
    if mismatch:
        return Outcome("mismatch", mismatch, outcome.errors, outcome.unchecked)
    if outcome.errors:
        outcome.kind = "dfits_error"
    return outcome
