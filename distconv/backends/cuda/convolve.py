"""Launchers for kernels/convolve.cu (cupy blocks)."""

from __future__ import annotations

import numpy as np

from ...core.arrays import into
from ...core.modes import MODES, mode_of
from ...core.stencil import reach, run_pair
from ...core.tile import Tile
from . import device_constant, guard_memory, loader, target
from . import histogram as counting
from .masks import capacity as mask_capacity
from .masks import slots_for
from .tile import as_dtype, axis_groups, dc_tile, group_sizes, plane_groups
from .types import ctype, scalar

MAX_TILED = loader.define("DC_TILED_MAX")  # the register-tiled kernel unrolls mask rows/columns up to this


def compute_dtype(dtype, out=None) -> np.dtype:
    """float32 (in and out) stays float32; everything else is computed in float64 (as scipy
    does)."""
    both = {np.dtype(dtype), np.dtype(dtype if out is None else out)}
    return np.dtype(np.float32) if both == {np.dtype(np.float32)} else np.dtype(np.float64)


@guard_memory
def correlate(block, weights: np.ndarray, mode: str, cval: float, origin: tuple, dtype=None, out=None):
    """scipy.ndimage.correlate of the centre of ``block`` (a cupy array or a Tile of them);
    ``dtype``: of the result (default the block's); ``out``: an array to fill and return.
    scipy's N-D correlate skips zero taps, so a NaN or inf under one changes nothing; the
    kernels multiply every tap, so where a mask has zero taps and the tile holds non-finite
    values, cupyx's correlate (which skips them too) runs instead."""
    tile = Tile.of(block)
    if not np.all(weights) and not finite(tile):
        return _correlate_skipping_zeros(tile, weights, mode, cval, origin, dtype, out)
    return _correlate(tile, weights, mode, cval, origin, dtype, out)


def finite(tile: Tile) -> bool:
    """Are all values of the tile (centre and halo pieces) finite? Integers always are."""
    import cupy

    if tile.centre.dtype.kind not in "fc":
        return True
    parts = [tile.whole] if tile.whole is not None else [tile.piece(d) for d in tile.directions()]
    return all(bool(cupy.isfinite(p).all()) for p in parts)


def _correlate_skipping_zeros(tile: Tile, weights, mode, cval, origin, dtype, out):
    import cupyx.scipy.ndimage as cndi

    dtype = np.dtype(tile.centre.dtype if dtype is None else dtype)
    T = compute_dtype(tile.centre.dtype, dtype)
    ext = tile.assemble().astype(T, copy=False)
    import cupy

    w = cupy.asarray(np.asarray(weights, dtype=T))
    res = cndi.correlate(ext, w, mode=mode, cval=cval, origin=list(origin))
    return into(out, _to_dtype(res[tile.interior()], dtype))


def _correlate(tile: Tile, weights: np.ndarray, mode: str, cval: float, origin: tuple, dtype=None, out=None):
    """The kernels' correlate (every tap multiplied: the separable passes' NaN rule)."""
    dtype = np.dtype(tile.centre.dtype if dtype is None else dtype)
    T = compute_dtype(tile.centre.dtype, dtype)
    tile = as_dtype(tile, T)
    mask_axes = {a for a in range(tile.ndim) if weights.shape[a] > 1}
    gs = axis_groups(tile, mask_axes)
    k3 = tuple(weights.shape[g[0]] if len(g) == 1 else 1 for g in gs)
    offs = tuple(_offset(tile, g, weights.shape, origin) for g in gs)
    res = target(out, tile.centre.shape, T)
    if res.size:
        src, _keep = dc_tile(tile, gs)
        launch(src, res, group_sizes(res.shape, gs), offs, np.asarray(weights, dtype=T).reshape(k3),
               MODES[mode], cval)
    return into(out, _to_dtype(res, dtype))


def _to_dtype(out, dtype):
    """Cast the float result as scipy.ndimage's C code does: truncate, then wrap into the
    integer type (a GPU float->uint8 conversion would saturate instead)."""
    if out.dtype == dtype:
        return out
    if np.dtype(dtype).kind in "iu":
        return out.astype(np.int64).astype(dtype)
    return out.astype(dtype)


