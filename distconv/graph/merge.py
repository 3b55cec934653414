"""Count, then tree-merge: one task per chunk returns a small fixed-shape partial (histogram
counts, BoVW counts, k-means partial sums), and a tree reduction (8 at a time) adds them up.
Integer counts merge exactly, so the result never depends on the order or the chunking."""

from __future__ import annotations

import itertools

import dask.array as da
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ..core.ops import FAN_IN
from .groups import block_locations, row_runs


def per_chunk(func, arrays: list, nbins_shape: tuple, dtype, name: str = "distconv-hist") -> da.Array:
    """Stack ``func(*blocks)`` (each of shape ``nbins_shape``) of every chunk into a
    (chunks, *nbins_shape) dask array; the arrays share one chunking. On cupy chunks one task
    counts a run of chunks along axis 0 (graph.groups) and adds its members' counts."""
    x = arrays[0]
    token = tokenize(func, *arrays)
    out_name = f"{name}-{token}"
    runs = row_runs(x, block_locations(x)) or [range(i, i + 1) for i in range(x.numblocks[0])]
    dsk = {}
    grid = (len(runs),) + x.numblocks[1:]
    for j, index in enumerate(itertools.product(*(range(k) for k in grid))):
        members = [[(a.name, i) + index[1:a.ndim] for a in arrays] for i in runs[index[0]]]
        dsk[(out_name, j) + (0,) * len(nbins_shape)] = (_expand, func, len(arrays), *itertools.chain(*members))
    layers, deps = {}, {}
    for a in arrays:
        hlg = a.__dask_graph__()
        layers.update(hlg.layers)
        deps.update(hlg.dependencies)
    layers[out_name] = dsk
    deps[out_name] = set().union(*(a.__dask_layers__() for a in arrays))
    chunks = ((1,) * len(dsk),) + tuple((s,) for s in nbins_shape)
    meta = x._meta.astype(dtype).reshape((0,) * (1 + len(nbins_shape)))
    return da.Array(HighLevelGraph(layers, deps), out_name, chunks, dtype=dtype, meta=meta)


def _expand(func, n: int, *blocks):
    """The counts of one chunk, or the sum over a run's members (``n`` arrays per member)."""
    total = None
    for k in range(0, len(blocks), n):
        part = func(*blocks[k:k + n])
        total = part if total is None else total + part
    return total[None]




def merge(parts: da.Array, name: str = "distconv-hist-merge") -> da.Array:
    """Tree-sum the per-chunk counts (FAN_IN at a time)."""
    return da.reduction(parts, _sum, _sum, combine=_sum, axis=0, dtype=parts.dtype, split_every=FAN_IN,
                        name=name, meta=parts._meta.reshape(parts._meta.shape[1:]))


def tree_sum_delayed(func, x: da.Array, *args, name: str = "distconv-partials"):
    """``func(block, *args)`` -> a tuple of host partials for every block of ``x``, added up
    elementwise in a tree of FAN_IN; returns the summed tuple (computed)."""
    import dask

    level = [dask.delayed(func, name=f"{name}-{i}", pure=True)(blk, *args)
             for i, blk in enumerate(x.to_delayed().ravel())]
    while len(level) > 1:
        level = [dask.delayed(_add_tuples, pure=True)(*level[i:i + FAN_IN])
                 for i in range(0, len(level), FAN_IN)]
    return level[0].compute()


def _add_tuples(*parts):
    return tuple(sum(p[k] for p in parts) for k in range(len(parts[0])))


def _sum(block, axis=None, keepdims=False, computing_meta=False):
    return block.sum(axis=axis, keepdims=keepdims)


def unify(x: da.Array, *others):
    """Others rechunked like ``x`` (weights, y of histogram2d); shapes already checked."""
    return [o if o.chunks == x.chunks else o.rechunk(x.chunks) for o in others]


def as_dask_like(x: da.Array, other):
    """``other`` (weights, or y of histogram2d, given as numpy/cupy) as a dask array like ``x``."""
    return other if isinstance(other, da.Array) else da.from_array(other, chunks=x.chunks)
