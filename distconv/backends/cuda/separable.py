"""Launchers of distconv_separable2d (kernels/convolve.cu): two 1-D passes over the two innermost
axis groups as one kernel, optionally followed by a small correlate over their result and a
histogram of that (a fused chain, convolve.correlate_pair), and the plans that decide when it
(or, for short passes, one 2-D correlate) runs."""

from __future__ import annotations

import numpy as np

from ...core.modes import MODES, mode_of
from ...core.stencil import reach
from ...core.tile import Tile
from . import GRID_YZ, loader, target
from . import histogram as counting
from .tile import dc_tile, group_sizes, plane_groups
from .types import ctype, scalar, taps

MAX_SEPARABLE = loader.define("DC_SEP_MAX_TAPS")
# Two float32 passes of at most this many taps run as one 2-D correlate of their outer product
# (the register-tiled kernel) instead of the fused separable pass, which it outruns: few taps,
# so the 2-D window costs fewer reads of shared memory than the two passes' extra intermediate tile.
SHORT_PAIR = 5


def short_pair(tile: Tile, passes: list, mode):
    """(N-D weights, mode, origin) of two short passes over the two innermost axis groups, as
    one correlate; None when they are not such a pair. Not for mode constant: there the
    passes see cval around their own intermediate, which a 2-D window does not."""
    if len(passes) != 2:
        return None
    (a0, w0, o0), (a1, w1, o1) = sorted(passes, key=lambda p: p[0])
    if a0 == a1 or mode_of(mode, a0) != mode_of(mode, a1) or mode_of(mode, a0) == "constant":
        return None
    if max(len(w0), len(w1)) > SHORT_PAIR:
        return None
    if plane_groups(tile, a0, a1) is None:
        return None
    shape, origin = [1] * tile.ndim, [0] * tile.ndim
    shape[a0], shape[a1], origin[a0], origin[a1] = len(w0), len(w1), o0, o1
    weights = np.multiply.outer(np.asarray(w0, np.float64), np.asarray(w1, np.float64)).reshape(shape)
    return weights, mode_of(mode, a0), tuple(origin)


def separable_pair(tile: Tile, passes: list, mode):
    """(axis groups, (a0, w0, o0), (a1, w1, o1), mode) of two 1-D passes over the two innermost
    axis groups that distconv_separable2d runs as one, or None."""
    if len(passes) != 2:
        return None
    (a0, w0, o0), (a1, w1, o1) = sorted(passes, key=lambda p: p[0])
    if a0 == a1 or mode_of(mode, a0) != mode_of(mode, a1):
        return None
    mode = mode_of(mode, a0)
    gs = plane_groups(tile, a0, a1)
    if gs is None or max(len(w0), len(w1)) > MAX_SEPARABLE:
        return None
    if mode == "constant" and not (np.isclose(np.sum(w0), 1, atol=1e-12) and np.isclose(np.sum(w1), 1, atol=1e-12)):
        return None  # with cval the edges depend on the order of the passes
    return gs, (a0, w0, o0), (a1, w1, o1), mode


def separable2d(tile: Tile, passes: list, mode: str, cval: float, out=None):
    """Two 1-D passes over the two innermost axis groups as one fused pass (into ``out``
    where it fits), or None."""
    pair = separable_pair(tile, passes, mode)
    if pair is None:
        return None
    out = target(out, tile.centre.shape, tile.centre.dtype)
    if out.size:
        launch(tile, pair, cval, out)
    return out


# A second step fused after the separable pair (distconv_separable2d): masks up to this many
# taps per axis (a Laplacian, a small derivative or smoothing); bigger ones run as their own pass.
PAIR_SECOND = 5
# ... after passes of at most this many taps (gaussian sigma <= 2 at scipy's truncate): longer
# passes with a second step spill registers on sm_80/sm_90 (sweep of the instantiations)
PAIR_PASS = 17
PAIR_COUNT_SMEM = 32 * 1024  # shared memory for its counters at most (else the steps run)
# privatized copies of the counters per block (fewer when the bins need the room): 4 keep four
# blocks per SM as the written pair has; 8 cost one, which runs slower
PAIR_COPIES = 4