@guard_memory
def correlate_passes(block, passes: list, mode, cval: float, dtype=None, out=None):
    """Separable passes over ``block`` (a cupy array or a Tile of them); ``mode``: one, or one
    per axis; ``dtype``: of the result and of every intermediate (default the block's). Each
    pass reads the previous result, still extended along the axes to come, and writes it with
    its own axis trimmed to the centre; the first pass reads the halo tile itself, so nothing
    is ever assembled. ``out``: an array to fill and return."""
    import cupy

    tile = Tile.of(block)
    dtype = np.dtype(tile.centre.dtype if dtype is None else dtype)
    T = compute_dtype(tile.centre.dtype, dtype)
    if not passes:
        return into(out, tile.centre.astype(dtype))
    cur = as_dtype(tile, T)
    short = _short_pair(cur, passes, mode) if dtype == T == np.float32 else None
    if short is not None:
        weights, mode2d, origin = short  # an outer product of passes: zero taps count, as in 1-D
        return _correlate(cur, weights, mode2d, cval, origin, dtype=dtype, out=out)
    fused = _separable2d(cur, passes, mode, cval, out) if dtype == T else None
    if fused is not None:
        return into(out, fused)
    lo_ext = [lo for lo, _ in tile.halo]  # extension still carried at the low end of each axis
    for i, (axis, w, origin) in enumerate(passes):
        shape = list(cur.extended_shape)
        shape[axis] = tile.centre.shape[axis]
        gs = axis_groups(cur, {axis})
        k3 = tuple(len(w) if g == [axis] else 1 for g in gs)
        offs = tuple(lo_ext[axis] - (len(w) // 2 + origin) if g == [axis] else 0 for g in gs)
        last = i == len(passes) - 1  # only the last pass may write into out (its shape is the centre's)
        res = target(out, shape, T) if last else cupy.empty(tuple(shape), dtype=T)
        if res.size:
            src, _keep = dc_tile(cur, gs)
            launch(src, res, group_sizes(res.shape, gs), offs, np.asarray(w, dtype=T).reshape(k3),
                   MODES[mode_of(mode, axis)], cval)
        if T != dtype and not last:  # scipy keeps intermediates in the input dtype
            res = _to_dtype(res, dtype).astype(T)
        lo_ext[axis] = 0
        cur = Tile.of(res)
    return into(out, _to_dtype(cur.centre, dtype))


MAX_SEPARABLE = loader.define("DC_SEP_MAX_TAPS")
# Two float32 passes of at most this many taps run as one 2-D correlate of their outer product
# (register-tiled kernel: 3x3 68 %, 5x5 58 % of copy on H200) instead of the fused separable
# pass (52 % and 49 % there: NOTES.md, "Round 2 of the kernels"): few taps, so the 2-D window
# costs fewer reads of shared memory than the two passes' extra intermediate tile.
SHORT_PAIR = 5


def _short_pair(tile: Tile, passes: list, mode):
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


def _separable_pair(tile: Tile, passes: list, mode):
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


def _separable2d(tile: Tile, passes: list, mode: str, cval: float, out=None):
    """Two 1-D passes over the two innermost axis groups as one fused pass (into ``out``
    where it fits), or None."""
    pair = _separable_pair(tile, passes, mode)
    if pair is None:
        return None
    out = target(out, tile.centre.shape, tile.centre.dtype)
    if out.size:
        _launch_separable(tile, pair, cval, out)
    return out


# A second step fused after the separable pair (distconv_separable2d): masks up to this many
# taps per axis (a Laplacian, a small derivative or smoothing); bigger ones run as their own pass.
PAIR_SECOND = 5
# ... after passes of at most this many taps (gaussian sigma <= 2 at scipy's truncate): longer
# passes with a second step spill registers on sm_80/sm_90 (sweep of the instantiations)
PAIR_PASS = 17
PAIR_COUNT_SMEM = 32 * 1024  # shared memory for its counters at most (else the steps run)
# privatized copies of the counters per block (fewer when the bins need the room): 4 keep four
# blocks per SM as the written pair has; 8 cost one (2.27 vs 1.80 ms per GiB on H200, NOTES.md)
PAIR_COPIES = 4


@guard_memory
def correlate_pair(block, passes: list, mode, cval: float, weights: np.ndarray, mode2: str, cval2: float,
                   origin2: tuple, dtype=None, bins=None, out=None):
    """``passes`` (as correlate_passes), then ``weights`` (as correlate, with ``mode2``,
    ``cval2``, ``origin2``) over their result, as the two run one after the other; ``bins`` =
    (edges, uniform): that result's counts instead. float32 pairs of long passes and a small
    second mask over the same two axes run as one kernel, bit for bit what the two kernels
    give (and the counts kernel after them); anything else runs the steps."""
    tile = Tile.of(block)
    plan = _pair_plan(tile, passes, mode, weights, mode2, origin2, dtype, bins)
    if plan is not None and not np.all(weights) and not finite(tile):
        plan = None  # the fused kernel multiplies the second mask's zero taps (see correlate)
    if plan is None:
        return run_pair(tile, (correlate_passes, correlate, counting.counts), passes, mode, cval, weights, mode2,
                        cval2, origin2, dtype, bins, out)
    import cupy

    pair, second, binning = plan
    if binning is None:
        res = target(out, tile.centre.shape, tile.centre.dtype)
    else:
        res = cupy.zeros(binning.nbins, dtype=np.uint64)
    if tile.centre.size:
        _launch_separable(tile, pair, cval, res, second + (mode2, cval2), binning)
    return into(out, res) if binning is None else res.view(np.int64)


def _pair_plan(tile: Tile, passes, mode, weights, mode2, origin2, dtype, bins):
    """(pair, (mask, jH, jW, off2H, off2W), Binning or None) when distconv_separable2d can run
    passes + weights (+ counting) as one kernel; else None."""
    T = np.dtype(np.float32)
    if tile.centre.dtype != T or np.dtype(dtype or T) != T:
        return None
    if all(len(w) <= SHORT_PAIR for _, w, _ in passes):
        return None  # (short pairs run as one 2-D correlate, with other roundings)
    pair = _separable_pair(tile, passes, mode)
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


def _launch_separable(tile: Tile, pair, cval: float, out, second=None, binning=None):
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
    grid = (-(-oW // tw), min(-(-oH // th), 65535), min(oD, 65535))
    taps = _taps(T, np.concatenate([w0, w1, mask2.ravel() if second else []]))
    args = (src, out if binning is None else np.uint64(0), np.int64(oD), np.int64(oH), np.int64(oW),
            np.int64(offH), np.int64(offW), np.int32(MODES[mode]), scalar(cval, T), taps)
    tail = (np.int64(jH), np.int64(jW), np.int64(off2H), np.int64(off2W), np.int32(MODES[mode2]),
            scalar(cval2, T)) + bargs + (counts_dev, np.int32(copies))
    fn(grid, (loader.define("DC_SEP_BX"), loader.define("DC_SEP_BY")), args + tail, shared_mem=smem)


def _offset(tile: Tile, group: list, kshape, origin) -> int:
    if len(group) != 1:
        return 0
    a = group[0]
    return tile.halo[a][0] - (kshape[a] // 2 + origin[a])


def tiled_shape(T, KH: int, KW: int, oH: int) -> tuple:
    """distconv_correlate_tiled's (BX, BY, PX, PY) for a KH x KW mask: one row of 256 threads
    for single-row outputs, else 32 x 8 threads of 4 columns by 4 rows (2 rows for double or
    windows over 16 wide: fewer accumulators keep the registers unspilled)."""
    if oH == 1:
        return 256, 1, 4, 1
    return 32, 8, 4, 4 if np.dtype(T) == np.float32 and max(KH, KW) <= 16 else 2


# A 3-D mask slides along z (distconv_correlate_slide3d: each input plane staged once, KD sets
# of accumulators per thread) when its depth, width and taps fit the registers and parameters:
SLIDE_MAX_DEPTH = loader.define("DC_SLIDE_MAX_DEPTH")
SLIDE_MAX_WIDTH = loader.define("DC_SLIDE_MAX_WIDTH")
SLIDE_TWO_ROWS = 27  # masks of at most this many taps: two output rows per thread


def slides(T, KD: int, KH: int, KW: int) -> bool:
    """Whether distconv_correlate_slide3d runs a KD x KH x KW mask of dtype T."""
    return (2 <= KD <= SLIDE_MAX_DEPTH and max(KH, KW) <= SLIDE_MAX_WIDTH
            and KD * KH * KW * np.dtype(T).itemsize <= loader.define("DC_SLIDE_TAP_BYTES"))


def slide_shape(T, KD: int, KH: int, KW: int) -> tuple:
    """distconv_correlate_slide3d's (BX, BY, PX, PY): 32 x 8 threads of 4 columns by one row, two
    rows for small masks (staging and taps shared by more outputs; bigger masks' KD sets of
    accumulators leave no registers for a second row: ptxas sweep, NOTES.md)."""
    return 32, 8, 4, 2 if KD * KH * KW <= SLIDE_TWO_ROWS else 1


def slide_planes(KD: int) -> int:
    """Output planes per block of distconv_correlate_slide3d: it stages KD - 1 planes more than
    it writes, so deeper masks take longer runs (fewer blocks); 3x3x3: 1.26 ms per GiB at 32,
    1.46 at 64; 5x5x5: 3.12 and 3.02 ms (H200, NOTES.md)."""
    return 32 if KD <= 3 else 64


def _plane_bytes(T, KH: int, KW: int, BX: int, BY: int, PX: int, PY: int) -> int:
    """One staged plane of the tiled and sliding kernels (their headers' SH x SWP)."""
    vn = 16 // T.itemsize
    wn = -(-(PX + KW - 1) // vn) * vn
    return (BY * PY + KH - 1) * ((BX - 1) * PX + wn) * T.itemsize


def _taps(T, taps) -> np.void:
    """A DcTaps<T, len(taps)> kernel argument (passed by value)."""
    struct = np.zeros((), np.dtype([("w", T, (len(taps),))], align=True))
    struct["w"] = taps
    return struct[()]


def launch(src, out, out3, offs, mask3: np.ndarray, mode: int, cval: float):
    """Run the best correlate kernel for mask3 (KD, KH, KW) writing out (viewed as out3)."""
    T = out.dtype
    KD, KH, KW = mask3.shape
    oD, oH, oW = out3
    sizes = (src, out, *(np.int64(v) for v in out3), *(np.int64(v) for v in offs))
    if slides(T, KD, KH, KW):
        BX, BY, PX, PY = slide_shape(T, KD, KH, KW)
        name = loader.template("distconv_correlate_slide3d", ctype(T), KD, KH, KW, BX, BY, PX, PY)
        smem = 2 * _plane_bytes(T, KH, KW, BX, BY, PX, PY)
        nz = slide_planes(KD)
        grid = (-(-oW // (BX * PX)), min(-(-oH // (BY * PY)), 65535), min(-(-oD // nz), 65535))
        args = sizes + (np.int32(mode), scalar(cval, T), np.int32(nz), _taps(T, mask3.ravel()))
        loader.function("convolve", name, smem)(grid, (BX, BY, 1), args, shared_mem=smem)
        return
    mod_args = sizes + (np.int32(KD),)
    tail = (np.int32(mode), scalar(cval, T))
    if KH <= MAX_TILED and KW <= MAX_TILED:
        BX, BY, PX, PY = tiled_shape(T, KH, KW, oH)
        smem = _plane_bytes(T, KH, KW, BX, BY, PX, PY)
        grid = (-(-oW // (BX * PX)), min(-(-oH // (BY * PY)), 65535), min(oD, 65535))
        block = (BX, BY, 1)
        cmask = mask3.size <= mask_capacity(T)
        name = loader.template("distconv_correlate_tiled", ctype(T), KH, KW, BX, BY, PX, PY, cmask)
        args_extra = ()
    else:
        cmask = mask3.size <= mask_capacity(T)
        smem = 0
        total = oD * oH * oW
        grid, block = (min(-(-total // 256), 65535 * 16),), (256,)
        name = loader.template("distconv_correlate_direct", ctype(T), cmask)
        args_extra = (np.int32(KH), np.int32(KW))
    fn = loader.function("convolve", name, smem)
    wdev = device_constant(mask3)
    if cmask:
        with slots_for(loader.module("convolve", name), T).use(mask3) as slot:
            fn(grid, block, mod_args + args_extra + tail + (np.int32(slot), wdev), shared_mem=smem)
    else:
        fn(grid, block, mod_args + args_extra + tail + (np.int32(-1), wdev), shared_mem=smem)


# Representative instantiations, compiled ahead by the nvcc test (tests/test_kernels_build.py)
INSTANTIATIONS = [
    loader.template("distconv_correlate_tiled", ctype(np.dtype(t)), kh, kw, *tiled_shape(t, kh, kw, oh), cm)
    for t in (np.float32, np.float64)
    for kh, kw, oh in ((3, 3, 9), (5, 5, 9), (9, 9, 9), (1, 31, 9), (9, 1, 9), (3, 4, 9), (1, 31, 1))
    for cm in (True, False)
] + [
    loader.template("distconv_correlate_tiled", "float", 32, 32, *tiled_shape(np.float32, 32, 32, 9), True),
    loader.template("distconv_correlate_direct", "float", True),
] + [
    loader.template("distconv_correlate_slide3d", ctype(np.dtype(t)), kd, kh, kw, *slide_shape(t, kd, kh, kw))
    for t in (np.float32, np.float64) for kd, kh, kw in ((3, 3, 3), (5, 5, 5), (2, 4, 3), (3, 1, 16), (6, 6, 6))
    if slides(t, kd, kh, kw)
] + [
    loader.template("distconv_correlate_slide3d", "float", 8, 8, 8, *slide_shape(np.float32, 8, 8, 8)),
    loader.template("distconv_correlate_direct", "double", False),
] + [
    loader.template("distconv_separable2d", t, k0, k1, 1, 1, loader.define("DC_BIN_NONE"), t)
    for t in ("float", "double") for k0, k1 in ((17, 17), (9, 9), (3, 5), (33, 33))
] + [
    loader.template("distconv_separable2d", "float", k0, k1, k2h, k2w, loader.define(b), "float")
    for k0, k1 in ((17, 17), (13, 9)) for k2h, k2w in ((3, 3), (5, 5), (1, 3))
    for b in ("DC_BIN_NONE", "DC_BIN_UNIFORM", "DC_BIN_EDGES")
]
