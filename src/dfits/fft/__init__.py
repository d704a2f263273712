"""FFTs of dask arrays along chunked axes, with numpy.fft's signatures.

``dask.array.fft`` refuses an axis split over several chunks; these functions take any
chunking, split a long axis ``N = N1 * N2`` to match it and run Bailey's six-step algorithm as
a dask graph (column FFTs, twiddles, row FFTs, with the transposes as rechunks, or as block I/O
through a scratch store on disk when the array is bigger than memory). Lengths with no usable
factorisation go through Bluestein's chirp convolution. Results equal ``numpy.fft``'s to the
dtype's precision.

>>> import dask.array as da, numpy as np, dfits.fft
>>> x = da.random.default_rng(0).standard_normal(4096, chunks=512)
>>> y = dfits.fft.fft(x, block_size="4KiB")          # 64-sample blocks: a real six-step
>>> bool(np.allclose(y.compute(), np.fft.fft(x.compute())))
True
"""

from __future__ import annotations

from dfits.fft.api import fft, fftn, ifft, ifftn, irfft, irfftn, rfft, rfftn

__all__ = ["fft", "fftn", "ifft", "ifftn", "irfft", "irfftn", "rfft", "rfftn"]
