"""Per-block functions written once for numpy and cupy blocks alike (array_module picks the
module): what no kernel of ours does yet, run with the array library's own sort and indexing.
Both backends export them (backends/numpy/rank.py and backends/cuda/rank.py)."""

from __future__ import annotations

import numpy as np

from ..core.arrays import array_module
from ..core.stencil import mask_depth
from ..core.tile import Tile


# scipy.ndimage's boundary modes as numpy.pad (and cupy.pad) names them
PAD_MODES = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap",
             "constant": "constant"}
OMIT_SLAB_VALUES = 2**25  # window values sorted at once (memory: 8 bytes each, twice)


def padded(tile: Tile, need: tuple, mode: str, cval: float):
    """The tile's extended array with exactly ``need`` ((lo, hi) per axis) around its centre:
    halo beyond it cut off, the missing part at global edges filled by ``mode`` (numpy.pad or
    cupy.pad; a copy only where something is filled)."""
    xp = array_module(tile.centre)
    ext = tile.assemble()
    cut = tuple(slice(max(0, h - n), ext.shape[a] - max(0, g - m))
                for a, ((n, m), (h, g)) in enumerate(zip(need, tile.halo)))
    pads = [(max(0, n - h), max(0, m - g)) for (n, m), (h, g) in zip(need, tile.halo)]
    if not any(lo or hi for lo, hi in pads):
        return ext[cut]
    extra = {"constant_values": cval} if mode == "constant" else {}
    return xp.pad(ext[cut], pads, mode=PAD_MODES[mode], **extra)


def rank_omit(block, footprint: np.ndarray, pick, mode: str, cval: float, origin: tuple):
    """A rank filter ignoring NaN (nan_policy='omit'): at each output the ``pick.index(m)``-th
    smallest of the m non-NaN values under ``footprint`` (NaN where there is none such), as
    numpy's nan-functions pick. Written once for numpy and cupy blocks (array_module): the
    windows of a slab of rows are sorted (NaN last) and indexed."""
    tile = Tile.of(block)
    xp = array_module(tile.centre)
    ext = padded(tile, mask_depth(footprint.shape, origin), mode, cval)
    windows = xp.lib.stride_tricks.sliding_window_view(ext, footprint.shape)
    taps = xp.asarray(np.flatnonzero(footprint))  # the footprint's places in a flat window
    out = xp.empty(tile.centre.shape, dtype=tile.centre.dtype)
    row = int(np.prod(tile.centre.shape[1:])) * footprint.size
    step = max(1, OMIT_SLAB_VALUES // max(row, 1))
    for r in range(0, out.shape[0], step):
        slab = windows[r:r + step]
        flat = slab.reshape(slab.shape[:tile.ndim] + (footprint.size,))  # a copy: the values
        vals = xp.sort(flat[..., taps], axis=-1)
        m = (~xp.isnan(vals)).sum(axis=-1)
        idx = pick.index(m)
        ok = (idx >= 0) & (idx < m)
        got = xp.take_along_axis(vals, xp.clip(idx, 0, vals.shape[-1] - 1)[..., None], axis=-1)[..., 0]
        out[r:r + step] = xp.where(ok, got, xp.nan)
    return out


def combine_terms(block, terms, cval: float, combine: str, dtype, passes_fn):
    """``combine`` of separable terms = [(passes, mode), ...], each run by ``passes_fn`` (a
    backend's correlate_passes) in ``dtype``: "sum" adds them (scipy's generic_laplace),
    "magnitude" is the square root of the sum of their squares (generic_gradient_magnitude),
    every step in ``dtype`` as scipy's in-place steps (the square root cast back unsafely)."""
    out = None
    for passes, mode in terms:
        t = passes_fn(block, passes, mode, cval, dtype)
        if combine == "magnitude":
            t *= t
        out = t if out is None else out.__iadd__(t)
    if combine == "magnitude":
        out = array_module(out).sqrt(out).astype(out.dtype)
    return out
