"""Histogram counts of one block: numpy.histogram / bincount / histogram2d (the oracle
for backends/cuda/histogram.py). Counts come back as int64 (exact), weighted sums as float64.

Unweighted counts of long rows are numpy.histogram's (it sorts, which numpy does with SIMD).
Weighted sums, and unweighted counts of many short rows, find each value's bin instead and
add into the bins of its row (``_binned``): numpy.histogram's weighted count with edges
argsorts and gathers, several times slower than the count, and a loop over short rows costs
more in Python than in numpy. Edges no grid of cells holds (infinite ones, or tens of
thousands of very uneven bins) are left to numpy.histogram, row by row."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

STEP = 1 << 15       # values per pass of _binned: its temporaries stay in a core's cache
SHORT_ROW = 1 << 14  # unweighted rows shorter than this are binned, not sorted one by one
MAX_CELLS = 1 << 16  # the tables of _Grid stay in a core's cache
CROWDED = 1 / 16     # the share of a _Grid's cells that may hold several edges


def counts(block, edges: np.ndarray, uniform: bool, weights=None, rows=None):
    """Counts of ``block`` in the bins ``edges[b] <= v < edges[b+1]`` (last bin closed); with
    ``rows``, of each of the block's ``rows`` equal rows (C order) alone, shaped (rows, bins)."""
    x = np.asarray(block)
    if x.dtype == np.bool_:  # as numpy.histogram counts bools, without its warning
        x = x.view(np.uint8)
    n = 1 if rows is None else int(rows)
    x = x.reshape((n, x.size // n if n else 0))
    w = None if weights is None else np.asarray(weights).reshape(x.shape)
    E = np.result_type(x.dtype, edges.dtype)  # numpy.histogram compares values and edges in E
    F = np.result_type(x.dtype, np.float32)   # _slots computes t in F (float32 for float32 data)
    grid = _grid(edges.tobytes(), edges.dtype.str, E.str, F.str, x.dtype.kind == "f", uniform)
    if grid is None or (w is None and x.shape[1] >= SHORT_ROW):
        out = np.zeros((n, len(edges) - 1), np.int64 if w is None else np.float64)
        for k in range(n):
            out[k] = np.histogram(x[k], bins=edges, weights=None if w is None else w[k].astype(np.float64))[0]
    else:
        out = _binned(x, w, grid, _closed(edges, E), F)
    return out[0] if rows is None else out


def _binned(x, w, grid, top: np.ndarray, F):
    """Each row's counts (int64), or sums of ``w`` (float64), by finding each value's bin:
    slot 0 below the edges (and NaN), 1..nbins the bins, nbins + 1 above; the slots of row r
    start at r * (nbins + 2). A pass handles STEP values: whole rows where they are short,
    pieces of one row where they are long."""
    nrows, n = x.shape
    nbins = len(top) - 1
    width = nbins + 2
    acc = np.zeros(nrows * width, np.float64 if w is not None else np.intp)
    one = np.ones(1, np.intp)
    per = max(1, STEP // n) if n else nrows or 1  # whole rows per pass
    piece = min(n, STEP)
    for r0 in range(0, nrows, per):
        r1 = min(nrows, r0 + per)
        for c0 in range(0, n, piece or 1):
            c1 = min(n, c0 + piece)
            xs = x[r0:r1, c0:c1]
            slot = _slots(xs, grid, top, F)
            slot += (np.arange(r0, r1, dtype=np.intp) * width)[:, None]
            if w is None:
                np.add.at(acc, slot.ravel(), one)
            else:
                np.add.at(acc, slot.ravel(), w[r0:r1, c0:c1].astype(np.float64).ravel())
    out = acc.reshape(nrows, width)[:, 1:nbins + 1]
    return np.ascontiguousarray(out) if w is not None else out.astype(np.int64)


def _slots(xs, grid, top: np.ndarray, F):
    """The slot (0 below, b + 1 for bin b, nbins + 1 above; NaN below) of each value of ``xs``,
    as comparing it with the edges (``top``: _closed's) places it. Where the edges fit a grid,
    ``t = (x - lo) * scale + 1`` (in ``F``; clipped to [0.5, cells + 1.5]) tells it, but for
    the few values it leaves in doubt."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf and huge values: clipped below
        t = np.subtract(xs, grid.lo, dtype=F)
        t *= grid.scale
        t += 1
    np.fmax(t, 0.5, out=t)  # NaN too: slot 0, which no bin reads
    np.fmin(t, grid.cells + 1.5, out=t)
    cell = t.astype(np.intp)
    if grid.slack is not None:  # the edges are the grid's lines (uniform bins): the cell is the slot
        slot = cell
        near = np.rint(t)
        near -= t
        np.abs(near, out=near)
        doubt = np.flatnonzero(near < grid.slack)
    else:  # a cell holds at most one edge: its slot below the edge, one more from the edge on
        slot = grid.base.take(cell, mode="wrap")  # (every cell is in the tables: no wrap)
        slot += xs >= grid.cut.take(cell, mode="wrap")
        doubt = np.flatnonzero(slot < 0) if grid.crowded else ()
    if len(doubt):
        slot.reshape(-1)[doubt] = _exact_slots(np.ascontiguousarray(xs).reshape(-1)[doubt], top)
    return slot


def _exact_slots(v, top: np.ndarray):
    """Slots by comparing with the edges (``top``: _closed's, which closes the last bin)."""
    return np.searchsorted(top, v.astype(top.dtype, copy=False), side="right").astype(np.intp, copy=False)


def _closed(edges: np.ndarray, E) -> np.ndarray:
    """The edges in ``E``, the last one raised to the next value up: ``v >= top[k]`` is
    ``edges[k] <= v`` but for the last edge, which only values above it pass (it closes the
    last bin; ``E`` holds no value between the two)."""
    top = edges.astype(E)
    top[-1] = np.nextafter(top[-1], E.type(np.inf))
    return top


@dataclass(frozen=True)
class _Grid:
    """How _slots finds slots from ``t = (x - lo) * scale + 1`` (``lo`` and ``scale`` of the
    dtype t is computed in), cell = int(t). Uniform edges lie on the cells' lines, and only
    values within ``slack`` of a line are compared with the edges. Other edges get ``cells``
    (16 per bin) so that a cell holds at most one edge: slot = ``base[cell] + (x >=
    cut[cell])`` (``cut`` +inf in a cell without an edge); ``crowded``: some cell holds more
    edges than one (its base is -1: its values are compared with all the edges)."""

    lo: np.floating
    scale: np.floating
    cells: int
    slack: float | None = None
    base: np.ndarray | None = None
    cut: np.ndarray | None = None
    crowded: bool = False


@functools.lru_cache(maxsize=64)
def _grid(edges: bytes, dtype: str, E: str, F: str, floats: bool, uniform: bool) -> _Grid | None:
    """The _Grid of ``edges`` for values compared in ``E`` and t computed in ``F`` (``floats``:
    the values are of ``F``, and compared with cuts of ``F``); None where the edges are not
    finite or not apart, or so uneven that many cells would hold several (numpy.histogram's
    sort then counts them)."""
    e, E, F = np.frombuffer(edges, dtype=dtype), np.dtype(E), np.dtype(F)
    nbins = len(e) - 1
    lo, hi = float(e[0]), float(e[-1])
    with np.errstate(over="ignore", divide="ignore"):
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo and np.isfinite(nbins / (hi - lo))):
            return None
    ld = np.longdouble
    # how far t may be from (x - lo) * scale + 1 computed exactly, in cells: a few roundings
    off = 8 * float(np.finfo(F).eps)
    flo = F.type(lo)
    if uniform:  # where t puts each edge, against the grid's lines (extended precision)
        scale = F.type(nbins / (hi - lo))
        at = (e.astype(ld) - ld(flo)) * ld(scale) + 1
        slack = float(np.max(np.abs(at - np.arange(1, nbins + 2, dtype=ld)))) + off * (nbins + 2)
        if slack < 0.25:
            return _Grid(flo, scale, nbins, slack)
    cells = int(min(MAX_CELLS, max(64, 16 * nbins)))
    scale = F.type(cells / (hi - lo))
    top = _closed(e, E)
    at = (top.astype(ld) - ld(flo)) * ld(scale) + 1
    line = np.arange(cells + 2, dtype=ld)  # cell c holds t in [c, c + 1), widened by what t may be off
    lower = np.where(line == 0, -np.inf, line - off * (cells + 2))
    upper = np.where(line == cells + 1, np.inf, line + 1 + off * (cells + 2))
    below = np.searchsorted(at, lower, "left")  # the edges below the cell
    inside = np.searchsorted(at, upper, "right") - below
    base = below.astype(np.intp)
    cut = np.full(cells + 2, np.inf, dtype=E)
    one = inside == 1
    cut[one] = top[below[one]]
    if floats and F != E:  # x >= cut is x >= the least value of x's dtype that is >= cut
        low = cut.astype(F)
        cut = np.where(low < cut, np.nextafter(low, F.type(np.inf)), low)
    crowded = inside > 1
    if crowded.mean() > CROWDED:
        return None
    base[crowded] = -1
    return _Grid(flo, scale, cells, None, base, cut, bool(crowded.any()))


def bincount(block, nbins: int, weights=None):
    """np.bincount over ``nbins`` bins (values already checked to lie in [0, nbins))."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    out = np.bincount(np.asarray(block).ravel(), weights=w, minlength=nbins)
    return out if w is not None else out.astype(np.int64)


def counts2d(x, y, xedges: np.ndarray, yedges: np.ndarray, weights=None):
    """Joint counts (int64, or float64 weighted) as numpy.histogram2d bins them."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    h = np.histogram2d(np.asarray(x).ravel(), np.asarray(y).ravel(), bins=[xedges, yedges], weights=w)[0]
    return h if w is not None else h.astype(np.int64)
