"""``to_fits`` and ``append`` of arrays and dfits HDUs: objects → image HDUs → a writer.

The contract: every object becomes one image HDU (:class:`~dfits.write.images.ImageItem`) —
a numpy or dask array (or anything ``numpy.asarray`` takes) with the caller's ``header``
cards; a dfits image HDU (``dfits.open(p)[i]``) with its physical values, its own cards but
the mandatory and scaling ones (the writer makes those for the data), its EXTNAME, and the
caller's cards; an ``ImageItem`` as it is. One object is the primary HDU; a list or tuple
gives one IMAGE extension per item after an empty primary HDU (HDUs without data are
skipped there: the writer makes the empty primary). :func:`write_items` and
:func:`append_items` send the HDUs to the plain (:mod:`dfits.write.images`) or
tile-compressed (:mod:`dfits.write.compressed`) writer.

DataArrays and Datasets are the xarray adapter's (:mod:`dfits.xarray.tofits`), which makes
their items (header from attributes, coordinates and WCS) and calls the same two functions;
``dfits.to_fits`` sends xarray objects there and everything else here, so that writing an
array never imports xarray. Given an xarray object, this module raises instead of writing its
values without their coordinates.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from dfits.errors import UnsupportedError
from dfits.write.images import ImageItem

__all__ = [
    "append",
    "append_items",
    "dataless",
    "hdu_item",
    "item_of",
    "items_of",
    "quantize_options",
    "to_fits",
    "write_items",
]


def _is_hdu(obj: Any) -> bool:
    # without importing dfits.file (and the reading side with it): if it is not loaded, obj
    # cannot be one of its HDUs
    file = sys.modules.get("dfits.file")
    return file is not None and isinstance(obj, file.HDU)


def dataless(hdu: Any) -> bool:
    """Whether a dfits HDU is an image without data (NAXIS = 0, a primary before extensions)."""
    return hdu.kind in ("primary", "image") and not hdu.shape


def hdu_item(hdu: Any, header: Any = None) -> ImageItem:
    """The image HDU a dfits HDU becomes: its physical values, its cards but the mandatory
    and scaling ones (the writer makes them for the data), its EXTNAME, then ``header``'s."""
    from dfits.format.imagehdu import user_cards
    from dfits.format.mandatory import MANDATORY

    what = hdu._where()  # names the file, the HDU and its EXTNAME
    if dataless(hdu):
        raise ValueError(f"{what}: an image HDU without data (NAXIS = 0); nothing to write")
    if not hdu.is_image:
        raise UnsupportedError(f"{what}: a {hdu.kind} HDU; only images are written")
    cards = [c for c in user_cards(hdu.header) if not MANDATORY.fullmatch(c[0])]
    name = None if hdu.name in ("PRIMARY", "") else hdu.name
    return ImageItem(hdu.data, cards + user_cards(header), name)


def item_of(obj: Any, header: Any = None) -> ImageItem:
    """The image HDU one array, dfits HDU or ImageItem becomes (xarray objects raise)."""
    from dfits.format.imagehdu import user_cards

    if isinstance(obj, ImageItem):
        return obj
    if type(obj).__module__.split(".")[0] == "xarray":
        # its coordinates and attributes would be lost silently: the adapter keeps them
        raise TypeError(
            f"a {type(obj).__name__} is written by dfits.to_fits/dfits.append (its xarray "
            "adapter keeps coordinates and attributes), not by dfits.write"
        )
    if _is_hdu(obj):
        return hdu_item(obj, header)
    return ImageItem(obj, user_cards(header), None)


def items_of(obj: Any, header: Any = None) -> tuple[list[ImageItem], bool]:
    """The HDUs ``obj`` becomes, and whether the first is the primary HDU.

    >>> import numpy as np
    >>> items, primary = items_of([np.zeros(2), np.ones(3)], {"OBJECT": "M 1"})
    >>> len(items), primary, items[0].cards[0][:2]
    (2, False, ('OBJECT', 'M 1'))
    """
    if isinstance(obj, list | tuple):
        # an HDU without data (a primary before extensions) has nothing to carry over
        kept = [x for x in obj if not (_is_hdu(x) and dataless(x))]
        return [item_of(x, header) for x in kept], False
    return [item_of(obj, header)], True


