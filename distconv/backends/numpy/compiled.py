"""The compiled CPU path of the numpy backend: scipy.ndimage's numbers for the linear filters
(N-D correlate, the separable 1-D passes) and the picking filters (min/max passes, rank
filters over a footprint) from numba kernels (_kernels.py), one GIL release per band of a block
(the N-D kernels split a big block over the process's threads: _banded) and SIMD over the
contiguous last axis. convolve.py and rank.py call here where ``reason()`` allows.

Why: scipy's filters run one scalar loop per output element, and numpy ufuncs over shifted
slices take the GIL ~50 times a band, so they lose under many threads. benchmarks/cpu_kernels.py
measures both.

What scipy computes, and so what the kernels compute (scipy/ndimage/src/ni_filters.c):

- N-D correlate: ``tmp = 0.0; tmp += w[t] * (double)x`` over the taps with |w| > DBL_EPSILON in
  the mask's C order (a constant edge adds ``w[t] * cval``), then cast to the output's dtype.
- 1-D correlate (each separable pass): the line in doubles; an odd mask symmetric
  (antisymmetric) to DBL_EPSILON sums ``x[0] * w[c]``, then ``(x[-m] +- x[m]) * w[c - m]`` from
  the outermost pair in; other masks ``x[last] * w[last]``, then the rest in order. Each pass
  is cast to the result's dtype (scipy's chained 1-D filters).
- Casts to integers: C's ``(type)double`` as scipy's x86-64 wheels run it (truncation, the
  value wrapped into the type; out-of-range doubles as cvttsd2si converts them).
- Min/max passes and rank filters pick a value of the window, in the input's type; a constant
  edge reads cval as a value of that type (only where it is one exactly: ``reason()``).
- Boundary modes at the edges of the array handed in (the tile's extended array, as scipy
  sees it): reflect ``dcba|abcd|dcba``, mirror ``dcb|abcd|cba``, nearest, wrap, constant.

One difference, by choice: a 1-D rank filter follows scipy's N-D rule (rank.py's scipy
fallback too). scipy's own 1-D fast path (_rank_filter_1d) ignores a footprint's holes and
differs at some origins on lines shorter than the window, and it is taken or not by the
array's length, so its numbers would depend on the chunking; its N-D code does not.

Kernels read 3-D C-contiguous arrays (1-D and 2-D blocks get leading axes of 1) in a few
dtypes (NATIVE_*): others are converted to float64 (exact: every value of an integer type up to
32 bits is a double; the linear filters convert 64-bit ones as scipy does), integer results
come back as int64 bits and are narrowed by numpy (wrapping, as C's cast does). Each dtype
combination compiles once per machine (cache on disk), ~1-2 s of CPU each.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import threading
from functools import lru_cache

import numpy as np

from ...core.modes import MODES
from . import kernel_cache

EPS = float(np.finfo(np.float64).eps)
# Below this many elements a block runs scipy: its time there is under ~1 ms, and the first
# use of a kernel on a machine compiles for ~1-2 s (small tests and small arrays never do).
MIN_SIZE = 1 << 15
# the largest windows where the kernels still beat scipy on one core: a rank filter up to
# 15 x 15 (the network grows ~n log^2 n, scipy's select ~n); a min/max pass up to 127 along
# the last axis (it costs the size per element, scipy's ~2)
MAX_RANK_TAPS = 225
MAX_EXTREMUM_SIZE = 127
STRIP_BYTES = 24 << 10    # rank filters: n window rows of a strip of columns stay in L1

_T = np.dtype
# dtypes a call may bring, and those the kernels read as they are (others convert to float64:
# each dtype a kernel reads or writes is one more compile)
LINEAR_DTYPES = frozenset(map(_T, ("f4", "f8", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8")))
PICK_DTYPES = frozenset(map(_T, ("f4", "f8", "i1", "u1", "i2", "u2", "i4", "u4")))
NATIVE_LINEAR = frozenset(map(_T, ("f4", "f8")))  # sums are in doubles anyway
NATIVE_PICK = frozenset(map(_T, ("f4", "f8", "u1", "u2", "i2")))
_HAVE_NUMBA = importlib.util.find_spec("numba") is not None


def reason(kind: str, dtype, out_dtype=None, ndim: int = 2, modes=(), cval: float = 0.0,
           taps: int = 1, passes: bool = False, size: int = MIN_SIZE) -> str | None:
    """None where the compiled ``kind`` ("linear": correlate and its 1-D passes; "pick":
    min/max passes (``passes``) and rank filters over a footprint) gives scipy's numbers for a
    block of ``ndim`` axes and ``size`` elements in ``dtype`` (the result in ``out_dtype``,
    default the same), the ``modes`` it uses, ``cval``, windows of ``taps`` values; else why
    scipy runs instead. The one place that decides it."""
    if not _HAVE_NUMBA:
        return "numba is not installed"
    if kernel_cache.compiling():
        return "the CPU kernels are compiling beside this run (a first run on this machine)"
    dt, odt = np.dtype(dtype), np.dtype(out_dtype if out_dtype is not None else dtype)
    allowed = LINEAR_DTYPES if kind == "linear" else PICK_DTYPES
    if dt not in allowed or odt not in allowed:
        return f"dtype {dt} -> {odt} is not compiled for {kind} filters"
    if not 1 <= ndim <= 3:
        return f"{ndim}-D blocks are not compiled (1-D to 3-D are)"
    if size < MIN_SIZE:
        return f"a block of {size} elements (under {MIN_SIZE}: scipy is as quick, without a compile)"
    if any(m not in MODES for m in modes):
        return f"mode {modes!r} is not compiled"
    if kind == "pick":
        limit = MAX_EXTREMUM_SIZE if passes else MAX_RANK_TAPS
        if taps > limit:
            return f"a window of {taps} values is past the compiled {kind} filters' {limit}"
        if "constant" in modes and not _fits(cval, dt):
            return f"cval {cval!r} is not a value of {dt} (scipy casts it its own way)"
    return None


def _fits(cval: float, dt: np.dtype) -> bool:
    """Is ``cval`` exactly a value of ``dt`` (NaN excepted)?"""
    cval = float(cval)
    if np.isnan(cval):
        return False
    if dt.kind != "f":
        info = np.iinfo(dt)
        return cval.is_integer() and info.min <= cval <= info.max
    return float(dt.type(cval)) == cval


def _kernels():
    from . import _kernels  # numba, imported on first use

    return _kernels


def warm() -> bool:
    """Import numba and the kernels' module (a slow import) without compiling or loading
    any kernel: a process that does this before it forks its workers (session.forkserver's
    server for CPU clusters) spares each of them the import at its first block. Calls are left
    to the blocks: a call compiles every type it is not cached for, and compiling the common
    ones here would hold the cluster's start. False without numba."""
    if not _HAVE_NUMBA:
        return False
    _kernels()
    return True


