"""Launchers for kernels/rank.cu (cupy blocks): rank filters over a footprint and separable
minimum/maximum passes. Values are selected in an exact type (small integers widened), so the
result is always one of the inputs or cval."""

from __future__ import annotations

import numpy as np

from ...core.modes import MODES, mode_of
from ...core.tile import Tile
from ..windows import rank_omit  # noqa: F401 - nan_policy='omit' of median/rank/percentile:
#   a sort of each window's values on the device (no kernel of ours yet)
from . import GRID_YZ, guard_memory, loader
from .tile import as_dtype, axis_groups, dc_tile, group_sizes, plane_groups
from .types import ctype, scalar

DC_FOOTPRINT = np.dtype([("bits", "<u8", (loader.define("DC_RANK_WORDS"),))])
# output rows per thread when one value is kept (minimum/maximum passes): each block stages
# 8x more rows than at DC_RANK_PY, so fewer of its staged rows are halo: the passes run
# markedly faster
PASS_ROWS = 32


def _rows(R: int) -> int:
    """Output rows per thread of distconv_rank keeping R values (DC_RANK_PY, or PASS_ROWS)."""
    return PASS_ROWS if R == 1 else loader.define("DC_RANK_PY")


def select_dtype(dtype) -> np.dtype:
    """Floats as they are; integers widened to a type that holds every value and cval."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return dt
    if dt == np.uint64:
        return dt
    return np.dtype(np.int32) if dt.itemsize <= 2 else np.dtype(np.int64)


def _cval(cval: float, T: np.dtype, cast_to=None):
    """cval in the selection type. scipy compares a double cval with the values and casts the
    pick (truncate, wrap); truncating and clipping cval first are monotone, so the pick is the
    same; that is scipy's separable minimum/maximum. ``cast_to``: scipy's rank filters (and its
    minimum/maximum over a footprint) cast cval to the input dtype first (C's truncate-and-wrap)."""
    if T.kind == "f":
        return scalar(cval, T)
    info = np.iinfo(T)
    v = int(np.clip(np.nan_to_num(np.trunc(cval), nan=0.0), -2.0**63, 2.0**63 - 1024))
    if cast_to is not None:
        v = int(np.array(v, dtype=np.int64).astype(cast_to))
    return scalar(min(max(v, info.min), info.max), T)


def _fits(k3, R: int, T) -> bool:
    """Within the kernel's compile-time limits (kernels/rank.cu header)."""
    bx, by, py = loader.define("DC_RANK_BX"), loader.define("DC_RANK_BY"), _rows(R)
    smem = k3[0] * (by * py + k3[1] - 1) * (bx + k3[2] - 1) * T.itemsize
    return (int(np.prod(k3)) <= 64 * loader.define("DC_RANK_WORDS") and R <= loader.define("DC_RANK_KEEP")
            and R * T.itemsize <= loader.define("DC_RANK_KEEP_BYTES") and smem <= loader.define("DC_RANK_SMEM"))


# Medians of full boxes by their own kernels (kernels/rank.cu: networks shared between
# neighbouring outputs): box (KD, KH, KW) -> (kernel, the prefix of its #defines). Other boxes,
# footprints and ranks take distconv_rank.
MEDIAN_KERNELS = {(1, 3, 3): ("distconv_median3x3", "DC_MED3"), (1, 5, 5): ("distconv_median5x5", "DC_MED5"),
                  (3, 3, 3): ("distconv_median3x3x3", "DC_MED27")}
# output planes per block of distconv_median3x3x3, which slides along z and stages two planes
# more than it writes (as distconv_correlate_slide3d's runs: convolve.slide_planes)
MEDIAN_RUN = 32


def _median_kernel(k3, R: int, top: bool, full: bool, oH: int):
    """(kernel, define prefix) of the median kernel that selects R of 2R - 1 from the bottom over
    the full box k3, or None (distconv_rank, which also takes lines: oH == 1)."""
    if full and not top and oH > 1 and 2 * R - 1 == int(np.prod(k3)):
        return MEDIAN_KERNELS.get(tuple(k3))
    return None


def _median_tile(k3, T, prefix: str) -> tuple[int, int, int]:
    """A median kernel's output tile (rows, columns) and shared memory, its header's formula: the
    input tile with the box's halo rows and 8 columns more (from a 16-byte boundary, whole
    vectors), in a ring of DC_..._PLANES staged planes where it slides along z; 2-D kernels give
    8-byte types half the rows."""
    KD, KH, _ = k3
    rows = loader.define(f"{prefix}_PY") // (2 if KD == 1 and T.itemsize > 4 else 1)
    th, tw = loader.define(f"{prefix}_TY") * rows, loader.define(f"{prefix}_TX") * loader.define(f"{prefix}_PX")
    planes = loader.define(f"{prefix}_PLANES") if KD > 1 else 1
    return th, tw, planes * (th + KH - 1) * (tw + 8) * T.itemsize


def _median_nan(T, propagate: bool) -> bool:
    """The median kernels' NANP: exchanges that propagate NaN (a window holding NaN gives NaN).
    Float always (one instruction, as the plain ones, on sm_80 on); double when asked."""
    return T.kind == "f" and (propagate or T == np.float32)


def _median_lead(src, offW: int, T) -> int:
    """The median kernels' LEAD (kernels/rank.cu dc_median_row): the windows' first column past
    a 16-byte boundary of the centre piece's memory, in elements mod 4, so that a block stages
    its tile from that boundary with 16-byte copies (any value gives the same result)."""
    return int(int(src["ptr"][13]) // T.itemsize + offW - int(src["len"][6])) % 4


def _launch_median(kernel: str, prefix: str, src, out, out3, k3, offs, mode: int, cval, nan: bool):
    T = out.dtype
    oD, oH, oW = out3
    th, tw, smem = _median_tile(k3, T, prefix)
    args = (src, out, *(np.int64(v) for v in out3), *(np.int64(v) for v in offs), np.int32(mode), cval)
    planes = oD
    if k3[0] > 1:  # slides along z: blockIdx.z takes runs of MEDIAN_RUN planes
        planes, args = -(-oD // MEDIAN_RUN), args + (np.int32(MEDIAN_RUN),)
    name = loader.template(kernel, ctype(T), nan, _median_lead(src, offs[2], T))
    fn = loader.function("rank", name, smem)
    grid = (-(-oW // tw), min(-(-oH // th), GRID_YZ), min(planes, GRID_YZ))
    threads = loader.define(f"{prefix}_TX") * loader.define(f"{prefix}_TY")
    fn(grid, (threads,), args, shared_mem=smem)


def _launch(src, out, out3, offs, k3, bits, R: int, top: bool, mode: int, cval, full: bool = False,
            propagate: bool = False) -> bool:
    """distconv_rank (or a median kernel: _median_kernel) into ``out``; True when NaN propagated
    (asked by ``propagate``, floats, and a median kernel ran: a window holding NaN gave NaN)."""
    T = out.dtype
    oD, oH, oW = out3
    median = _median_kernel(k3, R, top, full, oH)
    if median is not None:
        nan = _median_nan(T, propagate)
        _launch_median(*median, src, out, out3, k3, offs, mode, cval, nan)
        return propagate and nan
    bx, by, py = loader.define("DC_RANK_BX"), loader.define("DC_RANK_BY"), _rows(R)
    if oH == 1:  # lines: every thread on its own output along x
        bx, by, py = bx * by, 1, 1
    KD, KH, KW = k3
    smem = KD * (by * py + KH - 1) * (bx + KW - 1) * T.itemsize  # kernel header formula
    name = loader.template("distconv_rank", ctype(T), KD, KH, KW, R, top, bx, by, py, full)
    fn = loader.function("rank", name, smem)
    grid = (-(-oW // bx), min(-(-oH // (by * py)), GRID_YZ), min(oD, GRID_YZ))
    fp = np.zeros((), dtype=DC_FOOTPRINT)
    fp["bits"] = bits
    fn(grid, (bx, by, 1), (src, out, *(np.int64(v) for v in out3), *(np.int64(v) for v in offs),
                           np.int32(mode), cval, fp[()]), shared_mem=smem)
    return False


def _bits(mask: np.ndarray) -> np.ndarray:
    bits = np.zeros(loader.define("DC_RANK_WORDS"), dtype=np.uint64)
    for t in np.flatnonzero(mask.ravel()):
        bits[t >> 6] |= np.uint64(1) << np.uint64(t & 63)
    return bits


def _keep(rank: int, n: int) -> tuple[int, bool]:
    """(values a thread keeps, select from the top?): the shorter side of the rank."""
    return (rank + 1, False) if rank <= n - 1 - rank else (n - rank, True)


@guard_memory
def rank(block, footprint: np.ndarray, rank: int, mode: str, cval: float, origin: tuple,
         nan_propagate: bool = False):
    """scipy.ndimage.rank_filter of the centre of ``block`` (a cupy array or a Tile of them).
    ``nan_propagate``: NaN wherever a window holds one (the 3 x 3 median's kernel does it as it
    selects; otherwise the windows' maximum of the NaN indicator marks them)."""
    import cupy

    tile = Tile.of(block)
    dtype = tile.centre.dtype
    T = select_dtype(dtype)
    fp_axes = {a for a in range(tile.ndim) if footprint.shape[a] > 1}
    gs = axis_groups(tile, fp_axes)
    k3 = tuple(footprint.shape[g[0]] if len(g) == 1 else 1 for g in gs)
    R, top = _keep(rank, int(footprint.sum()))
    if not _fits(k3, R, T):
        out = _cupyx_rank(tile, footprint, rank, mode, cval, origin)
        return _propagated(out, tile, footprint, mode, cval, origin) if nan_propagate else out
    src_tile = tile
    tile = as_dtype(tile, T)
    offs = tuple(tile.halo[g[0]][0] - (footprint.shape[g[0]] // 2 + origin[g[0]]) if len(g) == 1 else 0
                 for g in gs)
    out = cupy.empty(tile.centre.shape, dtype=T)
    propagated = True
    if out.size:
        src, _keep_alive = dc_tile(tile, gs)
        propagated = _launch(src, out, group_sizes(out.shape, gs), offs, k3, _bits(footprint.reshape(k3)), R,
                             top, MODES[mode], _cval(cval, T, dtype), full=bool(footprint.all()),
                             propagate=nan_propagate)
    out = out.astype(dtype, copy=False)
    if nan_propagate and not propagated:
        out = _propagated(out, src_tile, footprint, mode, cval, origin)
    return out


def _propagated(out, tile: Tile, footprint, mode, cval, origin):
    """``out`` with NaN wherever a window of ``tile`` holds one (floats)."""
    import cupy

    if tile.centre.dtype.kind != "f":
        return out
    flags = tile.map(lambda a: cupy.isnan(a).astype(cupy.float32))
    held = rank(flags, footprint, int(footprint.sum()) - 1, mode, float(np.isnan(cval)), origin)
    return cupy.where(held > 0, cupy.nan, out).astype(out.dtype, copy=False)


def _cupyx_rank(tile: Tile, footprint, rank: int, mode: str, cval: float, origin: tuple):
    """Footprints beyond the kernel's limits: cupyx's rank filter on the assembled tile."""
    import cupyx.scipy.ndimage as cndi

    out = cndi.rank_filter(tile.assemble(), rank, footprint=footprint, mode=mode, cval=cval,
                           origin=list(origin))
    return out[tile.interior()]


@guard_memory
def extremum_passes(block, passes: list, minimum: bool, mode, cval: float, nan_propagate: bool = False):
    """Separable minimum/maximum over ``block``: two boxes over the two innermost axis groups
    as one kernel, else each pass (axis, size, origin) reads the previous result, still
    extended along the axes to come, and keeps one value per thread. The kernels propagate NaN
    (a window holding one gives NaN); ``nan_propagate``: so does the result where a pass beyond
    their limits took cupyx's filter."""
    import cupy

    tile = Tile.of(block)
    out, propagated = _extremes(tile, passes, minimum, mode, cval)
    if nan_propagate and not propagated and tile.centre.dtype.kind == "f":
        flags = tile.map(lambda a: cupy.isnan(a).astype(cupy.float32))
        held, _ = _extremes(flags, passes, False, mode, float(np.isnan(cval)))
        out = cupy.where(held > 0, cupy.nan, out).astype(out.dtype, copy=False)
    return out


def _extremes(tile: Tile, passes: list, minimum: bool, mode, cval: float):
    """(the separable minimum/maximum of ``tile``, did NaN propagate: only our kernels ran)."""
    import cupy

    dtype = tile.centre.dtype
    if not passes:
        return tile.centre.copy(), True
    T = select_dtype(dtype)
    cur = as_dtype(tile, T)
    fused = _extremum_plan(cur, passes, mode)
    if fused is not None:
        out = cupy.empty(tile.centre.shape, dtype=T)
        if out.size:
            _launch_extremum(cur, fused, not minimum, _cval(cval, T), out)
        return out.astype(dtype, copy=False), True
    lo_ext, propagated = [lo for lo, _ in tile.halo], True
    for axis, size, origin in passes:
        shape = list(cur.extended_shape)
        shape[axis] = tile.centre.shape[axis]
        gs = axis_groups(cur, {axis})
        k3 = tuple(size if g == [axis] else 1 for g in gs)
        offs = tuple(lo_ext[axis] - (size // 2 + origin) if g == [axis] else 0 for g in gs)
        out = cupy.empty(tuple(shape), dtype=T)
        if not out.size:
            pass
        elif _fits(k3, 1, T):
            src, _keep_alive = dc_tile(cur, gs)
            _launch(src, out, group_sizes(out.shape, gs), offs, k3, _bits(np.ones(k3, bool)), 1,
                    not minimum, MODES[mode_of(mode, axis)], _cval(cval, T), full=True)
        else:
            out = _cupyx_pass(cur, axis, size, origin, minimum, mode_of(mode, axis), cval)
            propagated = False
        lo_ext[axis] = 0
        cur = Tile.of(out)
    return cur.centre.astype(dtype, copy=False), propagated


EXT_MAX_TAPS = loader.define("DC_EXT_MAX_TAPS")


def _extremum_plan(tile: Tile, passes: list, mode):
    """(axis groups, (a0, k0, o0), (a1, k1, o1), mode) of two boxes over the two innermost
    axis groups with one mode, which distconv_extremum2d runs as one pass; else None."""
    if len(passes) != 2:
        return None
    (a0, k0, o0), (a1, k1, o1) = sorted(passes, key=lambda p: p[0])
    if a0 == a1 or mode_of(mode, a0) != mode_of(mode, a1) or max(k0, k1) > EXT_MAX_TAPS:
        return None
    gs = plane_groups(tile, a0, a1)
    if gs is None:
        return None
    return gs, (a0, k0, o0), (a1, k1, o1), mode_of(mode, a0)


def _extremum_smem(T, k0: int, k1: int) -> int:
    """distconv_extremum2d's shared memory (the kernel header's formula)."""
    th, tw, px = loader.define("DC_EXT_TH"), loader.define("DC_EXT_TW"), loader.define("DC_EXT_PX")
    vn = 16 // T.itemsize if T.kind == "f" else 1
    sw = tw - px + -(-(px + k1 - 1) // vn) * vn
    return (th + k0 - 1) * (sw + tw) * T.itemsize


def _launch_extremum(tile: Tile, plan, top: bool, cval, out):
    gs, (a0, k0, o0), (a1, k1, o1), mode = plan
    T = out.dtype
    oD, oH, oW = group_sizes(out.shape, gs)
    smem = _extremum_smem(T, k0, k1)
    fn = loader.function("rank", loader.template("distconv_extremum2d", ctype(T), k0, k1, top), smem)
    src, _keep_alive = dc_tile(tile, gs)
    th, tw = loader.define("DC_EXT_TH"), loader.define("DC_EXT_TW")
    grid = (-(-oW // tw), min(-(-oH // th), GRID_YZ), min(oD, GRID_YZ))
    offH, offW = tile.halo[a0][0] - (k0 // 2 + o0), tile.halo[a1][0] - (k1 // 2 + o1)
    fn(grid, (loader.define("DC_EXT_THREADS"),), (src, out, np.int64(oD), np.int64(oH), np.int64(oW), np.int64(offH),
                                                  np.int64(offW), np.int32(MODES[mode]), cval), shared_mem=smem)


def _cupyx_pass(cur: Tile, axis, size, origin, minimum, mode, cval):
    """A 1-D window beyond the kernel's limits: cupyx's filter on the assembled tile."""
    import cupyx.scipy.ndimage as cndi

    f = cndi.minimum_filter1d if minimum else cndi.maximum_filter1d
    ext = f(cur.assemble(), size, axis=axis, mode=mode, cval=cval, origin=origin)
    sl = [slice(None)] * ext.ndim
    lo, hi = cur.halo[axis]
    sl[axis] = slice(lo, ext.shape[axis] - hi)
    return ext[tuple(sl)]


# Representative instantiations, compiled ahead by the nvcc test (tests/test_kernels_build.py),
# with the launcher's block shapes (lines: _launch's bx * by threads along x)
_BX, _BY, _PY = (loader.define(f"DC_RANK_{n}") for n in ("BX", "BY", "PY"))
INSTANTIATIONS = [
    loader.template("distconv_rank", t, kd, kh, kw, r, top, _BX, _BY, _rows(r), full)
    for t in ("float", "double", "int", "long long")
    for kd, kh, kw, r, top in ((1, 3, 3, 5, False), (1, 5, 5, 13, False), (1, 1, 9, 1, True),
                               (1, 9, 1, 1, False), (3, 3, 3, 14, True), (1, 9, 9, 41, False),
                               (3, 3, 3, 14, False))
    for full in (False, True)
] + [
    loader.template("distconv_rank", "float", 1, 1, 31, 1, False, _BX * _BY, 1, 1, True),
    loader.template("distconv_rank", "unsigned long long", 1, 3, 3, 5, False, _BX, _BY, _PY, True),
    loader.template("distconv_rank", "double", 1, 9, 11, 48, True, _BX, _BY, _PY, False),
    loader.template("distconv_rank", "float", 1, 11, 11, 61, True, _BX, _BY, _PY, False),
] + [
    # float's exchanges always propagate NaN (_median_nan); LEAD of an aligned array, origin 0
    loader.template(k, t, n, lead)
    for k, lead in (("distconv_median3x3", 3), ("distconv_median5x5", 2), ("distconv_median3x3x3", 3))
    for t, n in (("float", True), ("double", False), ("double", True), ("int", False), ("long long", False),
                 ("unsigned long long", False))
] + [loader.template(k, "float", True, 0) for k in ("distconv_median3x3", "distconv_median5x5", "distconv_median3x3x3")
     ] + [
    loader.template("distconv_extremum2d", t, k0, k1, top)
    for t in ("float", "double", "int", "long long", "unsigned long long")
    for k0, k1 in ((3, 3), (5, 5), (9, 9), (2, 7), (33, 33))
    for top in (False, True)
]
