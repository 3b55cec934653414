"""Correlation of one block or halo tile: scipy.ndimage (the oracle for
backends/cuda/convolve.py).

``correlate`` takes an N-D mask (the graph layer has already turned convolve into correlate);
``correlate_passes`` runs 1-D masks along axes in turn (separable filters, correlate1d);
``correlate_pair`` runs passes, then a mask over their result (fused chains, e.g. gaussian ->
laplace), and may count that result. They return only the tile's centre: the halos are read,
never written, and never padded.

Each runs the compiled kernel (compiled.py: scipy's numbers, one GIL release per block) where
``compiled.reason`` allows, else scipy.ndimage itself.
"""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi

from ...core.arrays import into
from ...core.modes import mode_of
from ...core.stencil import run_pair
from ...core.tile import Tile
from . import compiled
from .histogram import counts


def _result_dtype(ext, dtype) -> np.dtype:
    return ext.dtype if dtype is None else np.dtype(dtype)


def correlate(block, weights: np.ndarray, mode: str, cval: float, origin: tuple, dtype=None, out=None):
    """scipy.ndimage.correlate of the tile's centre; ``weights`` has the block's ndim;
    ``dtype``: of the result (default the block's); ``out``: an array to fill and return."""
    tile = Tile.of(block)
    ext = tile.assemble()
    dt = _result_dtype(ext, dtype)
    if compiled.reason("linear", ext.dtype, dt, ext.ndim, (mode,), size=ext.size) is None:
        return into(out, compiled.correlate(ext, weights, mode, cval, origin, tile.halo, tile.centre.shape, dt))
    res = ndi.correlate(ext, weights, output=dtype, mode=mode, cval=cval, origin=list(origin))
    return into(out, res[tile.interior()])


def correlate_passes(block, passes: list, mode, cval: float, dtype=None, out=None):
    """Apply ``passes`` = [(axis, weights1d, origin), ...] in order, as scipy chains 1-D filters
    (each intermediate in the result's dtype, as scipy.ndimage.gaussian_filter does).
    ``mode``: one mode, or one per axis."""
    tile = Tile.of(block)
    ext = tile.assemble()
    dt = _result_dtype(ext, dtype)
    used = tuple(mode_of(mode, axis % ext.ndim) for axis, _, _ in passes)
    if passes and compiled.reason("linear", ext.dtype, dt, ext.ndim, used, size=ext.size) is None:
        return into(out, compiled.correlate_passes(ext, passes, mode, cval, tile.halo, tile.centre.shape, dt))
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
