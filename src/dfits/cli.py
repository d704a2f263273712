"""The ``dfits`` command line: ``info``, ``header``, ``stats``, ``moment``, ``warm``, ``demo``.

Every failure prints one line, ``dfits: error: <what went wrong>``, and exits non-zero (2 for
usage errors, 1 for bad files), so shell pipelines can rely on it. ``info`` and ``header`` take
several files and go on past a bad one (exit 1 at the end). A reader that stops early (``dfits
header x.fits | head``) ends the command quietly, with the exit status of a process stopped
by SIGPIPE (141). Progress bars go to stderr only when it is a terminal (``--progress`` forces
one, ``--quiet`` none), over chunks they advance through (:func:`dfits.progress.bar_chunks`).
``docs/cli.md`` lists every option (generated from this parser).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from dfits.demo import add_arguments as add_demo_arguments
from dfits.errors import DfitsError, UnsupportedError

__all__ = ["main"]

#: What a command reports in one line (exit 1) instead of a traceback.
_ERRORS = (DfitsError, OSError, ValueError, KeyError, IndexError)
#: Exit status of a process stopped by SIGPIPE (128 + 13), what shells show for ``cat``.
_EXIT_BROKEN_PIPE = 141


def _hdu_key(text: str | None) -> Any:
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    if "," in text:
        name, ver = text.split(",", 1)
        return (name, int(ver))
    return text


def _pick(f: Any, key: Any) -> Any:
    if key is not None:
        return f[key]
    for hdu in f:
        if hdu.is_image and all(hdu.shape):
            return hdu
    from dfits.errors import HDUNotFoundError

    raise HDUNotFoundError(f"{f.filename!r}: no image HDU with data; use --hdu")


def _each_file(args: argparse.Namespace, show: Any) -> int:
    """``show(path)`` for every file; a failing file is reported and the rest still shown."""
    status = 0
    for i, path in enumerate(args.file):
        if len(args.file) > 1:
            # like head(1): the file's name before its output, a blank line between files
            print(f"{chr(10) if i else ''}==> {path} <==", flush=True)
        try:
            show(path)
        except BrokenPipeError:
            raise  # the reader is gone: nothing more to show
        except _ERRORS as err:
            _report(err)
            status = 1
    return status


def _cmd_info(args: argparse.Namespace) -> int:
    import dfits

    def show(path: str) -> None:
        f = dfits.open(path)
        f.info()
        for hdu in f:
            if hdu.is_table:
                _print_columns(hdu)

    return _each_file(args, show)


def _print_columns(hdu: Any) -> None:
    """A table HDU's columns under the HDU list (unreadable columns: one line saying why)."""
    from dfits.listing import columns_text

    print(f"\nHDU {hdu.index} {hdu.name or '-'}: {hdu.kind} columns")
    try:
        print(columns_text(hdu.columns))
    except DfitsError as err:
        print(f"    columns unreadable: {err}")


def _cmd_header(args: argparse.Namespace) -> int:
    import dfits

    def show(path: str) -> None:
        f = dfits.open(path)
        hdu = f[_hdu_key(args.hdu) if args.hdu is not None else 0]
        if args.raw:
            sys.stdout.write(hdu.header.tostring().decode("ascii", "replace"))
        else:
            print(repr(hdu.header))

    return _each_file(args, show)


def _shown(args: argparse.Namespace) -> bool:
    from dfits.progress import interactive  # where someone watches, or --progress

    return bool(args.progress or (not args.quiet and interactive(sys.stderr)))


def _progress(args: argparse.Namespace) -> Any:
    """dask's progress bar on stderr where someone watches it, else a no-op context."""
    if _shown(args):
        from dask.diagnostics import ProgressBar

        return ProgressBar(minimum=1.0, out=sys.stderr)
    return contextlib.nullcontext()


def _axes(text: str | None, ndim: int) -> Any:
    if text is None:
        return None
    axes = tuple(int(a) for a in text.split(","))
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"--axis {a} is out of range for {ndim}-d data")
    return axes


#: ``dfits stats``'s statistics (their reductions), and the most values an array prints whole
_STATS = {"count": "count", "sum": "nansum", "mean": "nanmean", "std": "nanstd",
          "min": "nanmin", "max": "nanmax"}  # fmt: skip
_PRINTED = 12


