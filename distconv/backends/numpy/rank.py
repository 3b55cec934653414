"""Rank filters of one block or halo tile: scipy.ndimage's numbers (the oracle for
backends/cuda/rank.py), from the compiled kernels (compiled.py) where ``compiled.reason``
allows, else from scipy.ndimage itself; nan_policy='omit' (numpy's nan-functions of each
window) from the compiled kernels too, else from windows.rank_omit. Only the tile's centre is
returned."""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi

from ...core.modes import mode_of
from ...core.tile import Tile
from .. import windows
from . import compiled


def rank(block, footprint: np.ndarray, rank: int, mode: str, cval: float, origin: tuple):
    """scipy.ndimage.rank_filter of the tile's centre (``footprint`` has the block's ndim)."""
    tile = Tile.of(block)
    ext = tile.assemble()
    n = int(np.count_nonzero(footprint))
    if compiled.reason("pick", ext.dtype, None, ext.ndim, (mode,), cval, taps=n, size=ext.size) is None:
        r = rank + n if rank < 0 else rank
        return compiled.rank(ext, footprint, r, mode, cval, origin, tile.halo, tile.centre.shape)
    if ext.ndim == 1:  # scipy's N-D rule, as the compiled path's (compiled.py: its 1-D fast path differs)
        out = ndi.rank_filter(ext[None], rank, footprint=footprint[None], mode=mode, cval=cval,
                              origin=[0, *origin])[0]
    else:
        out = ndi.rank_filter(ext, rank, footprint=footprint, mode=mode, cval=cval, origin=list(origin))
    return out[tile.interior()]


def extremum_passes(block, passes: list, minimum: bool, mode, cval: float):
    """Separable minimum/maximum: ``passes`` = [(axis, size, origin), ...] in order; ``mode``:
    one, or one per axis."""
    tile = Tile.of(block)
    ext = tile.assemble()
    if not passes:
        return ext[tile.interior()].copy()
    used = tuple(mode_of(mode, axis % ext.ndim) for axis, _, _ in passes)
    size = max(int(k) for _, k, _ in passes)
    if compiled.reason("pick", ext.dtype, None, ext.ndim, used, cval, taps=size, passes=True,
                       size=ext.size) is None:
        return compiled.extremum_passes(ext, passes, minimum, mode, cval, tile.halo, tile.centre.shape)
    f = ndi.minimum_filter1d if minimum else ndi.maximum_filter1d
    for axis, size, origin in passes:
        ext = f(ext, size, axis=axis, mode=mode_of(mode, axis), cval=cval, origin=origin)
    return ext[tile.interior()]



def rank_omit(block, footprint: np.ndarray, pick, mode: str, cval: float, origin: tuple):
    """nan_policy='omit' of a rank filter (float tiles): numpy's nan-functions of each window
    (windows.rank_omit's numbers), from the compiled kernel where ``compiled.reason`` allows,
    else from windows.rank_omit (a sort of each window's values)."""
    tile = Tile.of(block)
    ext = tile.assemble()
    n = int(np.count_nonzero(footprint))
    if ext.dtype.kind == "f" and compiled.reason("pick", ext.dtype, None, ext.ndim, (mode,), cval, taps=n,
                                                 size=ext.size) is None:
        return compiled.rank_omit(ext, footprint, pick.kind, pick.value, mode, cval, origin, tile.halo,
                                  tile.centre.shape)
    return windows.rank_omit(tile, footprint, pick, mode, cval, origin)
