"""Sums of separable terms on cupy blocks (gaussian_laplace, gaussian_gradient_magnitude): two
terms of one pass along each of two axes run as one kernel (kernels/convolve.cu,
distconv_terms2d: the input read once, the result written once); anything else runs each
term's passes and combines them (backends/windows.py), as the numpy backend does."""

from __future__ import annotations

import numpy as np

from ...core.modes import MODES
from ...core.tile import Tile
from ..windows import combine_terms
from . import GRID_YZ, guard_memory, loader, target
from .convolve import correlate_passes
from .separable import MAX_SEPARABLE
from .tile import dc_tile, group_sizes, plane_groups
from .types import scalar, taps

COMBINE = {"sum": loader.define("DC_TERMS_SUM"), "magnitude": loader.define("DC_TERMS_MAGNITUDE")}


@guard_memory
def correlate_terms(block, terms: list, cval: float, combine: str, dtype=None):
    """``combine`` ("sum" or "magnitude") of terms = [(passes, mode), ...], each as
    correlate_passes(block, passes, mode, cval, dtype)."""
    tile = Tile.of(block)
    plan = _plan(tile, terms, cval, dtype)
    if plan is None:
        return combine_terms(tile, terms, cval, combine, dtype, correlate_passes)
    out = target(None, tile.centre.shape, tile.centre.dtype)
    if out.size:
        _launch(tile, plan, cval, combine, out)
    return out


def _plan(tile: Tile, terms: list, cval: float, dtype):
    """(axis groups, (a0, a1), (K0, K1), taps a0 a1 b0 b1 in T, mode, SYM) when distconv_terms2d
    runs ``terms``; else None: float32 in and out, two terms of one centred pass along each of
    the same two axes (the innermost axis groups), masks of equal length per axis, one mode
    (constant only with cval 0, where the order of a term's passes does not change its edges)."""
    T = np.dtype(np.float32)
    if tile.centre.dtype != T or np.dtype(dtype or T) != T or len(terms) != 2:
        return None
    (pa, mode), (pb, mode_b) = terms
    if mode != mode_b or not isinstance(mode, str) or (mode == "constant" and cval != 0):
        return None
    pa, pb = sorted(pa, key=lambda p: p[0]), sorted(pb, key=lambda p: p[0])
    if len(pa) != 2 or len(pb) != 2 or [p[0] for p in pa] != [p[0] for p in pb] or pa[0][0] == pa[1][0]:
        return None
    if any(o for _, _, o in pa + pb) or any(len(x[1]) != len(y[1]) for x, y in zip(pa, pb)):
        return None
    (a0, w_a0, _), (a1, w_a1, _) = pa
    (_, w_b0, _), (_, w_b1, _) = pb
    if max(len(w_a0), len(w_a1)) > MAX_SEPARABLE:
        return None
    gs = plane_groups(tile, a0, a1)
    if gs is None:
        return None
    k0, k1 = len(w_a0), len(w_a1)
    taps = np.concatenate([w_a0, w_a1, w_b0, w_b1]).astype(T)
    return gs, (a0, a1), (k0, k1), taps, mode, _mirrored(taps[k0:k0 + k1], taps[-k1:])


def _mirrored(*masks) -> bool:
    """Whether the kernel's x pass may add mirrored pairs first (SYM): odd masks that read the
    same backwards, in the kernel's type (the Laplacian's Gaussian and its second derivative)."""
    return all(len(m) % 2 == 1 and np.array_equal(m, m[::-1]) for m in masks)


def _smem(T, k0: int, k1: int) -> int:
    """distconv_terms2d's shared memory (the kernel header's formula)."""
    th, tw, px = loader.define("DC_SEP_TH"), loader.define("DC_SEP_TW"), loader.define("DC_SEP_PX")
    vn = 16 // T.itemsize
    swp = tw - px + -(-(px + k1 - 1) // vn) * vn
    return ((th + k0 - 1) * swp + 2 * (th + k0 - 1) * tw) * T.itemsize


def _launch(tile: Tile, plan, cval: float, combine: str, out):
    gs, (a0, a1), (k0, k1), weights, mode, sym = plan
    T = tile.centre.dtype
    oD, oH, oW = group_sizes(tile.centre.shape, gs)
    smem = _smem(T, k0, k1)
    fn = loader.function("convolve", loader.template("distconv_terms2d", "float", k0, k1, COMBINE[combine], sym), smem)
    src, _keep = dc_tile(tile, gs)
    th, tw = loader.define("DC_SEP_TH"), loader.define("DC_SEP_TW")
    grid = (-(-oW // tw), min(-(-oH // th), GRID_YZ), min(oD, GRID_YZ))
    offH, offW = tile.halo[a0][0] - k0 // 2, tile.halo[a1][0] - k1 // 2
    args = (src, out, np.int64(oD), np.int64(oH), np.int64(oW), np.int64(offH), np.int64(offW),
            np.int32(MODES[mode]), scalar(cval, T), taps(T, weights.astype(T)))
    fn(grid, (loader.define("DC_SEP_BX"), loader.define("DC_SEP_BY")), args, shared_mem=smem)


INSTANTIATIONS = [loader.template("distconv_terms2d", "float", k, k, c, sym)
                  for k in (9, 17, 33) for c in (0, 1) for sym in (False, True)]