def _cmd_stats(args: argparse.Namespace) -> int:
    import dask

    import dfits
    from dfits.array.eager import reduce_hdu
    from dfits.progress import bar_chunks

    names, shown = _stat_names(args.stat), _shown(args)
    kind = _output_kind(args, len(names))
    hdu = _pick(dfits.open(args.file), _hdu_key(args.hdu))
    axis = _axes(args.axis, len(hdu.shape))
    print(f"{args.file}  HDU {hdu.index} ({hdu.name})  shape {hdu.shape}  dtype {hdu.dtype}")
    # the reductions dfits owns, one fused kernel pass per chunk and statistic: without a
    # graph when small (dfits.array.eager), else (or for a shown bar, its chunks planned by
    # bar_chunks) on dask's threads
    local = {"scheduler": "threads", **({"dfits.eager-bytes": 0} if shown else {})}
    with bar_chunks(shown, shown and hdu.data.nbytes), _progress(args), dask.config.set(local):
        got = reduce_hdu(hdu, [_STATS[name] for name in names], axis)
    values = dict(zip(names, got, strict=True))
    for name, value in values.items():
        print(f"  {name:<6} {_stat_text(value)}")
    if args.output:
        _save_stats(args, values, kind)
        print(f"wrote {', '.join(values)} to {args.output}")
    return 0


def _stat_names(text: str | None) -> list[str]:
    names = list(_STATS) if text is None else [n.strip() for n in text.split(",")]
    unknown = [n for n in names if n not in _STATS]
    if unknown:
        raise ValueError(f"--stat {unknown[0]!r}: choose from {', '.join(_STATS)}")
    return names


def _output_kind(args: argparse.Namespace, n: int) -> str | None:
    """``fits``, ``npy`` or ``npz`` from ``--output``'s suffix, checked before any work."""
    if (path := args.output) is None:
        return None
    suffix = os.fspath(path).lower().rsplit(".", 1)[-1]
    kind = {"fits": "fits", "fit": "fits", "fts": "fits", "npy": "npy", "npz": "npz"}.get(suffix)
    if kind is None or (kind == "npy" and n != 1):
        what = "a .npy file holds one array: pass --stat" if kind else "name a .fits, .npy, .npz"
        raise ValueError(f"--output {path!r}: {what}")
    if os.path.exists(path) and not args.overwrite:
        from dfits.errors import OutputExistsError, where

        raise OutputExistsError(f"{where(path)}: exists; pass --overwrite to replace it")
    return kind


def _stat_text(value: Any) -> str:
    """A statistic as text: integers as integers, floats to 8 digits, large arrays summed up."""
    import numpy as np

    value = np.asarray(value)
    if value.ndim == 0:
        return str(value.item()) if value.dtype.kind in "iub" else f"{value.item():.8g}"
    if value.size <= _PRINTED:
        return f"array {value.shape}: {np.array2string(value, precision=8)}"
    ok = value[np.isfinite(value)] if value.dtype.kind == "f" else value.ravel()
    span = f"{_stat_text(ok.min())} .. {_stat_text(ok.max())}" if ok.size else "no value"
    nan = f", {value.size - ok.size} NaN" if value.size > ok.size else ""
    return f"array {value.shape} {value.dtype}: {span}{nan} (--output saves it)"


def _save_stats(args: argparse.Namespace, values: dict[str, Any], kind: str | None) -> None:
    import numpy as np

    import dfits

    arrays = {k: np.asarray(v) for k, v in values.items()}
    if kind == "npy":
        np.save(args.output, *arrays.values())  # the one statistic
    elif kind == "npz":
        np.savez(args.output, **arrays)
    else:  # FITS: one statistic in the primary HDU, several as extensions named after them
        import xarray as xr

        ds = xr.Dataset({k: ([f"axis{i}" for i in range(v.ndim)], v) for k, v in arrays.items()})
        one = next(iter(arrays.values()))
        dfits.to_fits(ds if len(arrays) > 1 else one, args.output, overwrite=args.overwrite)


def _cmd_moment(args: argparse.Namespace) -> int:
    from dfits.climoment import moment_command  # the map-making code, only for a map

    return moment_command(args, _pick, _hdu_key, _progress, _shown(args))


