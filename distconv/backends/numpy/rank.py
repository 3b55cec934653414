"""Rank filters of one block or halo tile: scipy.ndimage (the oracle for
backends/cuda/rank.py). Only the tile's centre is returned."""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi

from ...core.modes import mode_of
from ...core.tile import Tile
from ..windows import rank_omit  # noqa: F401 - nan_policy='omit', written once for both backends


def rank(block, footprint: np.ndarray, rank: int, mode: str, cval: float, origin: tuple):
    """scipy.ndimage.rank_filter of the tile's centre (``footprint`` has the block's ndim)."""
    tile = Tile.of(block)
    out = ndi.rank_filter(tile.assemble(), rank, footprint=footprint, mode=mode, cval=cval,
                          origin=list(origin))
    return out[tile.interior()]


def extremum_passes(block, passes: list, minimum: bool, mode, cval: float):
    """Separable minimum/maximum: ``passes`` = [(axis, size, origin), ...] in order; ``mode``:
    one, or one per axis."""
    tile = Tile.of(block)
    ext = tile.assemble()
    f = ndi.minimum_filter1d if minimum else ndi.maximum_filter1d
    for axis, size, origin in passes:
        ext = f(ext, size, axis=axis, mode=mode_of(mode, axis), cval=cval, origin=origin)
    out = ext[tile.interior()]
    return out if passes else out.copy()