def quantize_options(
    bitpix: int | None, bscale: float, bzero: float, blank: int | None
) -> dict[str, Any] | None:
    """The keywords of :func:`~dfits.format.imagehdu.parse_quantized`, or None (no scaling)."""
    if bitpix is not None:
        return {"bitpix": bitpix, "bscale": bscale, "bzero": bzero, "blank": blank}
    if (bscale, bzero, blank) != (1.0, 0.0, None):
        raise ValueError("bscale, bzero and blank quantise floats: pass bitpix as well")
    return None


def write_items(
    items: list[ImageItem],
    primary: bool,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    checksum: bool = True,
    compute: bool = True,
    fsync: bool = True,
    bitpix: int | None = None,
    bscale: float = 1.0,
    bzero: float = 0.0,
    blank: int | None = None,
    compression: str | None = None,
    tile_shape: Any = None,
    quantize_level: float = 16.0,
    quantize_method: str = "SUBTRACTIVE_DITHER_2",
    dither_seed: int | None = None,
    compression_level: int | None = None,
    rice_blocksize: int = 32,
    hcompress_scale: int = 0,
) -> Any:
    """Write ``items`` (the first as the primary HDU when ``primary``) with the options of
    :func:`to_fits`: plain or quantised images, or tile-compressed ones."""
    from dfits.write.compressed import write_compressed
    from dfits.write.images import write_images

    quantize = quantize_options(bitpix, bscale, bzero, blank)
    if compression is not None:
        if quantize is not None:
            raise ValueError("bitpix/bscale/bzero/blank and compression: use quantize_level")
        return write_compressed(
            items, path, compression=compression, tile_shape=tile_shape,
            quantize_level=quantize_level, quantize_method=quantize_method,
            dither_seed=dither_seed, compression_level=compression_level,
            rice_blocksize=rice_blocksize, hcompress_scale=hcompress_scale,
            overwrite=overwrite, checksum=checksum,
            compute=compute, fsync=fsync,
        )  # fmt: skip
    return write_images(
        items, path, primary=primary, overwrite=overwrite, checksum=checksum, compute=compute,
        fsync=fsync, quantize=quantize,
    )  # fmt: skip


def append_items(
    items: list[ImageItem],
    primary: bool,
    path: str | os.PathLike[str],
    *,
    checksum: bool = True,
    fsync: bool = True,
    bitpix: int | None = None,
    bscale: float = 1.0,
    bzero: float = 0.0,
    blank: int | None = None,
    wait: float = 60.0,
    compression: str | None = None,
    **compression_options: Any,
) -> str:
    """Append ``items`` to ``path`` as IMAGE extensions (tile-compressed ones with
    ``compression``), with the options of :func:`append`; a missing file is written whole
    instead (the first item its primary HDU when ``primary``)."""
    from dfits.write.compressed import append_compressed
    from dfits.write.images import append_images

    quantize = quantize_options(bitpix, bscale, bzero, blank)
    if compression is not None and quantize is not None:
        raise ValueError("bitpix/bscale/bzero/blank and compression: use quantize_level")
    if not os.path.exists(path):
        return str(write_items(items, primary, path, checksum=checksum, fsync=fsync,
                               bitpix=bitpix, bscale=bscale, bzero=bzero, blank=blank,
                               compression=compression, **compression_options))  # fmt: skip
    if compression is not None:
        return append_compressed(items, path, checksum=checksum, fsync=fsync, wait=wait,
                                 compression=compression, **compression_options)  # fmt: skip
    if compression_options:
        raise TypeError(f"{sorted(compression_options)} apply to compressed HDUs only")
    return append_images(items, path, checksum=checksum, fsync=fsync, quantize=quantize, wait=wait)