def _cmd_warm(args: argparse.Namespace) -> int:
    from dfits.kernels import _cache, warm

    if args.clear:
        removed = _cache.clear()
        print(f"removed {removed} compiled-kernel cache files from {_cache.cache_dir()}")
        return 0
    report = warm(jobs=args.jobs, full=args.all)
    where = report.cache_dir or "nowhere writable: kernels will compile in memory, per process"
    which = "every kernel" if report.full else "the common kernels (--all: every one)"
    print(f"compiled {which} of {report.encodings} encodings in {report.seconds:.1f} s")
    if report.pruned:
        print(f"removed {report.pruned} cache files of older dfits versions")
    print(f"cache: {where}")
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from dfits.write.convert import fits_to_fits, fits_to_zarr, zarr_to_fits

    zarr_in, zarr_out = (os.fspath(p).rstrip("/").endswith(".zarr") for p in (args.file, args.out))
    if zarr_out:
        if args.compression:
            raise UnsupportedError("convert: --compression writes FITS, not zarr")
        fits_to_zarr(args.file, args.out, overwrite=args.overwrite)
    elif zarr_in:
        zarr_to_fits(args.file, args.out, overwrite=args.overwrite, compression=args.compression)
    elif args.compression:
        fits_to_fits(args.file, args.out, overwrite=args.overwrite, compression=args.compression)
    else:
        raise UnsupportedError(
            f"convert: one of {args.file!r}, {args.out!r} must end in .zarr (or pass --compression)"
        )
    print(f"wrote {args.out}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from dfits.demo import run

    return run(args)


def _add_progress_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", help="no progress bar")
    group.add_argument(
        "--progress",
        action="store_true",
        help="a progress bar on stderr even when it is not a terminal (default: only there)",
    )


def _add_moment(sub: Any) -> None:
    """The ``moment`` subcommand's arguments (its options are most of the CLI's)."""
    p = sub.add_parser("moment", help="moment map (0, 1, 2) along the spectral axis")
    p.add_argument("file", help="a FITS file (path or URL)")
    p.add_argument("--order", type=int, default=0, help="0: Σ I·Δv, 1: mean, 2: dispersion σ")
    p.add_argument("--out", required=True, help="output FITS file (written atomically)")
    p.add_argument("--hdu", help="default: the first image HDU with data")
    p.add_argument(
        "--axis", type=int, help="numpy axis of the spectrum (default: the WCS's spectral axis)"
    )
    p.add_argument("--clip", type=float, help="ignore values below this threshold")
    p.add_argument("--unit", help="spectral unit of the map, e.g. km/s, GHz, um (default: WCS's)")
    p.add_argument(
        "--velocity-convention",
        choices=["radio", "optical", "relativistic"],
        help="how frequencies become velocities (needed with --unit km/s on a FREQ axis)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    _add_progress_flags(p)
    p.set_defaults(func=_cmd_moment)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dfits", description="Huge FITS files, lazily.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="table of HDUs")
    p.add_argument("file", nargs="+", help="FITS files (paths or URLs)")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("header", help="print a header")
    p.add_argument("file", nargs="+", help="FITS files (paths or URLs)")
    p.add_argument("--hdu", help="index, EXTNAME or EXTNAME,EXTVER (default 0)")
    p.add_argument("--raw", action="store_true", help="the 2880-byte blocks, unsplit")
    p.set_defaults(func=_cmd_header)

    p = sub.add_parser("stats", help="count/sum/mean/std/min/max of valid values")
    p.add_argument("file", help="a FITS file (path or URL)")
    p.add_argument("--hdu", help="default: the first image HDU with data")
    p.add_argument("--axis", help="comma-separated numpy axes to reduce (default: all)")
    p.add_argument("--stat", help=f"comma-separated statistics (default: {','.join(_STATS)})")
    p.add_argument(
        "--output",
        help="save the statistics: a .fits file (one statistic: the primary HDU; several: "
        "one extension each, EXTNAME the statistic), .npy (one statistic) or .npz",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    _add_progress_flags(p)
    p.set_defaults(func=_cmd_stats)

    _add_moment(sub)

    p = sub.add_parser(
        "convert", help="FITS images to a zarr group (out.zarr), or back; or tile-compressed"
    )
    p.add_argument("file", help="a FITS file, or a .zarr group")
    p.add_argument("out", help="a .zarr group, or a FITS file")
    p.add_argument(
        "--compression",
        choices=["RICE_1", "GZIP_1", "GZIP_2", "PLIO_1", "HCOMPRESS_1", "NOCOMPRESS"],
        help="write the FITS output tile-compressed (row tiles; floats quantised, level 16)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser("warm", help="compile the common kernels into the on-disk cache")
    p.add_argument("--jobs", type=int, help="worker processes (default: one per CPU)")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--all",
        action="store_true",
        help="every encoding and kernel (default: float32/64, int16/32, everyday reductions)",
    )
    group.add_argument("--clear", action="store_true", help="remove dfits' compiled kernels")
    p.set_defaults(func=_cmd_warm)

    p = sub.add_parser("demo", help="the README's demo (1 GiB synthetic cube)")
    add_demo_arguments(p)
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dfits`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # here, not at exit: a closed pipe is then seen below
        return status
    except BrokenPipeError:
        return _broken_pipe()
    except _ERRORS as err:
        _report(err)
        return 1
    except KeyboardInterrupt:
        print("dfits: interrupted", file=sys.stderr)
        return 130


def _report(err: BaseException) -> None:
    sys.stdout.flush()  # the error after what was printed before it
    message = err.args[0] if isinstance(err, KeyError) and err.args else err
    print(f"dfits: error: {message}", file=sys.stderr)


def _broken_pipe() -> int:
    """The reader of stdout is gone (``| head``): stop quietly, as ``cat`` would."""
    try:
        # Python flushes stdout again at exit and would report the same error there
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a descriptor (captured in a test)
        pass
    return _EXIT_BROKEN_PIPE


if __name__ == "__main__":
    raise SystemExit(main())
