"""Launchers for kernels/convolve.cu (cupy blocks): the N-D correlate (register-tiled, sliding
along z, direct), separable passes, and a pair of steps as one kernel where separable.py can
plan it."""

from __future__ import annotations

import numpy as np

from ...core.arrays import into
from ...core.modes import MODES, mode_of
from ...core.stencil import run_pair
from ...core.tile import Tile
from . import GRID_YZ, device_constant, guard_memory, loader, separable, target
from . import histogram as counting
from .masks import capacity as mask_capacity
from .masks import slots_for
from .tile import as_dtype, axis_groups, dc_tile, group_sizes, lead
from .types import ctype, scalar, taps

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
    mask3 = np.asarray(weights, dtype=T).reshape(k3)
    if res.size and not _fold_rows(tile, res, weights, mask3, offs[2], mode, cval, origin):
        src, _keep = dc_tile(tile, gs)
        launch(src, res, group_sizes(res.shape, gs), offs, mask3, MODES[mode], cval)
    return into(out, _to_dtype(res, dtype))


# A long 1-D correlate runs its interior as rows of FOLD_ROW outputs (a multiple of the tiled
# kernel's tile width) when that makes at least FOLD_MIN_TILES row tiles (below that, folding does not pay).
FOLD_ROW = 8192
FOLD_MIN_TILES = 4


def _fold_rows(tile: Tile, res, weights, mask3: np.ndarray, off: int, mode: str, cval: float, origin) -> bool:
    """Write a long 1-D correlate into res with its interior as a 2-D one: R rows of FOLD_ROW
    outputs, row r reading an overlapping window of the signal (a strided view: no copies), so
    the tiled kernel's 2-D tiles (8 outputs a thread, its windows 16-byte aligned) replace its
    one-row tiles (4 outputs a thread, staged 4 bytes at a time where the mask's reach
    misaligns them); the few outputs at each end, where the mode applies, through the one-row
    tiles. False, with nothing written, when the signal is short, the mask is not 1-D, the
    tile's pieces are not one buffer, or it wraps around a global edge."""
    from cupy.lib.stride_tricks import as_strided

    T = res.dtype
    KD, KH, KW = mask3.shape
    whole = tile.whole if tile.whole is not None else tile.centre if tile.halo == ((0, 0),) else None
    if tile.ndim != 1 or KD * KH != 1 or KW > MAX_TILED or whole is None or whole.strides != (T.itemsize,):
        return False
    (lo, hi), n, isz = tile.halo[0], tile.centre.shape[0], T.itemsize
    if mode == "wrap" and not (lo and hi):  # the ends would need the far end of the signal
        return False
    left = lo - off  # reach of the mask before an output
    right = KW - 1 - left  # ... and after it
    BX, BY, PX, PY = tiled_shape(T, 1, KW, 2)
    width = FOLD_ROW - BX * PX + _staged_width(T, KW, BX, PX)  # where the last tile's window ends
    start = max(0, left - lo)
    while (whole.data.ptr + (lo + start - left) * isz) % 16:  # 16-byte copies: windows aligned
        start += 1
    first = lo + start - left  # the first row's first input
    rows = min(n - start, whole.shape[0] - first - width + FOLD_ROW) // FOLD_ROW  # the last window inside
    rows -= rows % (BY * PY)  # whole row tiles: every window inside the view
    if rows < FOLD_MIN_TILES * BY * PY:
        return False
    stop = start + rows * FOLD_ROW
    view = as_strided(whole[first:], (rows, width), (FOLD_ROW * isz, isz))
    src, _keep = dc_tile(Tile.of(view), [[], [0], [1]])
    launch(src, res[start:stop].reshape(rows, FOLD_ROW), (1, rows, FOLD_ROW), (0, 0, 0), mask3, MODES[mode], cval)
    if start:
        _correlate(Tile.extended(whole[: lo + start + right], ((lo, right),)), weights, mode, cval, origin, T,
                   res[:start])
    if stop < n:
        _correlate(Tile.extended(whole[lo + stop - left:], ((left, hi),)), weights, mode, cval, origin, T,
                   res[stop:])
    return True


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
    if cur.ndim == 1:  # a signal's one pass: _correlate, which runs a long one as rows
        (axis, w, origin), = passes
        return _correlate(cur, np.asarray(w), mode_of(mode, axis), cval, (origin,), dtype=dtype, out=out)
    short = separable.short_pair(cur, passes, mode) if dtype == T == np.float32 else None
    if short is not None:
        weights, mode2d, origin = short  # an outer product of passes: zero taps count, as in 1-D
        return _correlate(cur, weights, mode2d, cval, origin, dtype=dtype, out=out)
    fused = separable.separable2d(cur, passes, mode, cval, out) if dtype == T else None
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


@guard_memory
def correlate_pair(block, passes: list, mode, cval: float, weights: np.ndarray, mode2: str, cval2: float,
                   origin2: tuple, dtype=None, bins=None, out=None):
    """``passes`` (as correlate_passes), then ``weights`` (as correlate, with ``mode2``,
    ``cval2``, ``origin2``) over their result, as the two run one after the other; ``bins`` =
    (edges, uniform): that result's counts instead. float32 pairs of long passes and a small
    second mask over the same two axes run as one kernel, bit for bit what the two kernels
    give (and the counts kernel after them); anything else runs the steps."""
    tile = Tile.of(block)
    plan = separable.pair_plan(tile, passes, mode, weights, mode2, origin2, dtype, bins)
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
        separable.launch(tile, pair, cval, res, second + (mode2, cval2), binning)
    return into(out, res) if binning is None else res.view(np.int64)


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
# ... and float32 masks of at most SLIDE_TWO_ROWS_DEEP taps and depth at most SLIDE_TWO_ROWS_DEPTH
# whose two-row build runs at two blocks a SM (KD x 2 sets over DC_SLIDE_SETS): their staging,
# plane loop and taps shared by twice the outputs; deeper ones spill
SLIDE_TWO_ROWS_DEEP = 125
SLIDE_TWO_ROWS_DEPTH = 5