def pair_plan(tile: Tile, passes, mode, weights, mode2, origin2, dtype, bins):
    """(pair, (mask, jH, jW, off2H, off2W), Binning or None) when distconv_separable2d can run
    passes + weights (+ counting) as one kernel; else None."""
    T = np.dtype(np.float32)
    if tile.centre.dtype != T or np.dtype(dtype or T) != T:
        return None
    if all(len(w) <= SHORT_PAIR for _, w, _ in passes):
        return None  # (short pairs run as one 2-D correlate, with other roundings)
    pair = separable_pair(tile, passes, mode)
    if pair is None or "wrap" in (pair[3], mode2) or any(origin2):
        return None
    gs, (a0, w0, o0), (a1, w1, o1), _ = pair
    if max(len(w0), len(w1)) > PAIR_PASS:
        return None
    k2 = (weights.shape[a0], weights.shape[a1])
    if any(k > 1 for a, k in enumerate(weights.shape) if a not in (a0, a1)) or max(k2) > PAIR_SECOND:
        return None
    # the first result as the unfused chain holds it: the centre plus the halo left after the
    # passes took theirs (none at a global edge); J's extent, and where the output reads it
    ext, off = [], []
    for a, (w, o), k in ((a0, (w0, o0), k2[0]), (a1, (w1, o1), k2[1])):
        (lo, hi), (d_lo, d_hi) = tile.halo[a], reach(len(w), o)
        rest_lo, rest_hi = lo - min(lo, d_lo), hi - min(hi, d_hi)
        ext.append(rest_lo + tile.centre.shape[a] + rest_hi)
        off.append(rest_lo - k // 2)
    if min(ext[0] - k2[0], ext[1] - k2[1]) < 0:
        return None  # the kernel's boundary copies need J at least one mask wide
    binning = None
    if bins is not None:
        binning = counting.Binning.of(*bins)
        if binning.E != T or _count_bytes(binning)[0] > PAIR_COUNT_SMEM:
            return None  # (float64 edges: the steps, then the histogram kernel)
    mask = np.asarray(weights, dtype=T).reshape(k2)
    return pair, (mask, ext[0], ext[1], off[0], off[1]), binning


def _count_bytes(binning) -> tuple:
    """(bytes, copies): the edges and privatized counters distconv_separable2d keeps in shared
    memory (kernel header: edges rounded up to 8 bytes, then copies x (nbins + 1) uint32)."""
    edges = -(-(binning.nbins + 1) * binning.E.itemsize // 8) * 8
    per_copy = 4 * (binning.nbins + 1)
    copies = max(1, min(PAIR_COPIES, (PAIR_COUNT_SMEM - edges) // per_copy))
    return edges + copies * per_copy, copies


def _separable_smem(T, k0: int, k1: int, k2h: int, k2w: int) -> int:
    """distconv_separable2d's shared memory before its counters (the kernel header's formula)."""
    th, tw = loader.define("DC_SEP_TH"), loader.define("DC_SEP_TW")
    px, py = loader.define("DC_SEP_PX"), loader.define("DC_SEP_PY")
    vn = 16 // T.itemsize
    jh, jw = th + k2h - 1, tw + k2w - 1
    jwp = -(-jw // px) * px
    swp = jwp - px + -(-(px + k1 - 1) // vn) * vn
    hh = -(-jh // py) * py + k0 - 1
    return ((jh + k0 - 1) * swp + hh * jwp) * T.itemsize


def launch(tile: Tile, pair, cval: float, out, second=None, binning=None):
    """distconv_separable2d over ``tile`` into ``out`` (counts: a uint64 array of nbins):
    the pair alone, or with ``second`` = (mask, jH, jW, off2H, off2W, mode2, cval2)."""
    gs, (a0, w0, o0), (a1, w1, o1), mode = pair
    T = tile.centre.dtype
    oD, oH, oW = group_sizes(tile.centre.shape, gs)
    k0, k1 = len(w0), len(w1)
    mask2, jH, jW, off2H, off2W, mode2, cval2 = second or (np.ones((1, 1)), 0, 0, 0, 0, "constant", 0.0)
    k2h, k2w = mask2.shape
    # J's element j is the tile's extended element j + (halo - J's halo): J's halo is
    # off2 + k2 // 2 (none without a second step: J is the output)
    offH = tile.halo[a0][0] - (k0 // 2 + o0) - (off2H + k2h // 2 if second else 0)
    offW = tile.halo[a1][0] - (k1 // 2 + o1) - (off2W + k2w // 2 if second else 0)
    smem = _separable_smem(T, k0, k1, k2h, k2w)
    if binning is None:
        E, bargs, kind, copies = T, (np.uint64(0), np.int32(0), T.type(0), T.type(0), T.type(0)), loader.define("DC_BIN_NONE"), 1
        counts_dev = np.uint64(0)
    else:
        nbytes, copies = _count_bytes(binning)
        smem = -(-smem // 16) * 16 + nbytes
        E, bargs, kind = binning.E, binning.args(), binning.kind
        counts_dev = out
    name = loader.template("distconv_separable2d", ctype(T), k0, k1, k2h, k2w, kind, ctype(E))
    fn = loader.function("convolve", name, smem)
    src, _keep = dc_tile(tile, gs)
    th, tw = loader.define("DC_SEP_TH"), loader.define("DC_SEP_TW")
    grid = (-(-oW // tw), min(-(-oH // th), GRID_YZ), min(oD, GRID_YZ))
    all_taps = taps(T, np.concatenate([w0, w1, mask2.ravel() if second else []]))
    args = (src, out if binning is None else np.uint64(0), np.int64(oD), np.int64(oH), np.int64(oW),
            np.int64(offH), np.int64(offW), np.int32(MODES[mode]), scalar(cval, T), all_taps)
    tail = (np.int64(jH), np.int64(jW), np.int64(off2H), np.int64(off2W), np.int32(MODES[mode2]),
            scalar(cval2, T)) + bargs + (counts_dev, np.int32(copies))
    fn(grid, (loader.define("DC_SEP_BX"), loader.define("DC_SEP_BY")), args + tail, shared_mem=smem)


# Representative instantiations, compiled ahead by the nvcc test (tests/test_kernels_build.py)
INSTANTIATIONS = [
    loader.template("distconv_separable2d", t, k0, k1, 1, 1, loader.define("DC_BIN_NONE"), t)
    for t in ("float", "double") for k0, k1 in ((17, 17), (9, 9), (3, 5), (33, 33))
] + [
    loader.template("distconv_separable2d", "float", k0, k1, k2h, k2w, loader.define(b), "float")
    for k0, k1 in ((17, 17), (13, 9)) for k2h, k2w in ((3, 3), (5, 5), (1, 3))
    for b in ("DC_BIN_NONE", "DC_BIN_UNIFORM", "DC_BIN_EDGES")
]