def to_fits(
    obj: Any,
    path: str | os.PathLike[str],
    *,
    header: Any = None,
    overwrite: bool = False,
    checksum: bool = True,
    compute: bool = True,
    fsync: bool = True,
    bitpix: int | None = None,
    bscale: float = 1.0,
    bzero: float = 0.0,
    blank: int | None = None,
    compression: str | None = None,
    tile_shape: Any = None,
    quantize_level: float = 16.0,
    quantize_method: str = "SUBTRACTIVE_DITHER_2",
    dither_seed: int | None = None,
    compression_level: int | None = None,
    rice_blocksize: int = 32,
    hcompress_scale: int = 0,
) -> Any:
    """Write arrays, DataArrays or Datasets to a FITS file, in parallel and atomically.

    Parameters
    ----------
    obj : dask or numpy array, dfits image HDU, xarray.DataArray, xarray.Dataset, or a list
        One array, HDU or DataArray: the primary HDU. A Dataset: one IMAGE extension per data
        variable (EXTNAME = its name, upper case). A list: one IMAGE extension each. Extensions
        follow an empty primary HDU. A dfits HDU keeps its cards and EXTNAME (its values are
        written as the physical values they are). DataArrays and Datasets are written by
        :func:`dfits.to_fits` (through :mod:`dfits.xarray.tofits`, which makes their header
        from attributes, coordinates and WCS); ``dfits.write.to_fits`` refuses them.
    path : str or os.PathLike
        The target. Its directory must exist; it is replaced only when complete.
    header : optional
        Extra cards for every HDU written: a ``dfits.Header``, an astropy Header, a mapping or
        ``(keyword, value[, comment])`` tuples. Cards contradicting the data raise
        :class:`~dfits.HeaderError`; BSCALE/BZERO/BLANK/CHECKSUM/DATASUM are the writer's own.
    overwrite : bool
        Replace an existing file (else :class:`~dfits.errors.OutputExistsError`).
    checksum : bool
        Write DATASUM and CHECKSUM (computed in the encoding pass).
    compute : bool
        False: return a ``dask.delayed`` object whose computation writes the file.
    fsync : bool
        Flush the data to disk before the rename (and the directory after), so that even a
        power cut leaves the old file or the new one. False skips the flush (about 0.5 s per
        256 MiB on a virtual disk): still atomic if the process dies, not if the machine does.
    bitpix : {8, 16, 32, 64}, optional
        Store float data as scaled integers of this BITPIX: ``rint((x - bzero) / bscale)``
        (round half to even), clipped to the type's range, NaN as ``blank``; readers get
        ``q * bscale + bzero`` back. Encoded in the same pass as the byte swap and checksum.
    bscale, bzero : float
        The scaling (with ``bitpix`` only).
    blank : int, optional
        The stored value of NaN (default: the type's minimum; 255 for BITPIX 8).
    compression : {"RICE_1", "GZIP_1", "GZIP_2", "PLIO_1", "HCOMPRESS_1", "NOCOMPRESS"}, optional
        Write every image tile-compressed (a ``ZIMAGE`` binary table extension after an empty
        primary HDU, as fpack and astropy's ``CompImageHDU``): the chunk tasks compress their
        tiles in parallel. Integers are lossless; floats are quantised per tile (RICE_1
        needs that; with GZIP_1/GZIP_2/NOCOMPRESS ``quantize_level=0`` keeps them exact), NaN
        stored as ZBLANK. PLIO_1: integer images of 8 to 32 bits whose stored values are in
        0..2**24-1 (masks; another value raises :class:`~dfits.errors.DataError`). Not with
        ``bitpix``.
    tile_shape : tuple of int, optional
        Tile shape in numpy axis order (default: one image row per tile, as fpack). Edge tiles
        are partial; chunks are rechunked to whole tiles.
    quantize_level : float
        Floats: ZSCALE = the tile's noise / level (> 0), or ``-quantize_level`` (< 0); 0 stores
        floats losslessly (not with RICE_1).
    quantize_method : {"SUBTRACTIVE_DITHER_2", "SUBTRACTIVE_DITHER_1", "NO_DITHER"}
        The dither of quantised floats (_2 keeps exact zeros exact).
    dither_seed : int, optional
        ZDITHER0, 1..10000 (default: from the clock, as astropy and fpack).
    compression_level : int, optional
        GZIP_1/GZIP_2: the deflate level, 1 (fastest; the default, as cfitsio and fpack) to 9
        (smallest). Other algorithms raise :class:`~dfits.errors.OptionError`.
    rice_blocksize : {32, 16}
        RICE_1: pixels per coding block (ZVAL1 of BLOCKSIZE; 32 as fpack and astropy).
    hcompress_scale : int
        HCOMPRESS_1: the digitisation scale of the H-transform's coefficients (0, default:
        lossless; larger: lossy and smaller), an absolute scale (ZVAL1 = -scale, cfitsio's sign).

    Returns
    -------
    str or dask.delayed.Delayed
        The path written, or the delayed write.

    Examples
    --------
    >>> import numpy as np, dfits
    >>> dfits.to_fits(np.arange(6.0).reshape(2, 3), "x.fits")     # doctest: +SKIP
    'x.fits'
    """
    items, primary = items_of(obj, header)
    return write_items(
        items, primary, path, overwrite=overwrite, checksum=checksum, compute=compute,
        fsync=fsync, bitpix=bitpix, bscale=bscale, bzero=bzero, blank=blank,
        compression=compression, tile_shape=tile_shape, quantize_level=quantize_level,
        quantize_method=quantize_method, dither_seed=dither_seed,
        compression_level=compression_level, rice_blocksize=rice_blocksize,
        hcompress_scale=hcompress_scale,
    )  # fmt: skip


