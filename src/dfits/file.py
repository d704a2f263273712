"""``dfits.open``: a FITS file as a sequence of HDUs whose images are lazy dask arrays.

Opening reads headers only (a layout scan); ``hdu.data`` builds a dask array whose tasks
carry (source, offset, shape, decode spec); ``hdu.section[...]`` reads a small region eagerly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from dfits._display import figure, html_for
from dfits.array.chunks import normalize, reduction_chunks
from dfits.array.image import ImageReader
from dfits.array.reader import dask_array
from dfits.errors import DfitsError, HDUNotFoundError, HeaderError, UnsupportedError, where
from dfits.format.compressed import image_header_of
from dfits.format.geometry import check_shape
from dfits.format.layout import FileLayout, HDULayout, scan
from dfits.io import open_source, release, scanning
from dfits.io.download import or_download
from dfits.listing import print_info, summary
from dfits.progress import ScanProgress, interactive
from dfits.section import Section, forget
from dfits.tables.access import TableAccess
from dfits.tables.data import TableData, table_dtype
from dfits.tiles.reader import tile_reader

__all__ = ["HDU", "FitsFile", "open"]

_IMAGE_KINDS = ("primary", "image", "compressed_image")


class HDU(TableAccess):
    """One header-data unit: header, geometry and lazy access to the data (tables: see
    :class:`dfits.tables.access.TableAccess`)."""

    # A file may hold 10,000 of these; no per-instance dict.
    __slots__ = ("_file", "layout")

    def __init__(self, file: FitsFile, layout: HDULayout) -> None:
        self._file = file
        self.layout = layout

    # -- description ----------------------------------------------------------------------
    @property
    def index(self) -> int:
        """Position in the file (0 = primary)."""
        return self.layout.index

    @property
    def name(self) -> str:
        """EXTNAME (``PRIMARY`` for the primary HDU, as astropy names it)."""
        return self.layout.name

    @property
    def ver(self) -> int:
        """EXTVER (1 when absent)."""
        return self.layout.ver

    @property
    def kind(self) -> str:
        """``primary``, ``image``, ``bintable``, ``table``, ``compressed_image``, ..."""
        return self.layout.kind

    @property
    def header(self):
        """The :class:`dfits.Header` of this HDU (a compressed image's: the image header
        rebuilt from its Z keywords, as astropy's ``CompImageHDU.header``)."""
        image = image_header_of(self.layout)
        return self.layout.header if image is None else image

    @property
    def shape(self) -> tuple[int, ...]:
        """Data shape in numpy order (NAXISn reversed); ``()`` without data."""
        return self.layout.shape

    @property
    def dtype(self) -> np.dtype | None:
        """Physical dtype, as astropy's ``hdu.data`` would have it (native byte order): a
        structured dtype of the columns for a table (:func:`dfits.tables.data.table_dtype`)."""
        if self.is_table:
            return table_dtype(self.columns, self._where())
        spec = self.layout.decode
        return None if spec is None else spec.physical

    @property
    def is_image(self) -> bool:
        """True when the data is an image dfits can read."""
        return self.kind in _IMAGE_KINDS and self.layout.decode is not None

    def _where(self) -> str:
        return where(self._file.filename, self.index, self.name)

    def __repr__(self) -> str:
        dtype = "" if self.is_table or self.dtype is None else f" {self.dtype}"
        text = f"<dfits.HDU {self.index} {self.name!r} {self.kind} {self.shape}{dtype}"
        if self.is_table:
            try:
                text += f" columns: {', '.join(self.colnames)}"
            except DfitsError as err:
                text += f" (columns unreadable: {err})"
        return text + ">"

    def __getitem__(self, name: str):
        """``hdu["FLUX"]``: the column's lazy dask array (see :meth:`column`)."""
        if not self.is_table:
            raise UnsupportedError(f"{self._where()}: only table HDUs have named columns")
        return self.column(name)

    def _repr_html_(self) -> str | None:
        # Rendered by the display layer, which registers itself (None: plain text repr).
        return html_for(self)

    def quicklook(self, full: bool = False, max_bytes: int = 256 * 2**20):
        """Moment-0 image and integrated spectrum as a matplotlib figure (decimated read).

        Drawn by the display layer's registered ``"quicklook"`` figure; see
        :func:`dfits.jupyter.quicklook`.
        """
        return figure("quicklook", self, full, max_bytes)

    # -- data -----------------------------------------------------------------------------
    def _block(self, raw: bool) -> Any:
        spec = self.layout.decode
        # the wider of the stored and the physical values (raw and data make one of each)
        itemsize = 1 if spec is None else max(spec.itemsize, spec.physical.itemsize)
        check_shape(self.shape, itemsize, self._where())
        if self.kind == "compressed_image" and self.layout.tiles is None:
            raise HeaderError(self.layout.decode.error)
        if self.layout.tiles is not None:
            # reads nothing: each read looks up only its own tiles' rows of the table
            tiles = tile_reader(self._file.source, self.layout, self._where(), raw)
            if not raw:
                tiles.spec.check()
            return tiles
        if not self.is_image:
            raise UnsupportedError(
                f"{self._where()}: {self.kind} HDUs have no image data that dfits can read"
            )
        spec = self.layout.decode
        if not raw:
            spec.check()
        return ImageReader(self._file.source, self.layout.data_offset, self.shape, spec, raw)

    def _plan(self, raw: bool, chunks: Any = None, reduce_axis: int | None = None):
        # the reader and chunks of data/raw: the dask array's, and dfits.array.eager's
        block = self._block(raw)
        spec = block.spec
        chunks = self._file.chunks if chunks is None else chunks
        # default plans of compressed images: smaller chunks of whole tiles
        tile = self.layout.tiles.tile if self.layout.tiles is not None else None
        if chunks is None and reduce_axis is not None:
            axis = normalize_axis_index(reduce_axis, len(self.shape))
            return block, reduction_chunks(self.shape, block.dtype, spec.itemsize, axis, tile)
        return block, normalize(chunks, self.shape, block.dtype, spec.itemsize, tile)

    def _array(self, raw: bool, chunks: Any = None, reduce_axis: int | None = None):
        from dask.base import tokenize

        block, chunks = self._plan(raw, chunks, reduce_axis)
        token = tokenize(
            self._file.source.token, self.layout.data_offset, self.shape, block.spec, raw, chunks
        )
        label = "raw" if raw else "data"
        # tiles: a slice of the array decodes only the tiles it meets, not its whole chunks
        tiled = self.layout.tiles is not None
        return dask_array(block, chunks, f"dfits-{label}-{self.index}-{token}", narrow=tiled)

    @property
    def _dataless(self) -> bool:
        # NAXIS = 0: astropy's ``hdu.data`` is None there (a primary HDU before extensions)
        return self.kind in _IMAGE_KINDS and not self.shape

    @property
    def data(self):
        """Physical values as a lazy ``dask.array.Array`` (native order, NaN for BLANK).

        None for an image HDU without data (``NAXIS = 0``), as in astropy. For a table, a
        :class:`~dfits.tables.data.TableData`: ``data[name]`` is the lazy column,
        ``data[rows]`` those rows read now, ``data.columns`` the columns, as astropy's.
        """
        if self.is_table:
            self._table()  # a header error surfaces here, not at the first column
            return TableData(self)
        return None if self._dataless else self._array(raw=False)

    @property
    def raw(self):
        """Stored values (big-endian, unscaled) as a lazy, zero-copy dask array (or None)."""
        return None if self._dataless else self._array(raw=True)

    def to_dask(self, chunks: Any = None, *, reduce_axis: int | None = None):
        """Like :attr:`data`, with explicit ``chunks`` or a plan for reducing along one axis.

        Parameters
        ----------
        chunks : optional
            Anything dask accepts; by default the file's chunks (those of ``dfits.open``).
        reduce_axis : int, optional
            With no ``chunks`` given here or at open: plan chunks for reductions along this
            numpy axis (moment maps), deep enough along it that per-chunk partial sums stay
            small (:func:`dfits.array.chunks.reduction_chunks`).

        Returns
        -------
        dask.array.Array or None
            None for an image HDU without data (``NAXIS = 0``), like :attr:`data`.
        """
        if self._dataless:
            return None
        return self._array(raw=False, chunks=chunks, reduce_axis=reduce_axis)

    @property
    def section(self) -> Section:
        """Eager reads of small regions: ``hdu.section[10, 200:232, 300:332]`` → numpy."""
        # one Section for plain and compressed images: it reads through the reader's ``read``
        return Section(self._block(raw=False))


class FitsFile(Sequence[HDU]):
    """An opened FITS file: its HDUs by index, EXTNAME or (EXTNAME, EXTVER)."""

    def __init__(self, source: Any, layout: FileLayout, chunks: Any = None) -> None:
        self.source = source
        self.layout = layout
        self.chunks = chunks
        #: parsed table columns by HDU index (:mod:`dfits.tables.access`)
        self.tables: dict[int, Any] = {}
        # wrappers are made on first access: a 10,000-HDU file should not pay for them at open
        self._hdus: list[HDU | None] = [None] * len(layout.hdus)

    @property
    def filename(self) -> str:
        """The path or URL that was opened."""
        return self.layout.filename

    def __len__(self) -> int:
        return len(self._hdus)

    def _hdu(self, i: int) -> HDU:
        hdu = self._hdus[i]
        if hdu is None:
            hdu = self._hdus[i] = HDU(self, self.layout.hdus[i])
        return hdu

    def __iter__(self) -> Iterator[HDU]:
        hdus = self._hdus
        if None in hdus:
            # one pass makes every wrapper: a walk over 10,000 HDUs pays no generator frames
            layouts = self.layout.hdus
            for i, h in enumerate(hdus):
                if h is None:
                    hdus[i] = HDU(self, layouts[i])
        return iter(hdus)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return [self._hdu(i) for i in range(len(self._hdus))[key]]
        if isinstance(key, int | np.integer) and not isinstance(key, bool):
            try:
                return self._hdu(int(key))
            except IndexError:
                if self.layout.stopped is not None and int(key) >= len(self):
                    raise HeaderError(self.layout.stopped) from None  # the scan stopped there
                raise HDUNotFoundError(
                    f"{where(self.filename)}: no HDU {key} (the file has {len(self)}: "
                    f"{self._names()})"
                ) from None
        name, ver = (key, None) if isinstance(key, str) else tuple(key)
        wanted_name = str(name).upper()
        for i, h in enumerate(self.layout.hdus):
            if h.name.upper() == wanted_name and (ver is None or h.ver == ver):
                return self._hdu(i)
        wanted = repr(name) if ver is None else f"({name!r}, {ver})"
        raise HDUNotFoundError(
            f"{where(self.filename)}: no HDU named {wanted}; available: {self._names()}"
        )

    def __contains__(self, key: object) -> bool:
        try:
            self[key]
        except (HDUNotFoundError, TypeError, ValueError):
            return False
        return True

    def _names(self) -> str:
        stop = "" if self.layout.stopped is None else f" (then: {self.layout.stopped})"
        return ", ".join(f"{h.index}:{h.name or '-'}" for h in self.layout.hdus) + stop

    def info(self, output: Any = None) -> list[tuple[Any, ...]] | None:
        """Print a table of the HDUs, like astropy's ``HDUList.info()``.

        Parameters
        ----------
        output : file-like or False, optional
            Where to print the table (default: ``sys.stdout``). ``False`` prints nothing and
            returns the rows instead.

        Returns
        -------
        list of tuple or None
            With ``output=False``, one ``(index, name, ver, kind, cards, dims, format)`` row
            per HDU (a table's as astropy's: ``"2R x 3C"``, ``"[E, J, 5A]"``); otherwise
            None, so that a notebook cell ending in ``f.info()`` shows the table once.
        """
        rows = [(h.index, h.name, h.ver, h.kind, h.header.ncards, *summary(h)) for h in self]
        if output is False:
            return rows
        print_info(self.filename, rows, output)
        return None

    def close(self) -> None:
        """Release what this process holds open for the file: its descriptor and section maps.

        Arrays made from the file stay usable: their reads open the file again (and raise
        :class:`~dfits.FileChangedError` if it changed meanwhile).
        """
        forget(self.source.token)
        release(self.source)

    def __enter__(self) -> FitsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<dfits.FitsFile {self.filename!r} with {len(self)} HDUs>"

    def _repr_html_(self) -> str | None:
        return html_for(self)


def open(
    path: str | os.PathLike[str] | Any,
    *,
    chunks: Any = None,
    storage_options: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> FitsFile:
    """Open a FITS file lazily: read its headers, map nothing.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A local path, any fsspec URL (``https://``, ``s3://``, ...), or an open binary file
        (``open(p, "rb")`` and fsspec files are read through their path or URL; others,
        such as ``io.BytesIO``, are read whole into memory, readable in this process only).
    chunks : optional
        Default chunks for ``hdu.data`` (anything dask accepts); by default contiguous slabs
        of the slowest axes near dask's ``array.chunk-size``.
    storage_options : dict, optional
        Passed to fsspec for URLs.
    progress : bool, optional
        Show header-scan progress on stderr once a scan has run for 2 s (default: for remote
        files, when stderr is a terminal or the caller a Jupyter kernel).

    Returns
    -------
    FitsFile
    """
    return _open(path, chunks, storage_options, progress, stacklevel=2)


def _open(
    path: str | os.PathLike[str] | Any,
    chunks: Any,
    storage_options: dict[str, Any] | None,
    progress: bool | None,
    stacklevel: int,
) -> FitsFile:
    """:func:`open`, its warnings ``stacklevel`` frames above this call (1: its caller)."""
    source = open_source(path, storage_options)
    # a server that ignores Range: the file is read from a downloaded copy (docs/remote.md)
    return or_download(
        source, lambda s: _scan_open(path, s, chunks, progress, stacklevel + 4), stacklevel + 2
    )


def _scan_open(path: Any, source: Any, chunks: Any, progress: bool | None, level: int) -> FitsFile:
    """Scan ``source``'s headers into a :class:`FitsFile`; messages name the file by ``path``
    as given (a path or URL), or by a file object's name."""
    if progress is None:
        # local scans take milliseconds; remote ones may take long for many HDUs
        progress = not source.mappable and interactive()
    reporter = ScanProgress() if progress else None
    name = os.fspath(path) if isinstance(path, str | os.PathLike) else source.path
    with scanning(source) as whole:  # an error releases the source: no file to close
        layout = scan(source.read, source.size, filename=name, progress=reporter, whole=whole,
                      stacklevel=level)  # fmt: skip
    return FitsFile(source, layout, chunks)
