"""A stencil: a per-block function that reads a halo of fixed depth, and how consecutive
stencils compose into one (the summed halo, one pass over memory per block).

A job reads the chain from the result itself: each op declares the step it ran, on a dask
array's graph layer (graph/declared.py) or on a planned array (core/planned.py), and the
engine plans from those.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from . import ops as core_ops
from .arrays import array_module
from .modes import mode_of, one_mode
from .tile import Tile


@dataclass(frozen=True)
class Stencil:
    func: Callable          # tile -> centre-shaped block (the backend dispatch)
    depth: tuple            # ((lo, hi), ...) halo read per axis
    mode: object            # boundary mode at the global edges: one name, or one per axis
    name: str               # task-name prefix (distconv-gaussian, ...)
    dtype: object = None    # of the result; None: the input's

    def result_dtype(self, dtype) -> np.dtype:
        return np.dtype(dtype if self.dtype is None else self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.depth)

    @property
    def periodic(self) -> tuple:
        """Per axis: does the halo come from the far edge (wrap) rather than a boundary rule?"""
        return tuple(mode_of(self.mode, a) == "wrap" for a in range(self.ndim))


def identity(ndim: int, name: str) -> Stencil:
    """The stencil that reads no halo and returns its block: the chain of no steps (before a
    scan), named ``name`` on the dashboard."""
    return Stencil(_centre, ((0, 0),) * ndim, "nearest", name)


def _centre(tile):
    return Tile.of(tile).centre


def reach(ksize: int, origin: int) -> tuple:
    """(before, after): how far a mask of ``ksize`` taps shifted by ``origin`` reads around
    the point it writes (scipy's origin rule)."""
    centre = ksize // 2 + origin
    return (centre, ksize - 1 - centre)


def passes_depth(passes, ndim: int) -> tuple:
    """The halo of 1-D masks ``passes`` = [(axis, weights, origin), ...] run in turn."""
    depth = [(0, 0)] * ndim
    for axis, w, o in passes:
        lo, hi = reach(len(w), o)
        depth[axis] = (max(depth[axis][0], lo), max(depth[axis][1], hi))
    return tuple(depth)


def mask_depth(shape, origin) -> tuple:
    """The halo of an N-D mask of ``shape`` shifted by ``origin``."""
    return tuple(reach(k, o) for k, o in zip(shape, origin))


def accepts_out(func) -> bool:
    """Does ``func(tile, out=array)`` write its result into ``out`` (and return it)? Per-block
    functions say so with an ``accepts_out`` attribute; partials of them inherit it."""
    while isinstance(func, partial):
        func = func.func
    return bool(getattr(func, "accepts_out", False))


def chained(stencils: list[Stencil], name: str | None = None) -> Stencil:
    """One stencil doing ``stencils`` in order: it reads the summed halo once; each step writes
    the centre grown by the halo the later steps still need. Each step applies its own mode at
    the global edges, as when run one after another; along one axis wrap cannot mix with other
    modes (its halo comes from the far edge, theirs from the boundary rule)."""
    if len(stencils) == 1:
        return stencils[0]
    if len({s.periodic for s in stencils}) > 1:
        raise ValueError(f"a fused chain cannot mix wrap with other modes along one axis, got "
                         f"{[s.mode for s in stencils]}")
    ndim = stencils[0].ndim
    depth = tuple((sum(s.depth[a][0] for s in stencils), sum(s.depth[a][1] for s in stencils))
                  for a in range(ndim))
    # steps that differ: the chain's mode says only which axes wrap (each step applies its own)
    modes = {s.mode for s in stencils}
    mode = modes.pop() if len(modes) == 1 else one_mode(
        tuple("wrap" if p else "mixed" for p in stencils[0].periodic))
    dtype = next((s.dtype for s in reversed(stencils) if s.dtype is not None), None)
    return Stencil(_Chain(tuple(stencils)), depth, mode, name or "-".join(s.name for s in stencils),
                   dtype)


@dataclass(frozen=True)
class _Chain:
    steps: tuple

    @property
    def accepts_out(self) -> bool:
        return accepts_out(self.steps[-1].func)

    def __call__(self, tile, out=None):
        return run_steps(tile, [(st.func, st.depth) for st in self.steps], out)


def run_pair(tile, functions, passes, mode, cval, weights, mode2, cval2, origin2, dtype=None, bins=None,
             out=None):
    """A backend's correlate_pair as two steps, with its own ``functions`` = (correlate_passes,
    correlate, counts): the passes, then the mask over their result grown by its halo (``mode2``
    at the global edges); with ``bins`` = (edges, uniform), that result's counts instead."""
    passes_fn, correlate_fn, counts_fn = functions
    tile = Tile.of(tile)
    steps = [(partial(passes_fn, passes=passes, mode=mode, cval=cval, dtype=dtype), passes_depth(passes, tile.ndim)),
             (partial(correlate_fn, weights=weights, mode=mode2, cval=cval2, origin=origin2, dtype=dtype),
              mask_depth(weights.shape, origin2))]
    if bins is None:
        return run_steps(tile, steps, out)
    return counts_fn(run_steps(tile, steps), *bins)


def run_steps(tile, steps, out=None):
    """``steps`` = [(func, depth), ...] in order over one tile, the chain's way: each step reads
    the halo it needs from what the earlier ones left and writes the centre grown by the halo
    still to be used; at the global edges (no halo) each applies its own mode. ``out``: where
    the last step writes its result."""
    tile = Tile.of(tile)
    ext = tile.assemble()
    have = [list(h) for h in tile.halo]          # halo still around the current array
    for i, (func, depth) in enumerate(steps):
        use = tuple((min(depth[a][0], have[a][0]), min(depth[a][1], have[a][1]))
                    for a in range(tile.ndim))
        last = out is not None and i == len(steps) - 1  # only the result goes to out
        ext = func(Tile.extended(ext, use), out=out) if last else func(Tile.extended(ext, use))
        for a in range(tile.ndim):
            have[a][0] -= use[a][0]
            have[a][1] -= use[a][1]
    return ext


@dataclass(frozen=True)
class ScanStep:
    """A checked scan, as the engine runs it on a block (``axis`` None: over the flattened
    array, which the engine does not take): the block's own scan, its total along the axis,
    and the carry of the blocks before it added in front."""
    func: Callable        # (block, op, axis, exclusive, dtype) -> its scan (the backend dispatch)
    op: str
    axis: int | None
    exclusive: bool
    dtype: np.dtype
    skipna: bool = False  # NaN counts as the op's identity (np.nancumsum, xarray's skipna)

    @property
    def name(self) -> str:
        """Its task names on the dashboard: distconv-cumsum, ..."""
        return "distconv-" + {"add": "cumsum", "mul": "cumprod", "min": "cummin", "max": "cummax"}[self.op]

    def __call__(self, block):
        return self.func(self.filled(block), self.op, self.axis, self.exclusive, self.dtype)

    def filled(self, block):
        """``block`` with NaN as the op's identity where the step skips NaN, else itself."""
        return nan_as_identity(block, self.op) if self.skipna else block

    def total(self, scanned, block):
        """The block's total along the axis as a row (a carry's shape), read off its own scan
        ``scanned`` instead of another pass over it: an inclusive scan's last row (so the next
        block's carry continues the scan exactly as it ran), an exclusive one's combined with
        the block's last row."""
        last = (slice(None),) * self.axis + (slice(-1, None),)
        if not self.exclusive:
            return scanned[last].copy()
        return core_ops.combine(self.op, scanned[last], self.filled(block[last]), self.dtype)

    def combine(self, carry, total):
        """The carry after a block: op(the carry before it, its total); ``carry`` None at the start."""
        return core_ops.combine(self.op, carry, total, self.dtype)

    def seed(self, scanned, carry):
        """``scanned`` (the block's own scan) with ``carry`` (the blocks' before it) combined
        in front of every element, in place."""
        xp = array_module(scanned)
        core_ops.UFUNCS[self.op](xp.asarray(carry, dtype=self.dtype), scanned, out=scanned)
        return scanned


def nan_as_identity(x, op: str):
    """``x`` (numpy, cupy or dask) with its NaN replaced by ``op``'s identity."""
    return np.where(np.isnan(x), core_ops.identity(op, x.dtype), x)


def merge_thin(sizes: tuple, lo: int, hi: int) -> tuple:
    """Chunk sizes along one axis such that each chunk can supply the halos its neighbours
    take (>= max(lo, hi)) and the edge chunks hold what reflect/mirror read back inward
    (first >= lo + 1, last >= hi + 1). Thin chunks merge into their neighbours."""
    need = max(lo, hi)
    merged: list[int] = []
    for s in sizes:
        if merged and merged[-1] < need:
            merged[-1] += s
        else:
            merged.append(s)
    while len(merged) > 1 and (merged[-1] < max(need, hi + 1)):
        last = merged.pop()
        merged[-1] += last
    while len(merged) > 1 and merged[0] < lo + 1:
        first = merged.pop(0)
        merged[0] += first
    return tuple(merged)
