"""Correlation of one block or halo tile: scipy.ndimage (the oracle for
backends/cuda/convolve.py).

``correlate`` takes an N-D mask (the graph layer has already turned convolve into correlate);
``correlate_passes`` runs 1-D masks along axes in turn (separable filters, correlate1d);
``correlate_pair`` runs passes, then a mask over their result (fused chains, e.g. gaussian ->
laplace), and may count that result. They return only the tile's centre: the halos are read,
never written, and never padded.
"""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi

from ...core.arrays import into
from ...core.modes import mode_of
from ...core.stencil import mask_depth, run_pair
from ...core.tile import Tile
from ..windows import padded
from .histogram import counts


def correlate(block, weights: np.ndarray, mode: str, cval: float, origin: tuple, dtype=None, out=None):
    """scipy.ndimage.correlate of the tile's centre; ``weights`` has the block's ndim;
    ``dtype``: of the result (default the block's); ``out``: an array to fill and return.
    float32 tiles under small masks take the shifted sum below instead."""
    tile = Tile.of(block)
    if _shifted_sum_takes(tile, weights, mode, dtype):
        return into(out, _shifted_sum(tile, weights, mode, cval, origin))
    ext = tile.assemble()
    res = ndi.correlate(ext, weights, output=dtype, mode=mode, cval=cval, origin=list(origin))
    return into(out, res[tile.interior()])


# float32 tiles under masks of at most this many taps correlate as a sum of shifted slices,
# row bands at a time that stay in the core's cache, accumulated in float32 by numpy's vector
# loops: 1.85x scipy's correlate (which sums every output in float64) on a 5x5, 476 against
# 257 MB/s per core; float64 accumulation ran at scipy's speed (NOTES.md). The CPU engine spends
# most of its compute here.
SHIFTED_MAX_TAPS = 49
BAND_BYTES = 2**18  # a band of the sum and its product: within a core's L2


def _shifted_sum_takes(tile: Tile, weights: np.ndarray, mode: str, dtype) -> bool:
    """float32 in and out, a mask of at most SHIFTED_MAX_TAPS, a mode numpy.pad fills as scipy
    does (wrap at a tile's edge is the halo's), the tile at least the mask's reach wide."""
    return (tile.centre.dtype == np.float32 and np.dtype(dtype or np.float32) == np.float32
            and 0 < weights.size <= SHIFTED_MAX_TAPS and mode != "wrap" and tile.centre.size > 0
            and all(n >= k for n, k in zip(tile.centre.shape, weights.shape)))


def _shifted_sum(tile: Tile, weights: np.ndarray, mode: str, cval: float, origin: tuple) -> np.ndarray:
    """out = sum over taps k of w[k] * ext[i + k], every tap multiplied (NaN and inf propagate
    as scipy's), taps in C order, one band of rows at a time."""
    ext = padded(tile, mask_depth(weights.shape, origin), mode, cval)
    shape = tile.centre.shape
    out = np.empty(shape, np.float32)
    rows = max(1, BAND_BYTES // (4 * max(1, int(np.prod(shape[1:])))))
    acc, tmp = np.empty((rows,) + shape[1:], np.float32), np.empty((rows,) + shape[1:], np.float32)
    taps = [(k, np.float32(weights[k])) for k in np.ndindex(weights.shape)]
    for r0 in range(0, shape[0], rows):
        n = min(rows, shape[0] - r0)
        a, t = acc[:n], tmp[:n]
        for i, (k, w) in enumerate(taps):
            src = ext[(slice(r0 + k[0], r0 + k[0] + n),) + tuple(slice(j, j + s) for j, s in zip(k[1:], shape[1:]))]
            if i == 0:
                np.multiply(src, w, out=a)
            else:
                np.multiply(src, w, out=t)
                np.add(a, t, out=a)
        out[r0:r0 + n] = a
    return out


def correlate_passes(block, passes: list, mode, cval: float, dtype=None, out=None):
    """Apply ``passes`` = [(axis, weights1d, origin), ...] in order, as scipy chains 1-D filters
    (each intermediate in the result's dtype, as scipy.ndimage.gaussian_filter does).
    ``mode``: one mode, or one per axis."""
    tile = Tile.of(block)
    ext = tile.assemble()
    for axis, w, origin in passes:
        ext = ndi.correlate1d(ext, w, axis=axis, output=dtype, mode=mode_of(mode, axis), cval=cval,
                              origin=origin)
    res = ext[tile.interior()]
    return into(out, res if dtype is None else res.astype(dtype, copy=False))


def correlate_pair(block, passes: list, mode, cval: float, weights: np.ndarray, mode2: str, cval2: float,
                   origin2: tuple, dtype=None, bins=None, out=None):
    """``passes`` (as correlate_passes), then ``weights`` (as correlate, with ``mode2``,
    ``cval2``, ``origin2``) over their result, as the two run one after the other: the second
    reads the first's result grown by its own halo, and applies ``mode2`` at the global edges.
    ``bins`` = (edges, uniform): that result's counts (as counts()) instead of the result."""
    return run_pair(block, (correlate_passes, correlate, counts), passes, mode, cval, weights, mode2,
                    cval2, origin2, dtype, bins, out)
