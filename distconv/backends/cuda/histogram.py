"""Launchers for kernels/histogram.cu."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import device_attribute, device_constant, device_constant_of, guard_memory, loader, resident_blocks
from .types import ctype

SMEM_BUDGET = 96 * 1024   # privatized copies live here; above it the global-atomic path runs
MAX_COPIES = 8
PER_BLOCK = 2**30          # values per block at most, so uint32 shared counters cannot wrap

BLOCK = loader.define("DC_BLOCK")  # threads per block, from kernels/common.cuh
PACKED_BLOCK = loader.define("DC_HIST_PACKED_BLOCK")  # of distconv_histogram_packed


def _grid(n: int, fn, shared_bytes: int = 0, block: int = BLOCK) -> int:
    """One wave of resident blocks (grid-stride), fewer for small inputs, more only where a
    block would count over PER_BLOCK values."""
    return int(max(min(-(-n // (8 * block)), resident_blocks(fn, block, shared_bytes)), -(-n // PER_BLOCK), 1))


def _weights(weights, n):
    import cupy

    if weights is None:
        return None, "float"
    w = cupy.ascontiguousarray(cupy.asarray(weights)).ravel()
    if w.dtype not in (np.float32, np.float64):
        w = w.astype(np.float64)
    return w, ctype(w.dtype)


@functools.lru_cache(maxsize=64)
def _grid_of(edges: bytes, E: str) -> tuple:
    """(lo, scale, slack) of uniform edges for the kernels' (v - lo) * scale, computed in E.
    slack: how far, in bins, that may sit from where the edges really cut: the edges' distance
    from the ideal grid (in extended precision: a float64 "ideal" rounds as the edges do and
    would hide it), plus the arithmetic's error: v - lo and the product each round by at most
    eps / 2 of a result under nbins + 1 bins, and scale is off by its own relative error; plus
    eps for the comparison with 1 - slack. The kernel trusts the formula only further than this
    from a bin's ends (kernels/binning.cuh dc_bin_clear)."""
    e = np.frombuffer(edges, dtype=E)
    nbins = len(e) - 1
    lo = float(e[0])
    scale = nbins / (float(e[-1]) - lo)
    ld = np.longdouble
    el = e.astype(ld)  # (cached: 2-4 ms for 65536 bins)
    exact_scale = ld(nbins) / (el[-1] - el[0])
    off_grid = float(np.max(np.abs((el - el[0]) * exact_scale - np.arange(nbins + 1, dtype=ld))))
    scale_error = float(abs(ld(np.dtype(E).type(scale)) - exact_scale) / exact_scale)
    eps = float(np.finfo(E).eps)
    arithmetic = (eps + scale_error) * (nbins + 1) + eps
    return lo, scale, min(0.5, (off_grid + arithmetic) * (1 + 2.0**-20))


