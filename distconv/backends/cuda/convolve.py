"""Launchers for kernels/convolve.cu (cupy blocks)."""

from __future__ import annotations

import numpy as np

from ...core.arrays import into
from ...core.modes import MODES, mode_of
from ...core.tile import Tile
from . import device_constant, guard_memory, loader, target
from .masks import slots_for
from .tile import as_dtype, axis_groups, dc_tile, group_sizes
from .types import ctype, scalar

MAX_TILED = 32  # the register-tiled kernel unrolls mask rows/columns up to this size


def compute_dtype(dtype, out=None) -> np.dtype:
    """float32 (in and out) stays float32; everything else is computed in float64 (as scipy
    does)."""
    both = {np.dtype(dtype), np.dtype(dtype if out is None else out)}
    return np.dtype(np.float32) if both == {np.dtype(np.float32)} else np.dtype(np.float64)


@guard_memory
def correlate(block, weights: np.ndarray, mode: str, cval: float, origin: tuple, dtype=None, out=None):
    """scipy.ndimage.correlate of the centre of ``block`` (a cupy array or a Tile of them);
    ``dtype``: of the result (default the block's); ``out``: an array to fill and return."""

    tile = Tile.of(block)
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
        weights, mode2d, origin = short
        return correlate(cur, weights, mode2d, cval, origin, dtype=dtype, out=out)
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


MAX_SEPARABLE = 33
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
    try:
        if axis_groups(tile, {a0, a1})[1:] != [[a0], [a1]]:
            return None
    except ValueError:  # more than three axis groups: the passes handle it
        return None
    shape, origin = [1] * tile.ndim, [0] * tile.ndim
    shape[a0], shape[a1], origin[a0], origin[a1] = len(w0), len(w1), o0, o1
    weights = np.multiply.outer(np.asarray(w0, np.float64), np.asarray(w1, np.float64)).reshape(shape)
    return weights, mode_of(mode, a0), tuple(origin)


def _separable2d(tile: Tile, passes: list, mode: str, cval: float, out=None):
    """Two 1-D passes over the two innermost axis groups as one fused pass (into ``out``
    where it fits), or None."""

    if len(passes) != 2:
        return None
    (a0, w0, o0), (a1, w1, o1) = sorted(passes, key=lambda p: p[0])
    if mode_of(mode, a0) != mode_of(mode, a1):
        return None
    mode = mode_of(mode, a0)
    gs = axis_groups(tile, {a0, a1})
    if gs[1] != [a0] or gs[2] != [a1] or max(len(w0), len(w1)) > MAX_SEPARABLE:
        return None
    if mode == "constant" and not (np.isclose(np.sum(w0), 1, atol=1e-12) and np.isclose(np.sum(w1), 1, atol=1e-12)):
        return None  # with cval the edges depend on the order of the passes
    T = tile.centre.dtype
    out = target(out, tile.centre.shape, T)
    if not out.size:
        return out
    oD, oH, oW = group_sizes(out.shape, gs)
    k0, k1 = len(w0), len(w1)
    offH = tile.halo[a0][0] - (k0 // 2 + o0)
    offW = tile.halo[a1][0] - (k1 // 2 + o1)
    mask = np.concatenate([w0, w1]).astype(T)  # <= 66 values: always a constant-memory slot
    name = loader.template("distconv_separable2d", ctype(T), k0, k1)
    th, tw = loader.define("DC_SEP_TH"), loader.define("DC_SEP_TW")
    px = loader.define("DC_SEP_PX")
    swp = -(-(tw + k1 - 1) // px) * px
    smem = (th + k0 - 1) * (swp + tw) * T.itemsize  # kernel header formula
    fn = loader.function("convolve", name, smem)
    src, _keep = dc_tile(tile, gs)
    grid = (-(-oW // tw), min(-(-oH // th), 65535), min(oD, 65535))
    args = (src, out, np.int64(oD), np.int64(oH), np.int64(oW), np.int64(offH), np.int64(offW),
            np.int32(MODES[mode]), scalar(cval, T))
    with slots_for(loader.module("convolve", name), T).use(mask) as slot:
        fn(grid, (loader.define("DC_SEP_BX"), loader.define("DC_SEP_BY")), args + (np.int32(slot),),
           shared_mem=smem)
    return out


def _offset(tile: Tile, group: list, kshape, origin) -> int:
    if len(group) != 1:
        return 0
    a = group[0]
    return tile.halo[a][0] - (kshape[a] // 2 + origin[a])


def launch(src, out, out3, offs, mask3: np.ndarray, mode: int, cval: float):
    """Run the best correlate kernel for mask3 (KD, KH, KW) writing out (viewed as out3)."""
    T = out.dtype
    KD, KH, KW = mask3.shape
    mod_args = (src, out, *(np.int64(v) for v in out3), *(np.int64(v) for v in offs), np.int32(KD))
    tail = (np.int32(mode), scalar(cval, T))
    oD, oH, oW = out3
    if KH <= MAX_TILED and KW <= MAX_TILED:
        big = max(KH, KW) > 16  # wide windows: fewer rows per thread keeps registers unspilled
        BX, BY, PX, PY = (256, 1, 4, 1) if oH == 1 else (32, 8, 4, 4 if T == np.float32 and not big else 2)
        vn = 16 // T.itemsize
        wn = -(-(PX + KW - 1) // vn) * vn
        smem = (BY * PY + KH - 1) * ((BX - 1) * PX + wn) * T.itemsize
        grid = (-(-oW // (BX * PX)), min(-(-oH // (BY * PY)), 65535), min(oD, 65535))
        block = (BX, BY, 1)
        cmask = mask3.size <= 1024
        name = loader.template("distconv_correlate_tiled", ctype(T), KH, KW, BX, BY, PX, PY, cmask)
        args_extra = ()
    else:
        cmask = mask3.size <= 1024
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
    loader.template("distconv_correlate_tiled", t, kh, kw, bx, by, px, py, cm)
    for t, py in (("float", 4), ("double", 2))
    for kh, kw in ((3, 3), (5, 5), (9, 9), (1, 31), (9, 1), (3, 4))
    for bx, by, px, py in ((32, 8, 4, py),)
    for cm in (True, False)
] + [
    loader.template("distconv_correlate_tiled", "float", 1, 31, 256, 1, 4, 1, True),
    loader.template("distconv_correlate_tiled", "float", 32, 32, 32, 8, 4, 2, True),
    loader.template("distconv_correlate_direct", "float", True),
    loader.template("distconv_correlate_direct", "double", False),
] + [
    loader.template("distconv_separable2d", t, k0, k1)
    for t in ("float", "double") for k0, k1 in ((17, 17), (9, 9), (3, 5), (33, 33))
]