def append(
    path: str | os.PathLike[str],
    obj: Any,
    *,
    header: Any = None,
    checksum: bool = True,
    fsync: bool = True,
    bitpix: int | None = None,
    bscale: float = 1.0,
    bzero: float = 0.0,
    blank: int | None = None,
    wait: float = 60.0,
    compression: str | None = None,
    tile_shape: Any = None,
    quantize_level: float = 16.0,
    quantize_method: str = "SUBTRACTIVE_DITHER_2",
    dither_seed: int | None = None,
    compression_level: int | None = None,
    rice_blocksize: int = 32,
    hcompress_scale: int = 0,
) -> str:
    """Append arrays, DataArrays or Datasets to a FITS file as IMAGE extensions, in place.

    The existing HDUs are neither read nor rewritten (only the first block is checked), so
    an append costs the same whatever the file holds. The data are written first, in parallel
    by the chunk tasks, then the headers; until then readers see the old HDUs followed by
    zero padding. On failure the file is cut back to its old size; a process killed
    mid-append leaves a journal beside the file, and the next append cuts its partial HDUs
    off first. Appends to one file are serialised by a lock (``flock``).

    Parameters
    ----------
    path : str or os.PathLike
        A FITS file (SIMPLE first, whole 2880-byte blocks). Absent: written by
        :func:`to_fits` instead (a single array then becomes the primary HDU).
    obj : dask or numpy array, dfits image HDU, xarray.DataArray, xarray.Dataset, or a list
        One IMAGE extension per array, HDU or DataArray (EXTNAME = its name, upper case, when
        it has one), per data variable of a Dataset, per list item. DataArrays and Datasets
        are appended by :func:`dfits.append` (through :mod:`dfits.xarray.tofits`).
    header, checksum, fsync, bitpix, bscale, bzero, blank
        As for :func:`to_fits`.
    wait : float
        Seconds to wait while another process appends to the file, before
        :class:`~dfits.errors.FileBusyError`.
    compression, tile_shape, quantize_level, quantize_method, dither_seed
        Append tile-compressed images (``ZIMAGE`` binary tables), as :func:`to_fits` writes
        them; the chunk tasks compress into scratch files, then the tables and heaps are
        written after the old end, the headers' first byte last. ``compression_level``,
        ``rice_blocksize`` and ``hcompress_scale`` too.

    Returns
    -------
    str
        The path.

    Examples
    --------
    >>> import numpy as np, dfits
    >>> dfits.append("x.fits", np.ones((2, 3), "f4"), header={"EXTNAME": "NEXT"})  # doctest: +SKIP
    'x.fits'
    """
    items, primary = items_of(obj, header)
    return append_items(
        items, primary, path, checksum=checksum, fsync=fsync, bitpix=bitpix, bscale=bscale,
        bzero=bzero, blank=blank, wait=wait, **_compression(
            compression, tile_shape=tile_shape, quantize_level=quantize_level,
            quantize_method=quantize_method, dither_seed=dither_seed,
            compression_level=compression_level, rice_blocksize=rice_blocksize,
            hcompress_scale=hcompress_scale,
        ),
    )  # fmt: skip


def _compression(compression: str | None, **options: Any) -> dict[str, Any]:
    """The compression keywords of an append: none at all for plain images."""
    return {} if compression is None else {"compression": compression, **options}