def _launch(x, edges_dev, E, nbins, binning, lo, scale, slack, weights):
    import cupy

    n = x.size
    w, wtype = _weights(weights, n)
    weighted = w is not None
    counts = cupy.zeros(nbins, dtype=np.uint64)
    sums = cupy.zeros(nbins, dtype=np.float64) if weighted else counts
    edge_bytes = 0 if binning == loader.define("DC_BIN_INTEGER") else -(-(nbins + 1) * E.itemsize // 8) * 8
    per_copy = (nbins + 1) * (8 if weighted else 4)  # the bins and a spare (kernels/histogram.cu)
    copies = int(max(1, min(MAX_COPIES, (SMEM_BUDGET - edge_bytes) // per_copy))) if per_copy else 1
    smem_ok = edge_bytes + per_copy <= SMEM_BUDGET
    smem = edge_bytes + copies * per_copy if smem_ok else 0
    if not weighted and not smem_ok and _packed_bytes(nbins) <= device_attribute("MaxSharedMemoryPerBlockOptin"):
        return _launch_packed(x, edges_dev, E, nbins, binning, lo, scale, slack)
    name = loader.template("distconv_histogram", ctype(x.dtype), ctype(E), binning, weighted, wtype, smem_ok)
    fn = loader.function("histogram", name, smem)
    if n:
        fn((_grid(n, fn, smem),), (BLOCK,), (x, np.int64(n), edges_dev, np.int32(nbins), E.type(lo), E.type(scale),
                                 E.type(slack), w if weighted else np.uint64(0), counts, sums, np.int32(copies)),
           shared_mem=smem)
    return sums if weighted else counts.view(np.int64)


def _packed_bytes(nbins: int) -> int:
    """Shared memory of distconv_histogram_packed: two 16-bit counters per word, bins and spare."""
    return (nbins + 2) // 2 * 4


def _launch_packed(x, edges_dev, E, nbins, binning, lo, scale, slack):
    """Unweighted counts of more bins than 32-bit shared counters hold (kernels/histogram.cu,
    distconv_histogram_packed): one block per SM; counts has a slot for each word's two halves.
    (Writing each block's words out for a second kernel to add, instead of its atomics, is no
    faster.)"""
    import cupy

    n = x.size
    smem = _packed_bytes(nbins)
    counts = cupy.zeros(2 * (smem // 4), dtype=np.uint64)
    if n:
        name = loader.template("distconv_histogram_packed", ctype(x.dtype), ctype(E), binning)
        fn = loader.function("histogram", name, smem)
        fn((_grid(n, fn, smem, PACKED_BLOCK),), (PACKED_BLOCK,),
           (x, np.int64(n), edges_dev, np.int32(nbins), E.type(lo), E.type(scale), E.type(slack), counts),
           shared_mem=smem)
    return counts[:nbins].view(np.int64)


RECENT_MAX = 64  # Binning.of's entries
_RECENT: dict = {}


def _device() -> int:
    import cupy

    return cupy.cuda.runtime.getDevice()


@dataclass(frozen=True)
class Binning:
    """How a kernel bins values into ``edges`` (dc_bin's arguments, kernels/binning.cuh)."""

    E: np.dtype          # the edges' type, which values are compared in
    edges: object        # on the device
    nbins: int
    kind: int            # DC_BIN_UNIFORM or DC_BIN_EDGES
    lo: float
    scale: float
    slack: float

    @classmethod
    def of(cls, edges: np.ndarray, uniform: bool) -> "Binning":
        """Cached per device and content: hashing 65537 edges' bytes costs more than the rest
        of a call's host work, so a cheap fingerprint (length and both ends) finds the entry and
        a comparison of the bytes confirms it."""
        E = np.dtype(np.float32) if edges.dtype == np.float32 else np.dtype(np.float64)
        host = np.ascontiguousarray(edges, dtype=E)
        data = host.tobytes()
        key = (_device(), E.str, uniform, len(data), data[:64], data[-64:])
        hit = _RECENT.get(key)
        if hit is not None and hit[0] == data:
            return hit[1]
        nbins = len(host) - 1
        if uniform:
            lo, scale, slack = _grid_of(data, E.str)
        else:
            lo = float(host[0])
            scale, slack = nbins / (float(host[-1]) - lo), 0.0
        b = cls(E, device_constant_of(data, E.str, host.shape), nbins,
                loader.define("DC_BIN_UNIFORM" if uniform else "DC_BIN_EDGES"), lo, scale, slack)
        if len(_RECENT) >= RECENT_MAX:
            _RECENT.clear()
        _RECENT[key] = (data, b)
        return b

    def args(self) -> tuple:
        """(edges, nbins, lo, scale, slack) as the kernels take them."""
        E = self.E.type
        return self.edges, np.int32(self.nbins), E(self.lo), E(self.scale), E(self.slack)


@guard_memory
def counts(block, edges: np.ndarray, uniform: bool, weights=None, rows=None):
    """Counts of the block (``rows``: of each of its equal rows alone, shaped (rows, bins): one
    launch per row)."""
    import cupy

    x = cupy.ascontiguousarray(block).ravel()
    b = Binning.of(edges, uniform)
    if rows is None:
        return _launch(x, b.edges, b.E, b.nbins, b.kind, b.lo, b.scale, b.slack, weights)
    x = x.reshape(rows, x.size // rows if rows else 0)
    w = None if weights is None else cupy.ascontiguousarray(cupy.asarray(weights)).reshape(x.shape)
    out = cupy.zeros((rows, b.nbins), np.float64 if w is not None else np.int64)
    for k in range(rows):
        out[k] = _launch(x[k], b.edges, b.E, b.nbins, b.kind, b.lo, b.scale, b.slack, None if w is None else w[k])
    return out


@guard_memory
def bincount(block, nbins: int, weights=None):
    import cupy

    x = cupy.ascontiguousarray(block).ravel()
    E = np.dtype(np.float64)
    return _launch(x, device_constant(np.zeros(1, dtype=E)), E, nbins, loader.define("DC_BIN_INTEGER"),
                   0.0, 0.0, 0.0, weights)


@guard_memory
def counts2d(x, y, xedges, yedges, weights=None):
    import cupy

    E = np.dtype(np.float64)
    xs, ys = cupy.ascontiguousarray(x).ravel(), cupy.ascontiguousarray(y).ravel()
    nx, ny = len(xedges) - 1, len(yedges) - 1
    w, wtype = _weights(weights, xs.size)
    weighted = w is not None
    counts = cupy.zeros(nx * ny, dtype=np.uint64)
    sums = cupy.zeros(nx * ny, dtype=np.float64) if weighted else counts
    name = loader.template("distconv_histogram2d", ctype(xs.dtype), ctype(ys.dtype), "double", weighted, wtype)
    if xs.size:
        fn = loader.function("histogram", name)
        fn((_grid(xs.size, fn),), (BLOCK,), (xs, ys, np.int64(xs.size), device_constant(np.asarray(xedges, dtype=E)), np.int32(nx),
                                        device_constant(np.asarray(yedges, dtype=E)), np.int32(ny),
                                        w if weighted else np.uint64(0), counts, sums))
    out = sums if weighted else counts.view(np.int64)
    return out.reshape(nx, ny)


INSTANTIATIONS = [
    loader.template("distconv_histogram", t, e, b, wt, "float" if not wt else "double", sm)
    for t, e in (("float", "float"), ("double", "double"), ("unsigned char", "double"), ("int", "double"))
    for b in (0, 1) for wt in (False, True) for sm in (True, False)
] + [
    loader.template("distconv_histogram", t, "double", 2, wt, "float", sm)
    for t in ("long long", "int", "unsigned char") for wt in (False, True) for sm in (True, False)
] + [
    loader.template("distconv_histogram_packed", t, e, b)
    for t, e, b in (("float", "float", 0), ("float", "float", 1), ("double", "double", 0), ("double", "double", 1),
                    ("unsigned char", "double", 0), ("int", "double", 0), ("long long", "double", 2),
                    ("int", "double", 2), ("unsigned char", "double", 2))
] + [
    loader.template("distconv_histogram2d", "float", "float", "double", wt, "double") for wt in (False, True)
]