# ---- one block over the process's threads -------------------------------------------------------
# A block's output splits into bands of rows (planes for 3-D blocks), each a kernel call of its
# own on a thread of the process's pool (the kernels release the GIL): a worker running fewer
# blocks than it has threads (a zarr input of a few big chunk rows) still uses them all; a
# band's outputs are the same numbers, computed the same way. Bands of at least this many outputs:
BAND_MIN_OUTPUTS = 1 << 20


_pool_lock = threading.Lock()


@lru_cache(maxsize=1)
def _threads() -> int:
    """Band threads of this process: a dask worker's own thread count (its blocks share them, so
    the cores it was given are not oversubscribed; in-process workers share one process's
    count, the first to ask's), else the process's cores."""
    try:
        from distributed import get_worker

        return max(1, get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@lru_cache(maxsize=1)
def _pool():
    """The process's band threads (made on first use, under a lock)."""
    import concurrent.futures

    return concurrent.futures.ThreadPoolExecutor(_threads(), thread_name_prefix="distconv-band")


def _forget_pool():
    """In a forked child (a CPU worker forked from the server that ran warm()): its own count
    and pool, not the server's."""
    _threads.cache_clear()
    _pool.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _banded(call, out3: np.ndarray):
    """``call(out_band, axis, start)`` over bands of the 3-D C-contiguous ``out3`` along its
    first axis longer than one (planes, rows, or a 1-D block's values): each band a
    C-contiguous view, ``start`` its first index along ``axis`` (the caller shifts its halo
    offset by it)."""
    axis = next((a for a in range(3) if out3.shape[a] > 1), 2)
    n = out3.shape[axis]
    bands = min(n, out3.size // BAND_MIN_OUTPUTS)
    if bands > 1:
        bands = min(bands, _threads())
    if bands <= 1:
        call(out3, axis, 0)
        return
    with _pool_lock:
        pool = _pool()
    edges = [n * i // bands for i in range(bands + 1)]
    index = [slice(None)] * axis
    views = [out3[(*index, slice(a, b))] for a, b in itertools.pairwise(edges)]
    for f in [pool.submit(call, v, axis, a) for v, a in zip(views, edges[:-1])]:
        f.result()


def _shifted(lo: list, axis: int, start: int) -> list:
    """The halo offsets ``lo`` of a band that starts ``start`` outputs along ``axis``."""
    return [v + start if a == axis else v for a, v in enumerate(lo)]


# ---- arguments in the kernels' terms ---------------------------------------------------------

def _as3(a: np.ndarray) -> np.ndarray:
    """``a`` (1-D..3-D) as a C-contiguous 3-D array (leading axes of 1)."""
    a = np.ascontiguousarray(a)
    return a.reshape((1,) * (3 - a.ndim) + a.shape)


def _pad3(v) -> list:
    """Per-axis numbers for the 3-D view, as Python ints (a numpy int32 would compile the
    kernel again for its type)."""
    v = [int(x) for x in v]
    return [0] * (3 - len(v)) + v


def _taps(idx: tuple, ndim: int) -> list:
    """The coordinates of the taps ``idx`` (np.nonzero of a mask) along each axis of the 3-D
    view: int64, 0 on the added leading axes."""
    zero = np.zeros(len(idx[0]), np.int64)
    return [idx[a - (3 - ndim)].astype(np.int64) if a >= 3 - ndim else zero for a in range(3)]


def _native(a: np.ndarray, native) -> np.ndarray:
    return a if a.dtype in native else a.astype(np.float64)


def _out_code(dt: np.dtype) -> int:
    """How a double becomes ``dt`` (_kernels._c_int): 0 a float; 1 an integer under 32 bits or
    int32 (cvttsd2si on 32 bits); 2 uint32 or int64 (on 64 bits); 3 uint64."""
    if dt.kind == "f":
        return 0
    if dt.itemsize < 4 or dt == np.int32:
        return 1
    return 3 if dt == np.uint64 else 2


def _result(shape, dt: np.dtype) -> np.ndarray:
    """Where a linear kernel writes a result of ``dt``: ``dt`` itself for floats, int64 bits
    for integers (narrowed by _narrow)."""
    return np.empty(tuple(shape), dt if dt.kind == "f" else np.int64)


def _narrow(res: np.ndarray, dt: np.dtype) -> np.ndarray:
    return res if res.dtype == dt else res.astype(dt)


def correlate(ext: np.ndarray, weights: np.ndarray, mode: str, cval: float, origin, halo, shape,
              dtype) -> np.ndarray:
    """scipy.ndimage.correlate(ext, weights, mode, cval, origin)'s centre (it starts at
    ``halo[a][0]`` along axis a and has ``shape``) in ``dtype``."""
    dt = np.dtype(dtype)
    w = np.asarray(weights, dtype=np.float64)
    keep = np.abs(w) > EPS  # scipy's taps (a NaN tap drops out)
    out = _result(shape, dt)
    e3, taps, tw = _as3(_native(ext, NATIVE_LINEAR)), _taps(np.nonzero(keep), w.ndim), np.ascontiguousarray(w[keep])
    lo, c = _pad3(h[0] for h in halo), _pad3(k // 2 + o for k, o in zip(w.shape, origin))
    k = _kernels()
    _banded(lambda o, axis, start: k.correlate_nd(e3, *taps, tw, *_shifted(lo, axis, start), *c, MODES[mode],
                                                  float(cval), o, _out_code(dt)), _as3(out))
    return _narrow(out, dt)


def symmetry(w: np.ndarray) -> int:
    """scipy's test of a 1-D mask: 1 symmetric, -1 antisymmetric (odd sizes, to DBL_EPSILON;
    a NaN difference passes, as ``fabs(d) > eps`` lets it in C), 0 neither."""
    k = len(w)
    if not k & 1:
        return 0
    c = k // 2
    if not any(abs(w[c + i] - w[c - i]) > EPS for i in range(1, c + 1)):
        return 1
    if not any(abs(w[c + i] + w[c - i]) > EPS for i in range(1, c + 1)):
        return -1
    return 0


def _along(cur: np.ndarray, a: int, n: int):
    """(src, dst) views of ``cur`` and a new array with ``n`` along axis ``a``: (lines, L) when
    ``a`` is the last axis, else (slabs, L, cols)."""
    pre, cols = int(np.prod(cur.shape[:a])), int(np.prod(cur.shape[a + 1:]))
    shape = cur.shape[:a] + (n,) + cur.shape[a + 1:]
    return (pre, cur.shape[a]) + ((cols,) if cols > 1 else ()), (pre, n) + ((cols,) if cols > 1 else ()), shape


def _passes(ext: np.ndarray, passes: list, modes, halo, shape, one):
    """Chain ``one(src, dst, k_or_weights, c, lo, mode, last)`` over ``passes`` [(axis, w,
    origin)]: a pass computes only the centre along its axis when no later pass reads that
    axis (else all of it); the result is the centre."""
    cur = ext
    start = [h[0] for h in halo]  # where the centre starts in ``cur`` along each axis
    nd = cur.ndim
    for i, (axis, w, origin) in enumerate(passes):
        a = axis % nd
        later = {ax % nd for ax, _, _ in passes[i + 1:]}
        lo, n = (start[a], shape[a]) if a not in later else (0, cur.shape[a])
        k = int(w) if np.ndim(w) == 0 else len(w)
        src_shape, dst_shape, new_shape = _along(cur, a, n)
        cur = one(np.ascontiguousarray(cur).reshape(src_shape), dst_shape, w, int(k // 2 + origin), int(lo),
                  MODES[modes if isinstance(modes, str) else modes[a]], len(dst_shape) == 2).reshape(new_shape)
        if a not in later:
            start[a] = 0
    return cur[tuple(slice(s, s + n) for s, n in zip(start, shape))]


def correlate_passes(ext: np.ndarray, passes: list, modes, cval: float, halo, shape, dtype) -> np.ndarray:
    """scipy.ndimage.correlate1d chained over ``passes`` [(axis, weights, origin), ...] (each
    into ``dtype``, as scipy chains its 1-D filters) of ``ext``'s centre (``halo``, ``shape``)."""
    dt = np.dtype(dtype)
    k = _kernels()

    def one(src, dst_shape, w, c, lo, mode, last):
        w = np.ascontiguousarray(w, dtype=np.float64)
        dst = _result(dst_shape, dt)
        (k.pass_last if last else k.pass_mid)(_native(src, NATIVE_LINEAR), w, c, lo, mode, float(cval),
                                               symmetry(w), dst, _out_code(dt))
        return _narrow(dst, dt)

    return _passes(ext, passes, modes, halo, shape, one)


def _value(cval: float, dt: np.dtype, kernel_dt: np.dtype):
    """``cval`` as the kernel reads it: a value of ``dt`` (exact where a constant edge reads it:
    reason()), in the kernel's dtype."""
    v = dt.type(cval) if _fits(cval, dt) else dt.type(0)
    return kernel_dt.type(v)


def extremum_passes(ext: np.ndarray, passes: list, minimum: bool, modes, cval: float, halo, shape):
    """scipy's minimum/maximum_filter1d chained over ``passes`` [(axis, size, origin), ...] of
    ``ext``'s centre (``halo``, ``shape``), in ``ext``'s dtype."""
    k = _kernels()
    dt = ext.dtype

    def one(src, dst_shape, size, c, lo, mode, last):
        src = _native(src, NATIVE_PICK)
        dst = np.empty(dst_shape, src.dtype)
        (k.extremum_last if last else k.extremum_mid)(src, int(size), c, lo, mode, _value(cval, dt, src.dtype),
                                                       bool(minimum), dst)
        return _narrow(dst, dt)

    return _passes(ext, passes, modes, halo, shape, one)


def rank(ext: np.ndarray, footprint: np.ndarray, rank: int, mode: str, cval: float, origin, halo,
         shape) -> np.ndarray:
    """scipy.ndimage.rank_filter(ext, rank, footprint, ...)'s centre (``halo``, ``shape``), in
    ``ext``'s dtype (``rank`` in 0..n-1 for n taps)."""
    fp = np.asarray(footprint, dtype=bool)
    idx = np.nonzero(fp)
    n = len(idx[0])
    e3 = _as3(_native(ext, NATIVE_PICK))
    out = np.empty(tuple(shape), e3.dtype)
    strip = max(16, min(1024, STRIP_BYTES // (n * e3.itemsize)) // 16 * 16)
    taps, lo, c = _taps(idx, fp.ndim), _pad3(h[0] for h in halo), _pad3(k // 2 + o for k, o in zip(fp.shape, origin))
    value, net, kern = _value(cval, ext.dtype, e3.dtype), network(n, int(rank)), _kernels()
    _banded(lambda o, axis, start: kern.rank_nd(e3, *taps, *_shifted(lo, axis, start), *c, MODES[mode], value, net,
                                                int(rank), strip, o), _as3(out))
    return _narrow(out, ext.dtype)


def rank_omit(ext: np.ndarray, footprint: np.ndarray, kind: str, value: float, mode: str, cval: float, origin,
              halo, shape) -> np.ndarray:
    """nan_policy='omit' of a rank filter (windows.rank_omit's numbers: numpy's nan-functions
    of each window, ``kind`` and ``value`` as windows.nan_positions takes them) of float
    ``ext``'s centre (``halo``, ``shape``): the kernel sorts each window with NaN last and picks
    the two ranks its count of non-NaN values names; windows.nan_picked blends them."""
    from ..windows import nan_picked, nan_positions

    fp = np.asarray(footprint, dtype=bool)
    idx = np.nonzero(fp)
    n = len(idx[0])
    e3 = _as3(ext)
    a, b, m = np.empty(tuple(shape), e3.dtype), np.empty(tuple(shape), e3.dtype), np.empty(tuple(shape), np.int64)
    a3, b3, m3 = _as3(a), _as3(b), _as3(m)
    lo_of, hi_of, _ = nan_positions(np.arange(n + 1), kind, value)  # by count: the ranks to pick
    lo_of, hi_of = (np.ascontiguousarray(np.clip(r, 0, n - 1), dtype=np.int64) for r in (lo_of, hi_of))
    strip = max(16, min(1024, STRIP_BYTES // (n * e3.itemsize)) // 16 * 16)
    taps, lo, c = _taps(idx, fp.ndim), _pad3(h[0] for h in halo), _pad3(k // 2 + o for k, o in zip(fp.shape, origin))
    value3, net, kern = _value(cval, ext.dtype, e3.dtype), sort_network(n), _kernels()

    def band(o, axis, start):
        at = (slice(None),) * axis + (slice(start, start + o.shape[axis]),)
        kern.rank_omit_nd(e3, *taps, *_shifted(lo, axis, start), *c, MODES[mode], value3, net, lo_of, hi_of, strip,
                          o, b3[at], m3[at])

    _banded(band, a3)
    return nan_picked(a, b, m, kind, value)


def _pairs(n: int) -> list:
    """The compare-exchanges of Batcher's odd-even merge sort for the next power of two, cut
    to n values (the others would be +inf, which no comparator moves)."""
    size = 1
    while size < n:
        size *= 2
    pairs = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < n:
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


@lru_cache(maxsize=64)
def sort_network(n: int) -> np.ndarray:
    """_pairs(n) as exchanges of both results (op 0): n values sorted whole. (m, 3) int64,
    read-only (cached)."""
    net = np.array([(a, b, 0) for a, b in _pairs(n)], dtype=np.int64).reshape(-1, 3)
    net.setflags(write=False)
    return net


@lru_cache(maxsize=64)
def network(n: int, rank: int) -> np.ndarray:
    """The compare-exchanges that leave the ``rank``-th smallest of n values in row ``rank``:
    Batcher's odd-even merge sort for the next power of two, cut to n values (the others would
    be +inf, which no comparator moves), then pruned backwards to those ``rank`` depends on,
    each marked 0 (both results used), 1 (only the min, into the first row) or 2 (only the
    max, into the second). (m, 3) int64, read-only (cached)."""
    need, ops = {rank}, []
    for a, b in reversed(_pairs(n)):
        if a in need or b in need:
            ops.append((a, b, 0 if (a in need and b in need) else 1 if a in need else 2))
            need |= {a, b}
    net = np.array(ops[::-1], dtype=np.int64).reshape(-1, 3)
    net.setflags(write=False)
    return net