def slides(T, KD: int, KH: int, KW: int) -> bool:
    """Whether distconv_correlate_slide3d runs a KD x KH x KW mask of dtype T."""
    return (2 <= KD <= SLIDE_MAX_DEPTH and max(KH, KW) <= SLIDE_MAX_WIDTH
            and KD * KH * KW * np.dtype(T).itemsize <= loader.define("DC_SLIDE_TAP_BYTES"))


def slide_shape(T, KD: int, KH: int, KW: int) -> tuple:
    """distconv_correlate_slide3d's (BX, BY, PX, PY): 32 x 8 threads of 4 columns by one row, two
    rows for small masks and for float32 masks 4 or 5 deep (staging and taps shared by more
    outputs; other masks' KD sets of accumulators leave no registers for a second row without
    spilling)."""
    taps = KD * KH * KW
    deep = (np.dtype(T) == np.float32 and 2 * KD > loader.define("DC_SLIDE_SETS")
            and KD <= SLIDE_TWO_ROWS_DEPTH and taps <= SLIDE_TWO_ROWS_DEEP)
    return 32, 8, 4, 2 if taps <= SLIDE_TWO_ROWS or deep else 1


def slide_planes(KD: int) -> int:
    """Output planes per block of distconv_correlate_slide3d: it stages KD - 1 planes more than
    it writes, so deeper masks take longer runs (fewer blocks): a 3-deep mask is faster at 32
    planes, deeper ones at 64."""
    return 32 if KD <= 3 else 64


def _staged_width(T, KW: int, BX: int, PX: int, lead: int = 0) -> int:
    """Columns of a tile the tiled and sliding kernels stage (their headers' SWP): the last
    thread's window (from ``lead`` columns early: the sliding kernel's LEAD) rounded up to
    whole 16-byte vectors."""
    vn = 16 // T.itemsize
    return (BX - 1) * PX + -(-(lead + PX + KW - 1) // vn) * vn


def _plane_bytes(T, KH: int, KW: int, BX: int, BY: int, PX: int, PY: int, lead: int = 0) -> int:
    """One staged plane of the tiled and sliding kernels (their headers' SH x SWP)."""
    return (BY * PY + KH - 1) * _staged_width(T, KW, BX, PX, lead) * T.itemsize


def launch(src, out, out3, offs, mask3: np.ndarray, mode: int, cval: float):
    """Run the best correlate kernel for mask3 (KD, KH, KW) writing out (viewed as out3)."""
    T = out.dtype
    KD, KH, KW = mask3.shape
    oD, oH, oW = out3
    sizes = (src, out, *(np.int64(v) for v in out3), *(np.int64(v) for v in offs))
    if slides(T, KD, KH, KW):
        BX, BY, PX, PY = slide_shape(T, KD, KH, KW)
        ahead = lead(src, int(offs[2]), T.itemsize)
        name = loader.template("distconv_correlate_slide3d", ctype(T), KD, KH, KW, BX, BY, PX, PY, ahead)
        smem = 2 * _plane_bytes(T, KH, KW, BX, BY, PX, PY, ahead)
        nz = slide_planes(KD)
        grid = (-(-oW // (BX * PX)), min(-(-oH // (BY * PY)), GRID_YZ), min(-(-oD // nz), GRID_YZ))
        args = sizes + (np.int32(mode), scalar(cval, T), np.int32(nz), taps(T, mask3.ravel()))
        loader.function("convolve", name, smem)(grid, (BX, BY, 1), args, shared_mem=smem)
        return
    mod_args = sizes + (np.int32(KD),)
    tail = (np.int32(mode), scalar(cval, T))
    if KH <= MAX_TILED and KW <= MAX_TILED:
        BX, BY, PX, PY = tiled_shape(T, KH, KW, oH)
        smem = _plane_bytes(T, KH, KW, BX, BY, PX, PY)
        grid = (-(-oW // (BX * PX)), min(-(-oH // (BY * PY)), GRID_YZ), min(oD, GRID_YZ))
        block = (BX, BY, 1)
        cmask = mask3.size <= mask_capacity(T)
        name = loader.template("distconv_correlate_tiled", ctype(T), KH, KW, BX, BY, PX, PY, cmask)
        args_extra = ()
    else:
        cmask = mask3.size <= mask_capacity(T)
        smem = 0
        total = oD * oH * oW
        threads = loader.define("DC_BLOCK")
        grid, block = (min(-(-total // threads), GRID_YZ * 16),), (threads,)
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
    loader.template("distconv_correlate_slide3d", ctype(np.dtype(t)), kd, kh, kw, *slide_shape(t, kd, kh, kw), ahead)
    for t in (np.float32, np.float64)
    for kd, kh, kw in ((3, 3, 3), (5, 5, 5), (2, 4, 3), (3, 1, 16), (6, 6, 6), (4, 2, 15), (5, 1, 16))
    for ahead in range(16 // np.dtype(t).itemsize) if slides(t, kd, kh, kw)
] + [
    loader.template("distconv_correlate_slide3d", "float", 8, 8, 8, *slide_shape(np.float32, 8, 8, 8), 3),
    loader.template("distconv_correlate_direct", "double", False),
]
