"""Halo exchange without dask.array.map_overlap: one task per chunk (per run of chunks on
cupy data, graph.groups), plus a small cut task for each chunk whose neighbour lives on
another worker.

The ``<name>`` task runs the chunk function on a Tile: the centre block plus its halo pieces.
A neighbour held by the same worker (or any neighbour, under a local scheduler) is passed as
a block, and its piece is a view: nothing is copied. A neighbour held by another worker sends
its pieces through one ``<name>-halo`` task that cuts owning copies, so a 2-row halo never drags
its 4 GiB parent across GPUs. Where blocks live is read from the scheduler at graph-build time
(persisted data); when it is unknown, every exchange goes through cut tasks. Dask places the
compute task where its centre lives (by far its largest input). No pad, no trim, no concat.
"""

from __future__ import annotations

import itertools
from functools import partial

import dask.array as da
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from ..core.checks import warn_user
from ..core.stencil import merge_thin  # noqa: F401  (graph.halo.merge_thin: its home before)
from ..core.tile import Tile
from .declared import declare
from .groups import block_locations, empty_like_run, row_runs, run_chunks, run_into


CUT_PRIORITY = 10  # dask's user priority of the cut tasks (higher runs earlier; default 0)


def plan_chunks(x: da.Array, depth: tuple, allow_rechunk: bool = True) -> da.Array:
    """Merge chunks too thin for the halo along each axis that has one (see merge_thin)."""
    new = list(x.chunks)
    for axis, (lo, hi) in enumerate(depth):
        sizes = x.chunks[axis]
        if max(lo, hi) == 0 or len(sizes) == 1:
            continue
        merged = merge_thin(sizes, lo, hi)
        if merged == sizes:
            continue
        if not allow_rechunk:
            raise ValueError(
                f"chunks along axis {axis} {sizes} are too thin for a halo of ({lo}, {hi}); "
                f"rechunk, or pass allow_rechunk=True")
        warn_user(f"axis {axis}: chunks too thin for a halo of ({lo}, {hi}) merged into {merged}")
        new[axis] = merged
    return x if tuple(new) == x.chunks else x.rechunk(tuple(new))


def block_halo(index: tuple, numblocks: tuple, depth: tuple, periodic: tuple) -> tuple:
    """The (lo, hi) halo a block receives: none on an axis with one chunk (the kernel applies
    the mode there, wrap included) or at a non-periodic global edge."""
    out = []
    for i, n, (lo, hi), per in zip(index, numblocks, depth, periodic):
        if n == 1:
            out.append((0, 0))
        else:
            out.append((lo if (i > 0 or per) else 0, hi if (i < n - 1 or per) else 0))
    return tuple(out)


def _cut(block, specs):
    """The halo pieces this block sends: {direction: owning copy of the slice}."""
    return {d: block[sl].copy() for d, sl in specs}


def _run(func, halo, routes, centre, *sources, **params):
    """routes: (direction, source index, slices) -- slices for a neighbour block (a view),
    None for a cut task's dict of pieces."""
    pieces = {d: sources[i][sl] if sl is not None else sources[i][d] for d, i, sl in routes}
    return func(Tile(centre, halo, pieces), **params)


def map_halo(x: da.Array, func, depth: tuple, periodic: tuple, name: str, dtype,
             allow_rechunk: bool = True, per_chunk: tuple | None = None, made_of: tuple | None = None,
             **params) -> da.Array:
    """Lazily apply ``func(tile, **params) -> centre-shaped block`` to every chunk of ``x``.

    ``per_chunk``: func returns a small array of this shape per chunk instead (counts of a
    fused histogram, say); the result then stacks them, (chunks, *per_chunk), in C order of
    the chunks, for a tree merge (graph.merge). ``made_of`` = (source, step): declared on the
    result's layer (graph.declared). In steps: the chunks planned (thin ones merged), each
    block's halo routed (pieces of neighbours on its worker read in place, others cut and
    sent), the blocks' tasks (a run of chunks on one worker as one task), the layers."""
    depth = tuple((int(lo), int(hi)) for lo, hi in depth)
    if 0 in x.shape:  # no element, so no halo to cut: the empty result (a count of nothing: 0)
        if per_chunk is None:
            return x.astype(dtype)
        return da.zeros((1,) + tuple(per_chunk), dtype=dtype, chunks=(1,) + tuple(per_chunk))
    x = plan_chunks(x, depth, allow_rechunk)
    token = tokenize(x, func, depth, periodic, params)
    out_name, halo_name = f"{name}-{token}", f"{name}-halo-{token}"
    located = block_locations(x)
    plans, sends = _route_halos(x, depth, periodic, located, halo_name)
    cuts = {(halo_name,) + src: (_cut, (x.name,) + src, tuple(dict(specs).items())) for src, specs in sends.items()}
    runs = row_runs(x, located) or [range(i, i + 1) for i in range(x.numblocks[0])]
    rest = list(itertools.product(*(range(k) for k in x.numblocks[1:])))
    blocks = _block_tasks(x, func, params, plans, runs, rest, out_name, per_chunk, dtype)
    graph = _layered(x, cuts, blocks, halo_name, out_name, made_of)
    meta = x._meta.astype(dtype) if hasattr(x._meta, "astype") else None
    if per_chunk is not None:
        counts = ((1,) * (len(runs) * len(rest)),) + tuple((n,) for n in per_chunk)
        meta = None if meta is None else meta.reshape((0,) * (1 + len(per_chunk)))
        return da.Array(graph, out_name, counts, dtype=dtype, meta=meta)
    return da.Array(graph, out_name, run_chunks(x, runs), dtype=dtype, meta=meta)


def _neighbour(index: tuple, d: tuple, nb: tuple, periodic: tuple):
    """The block ``d`` away from ``index`` (wrapping along periodic axes), or None past an edge."""
    n = []
    for i, di, k, per in zip(index, d, nb, periodic):
        j = i + di
        if per:
            j %= k
        elif not 0 <= j < k:
            return None
        n.append(j)
    return tuple(n)


def _directions(halo: tuple) -> list:
    """The neighbours' directions a block with ``halo`` ((lo, hi) per axis) reads from."""
    axes = [[d for d in (-1, 0, 1) if d == 0 or (lo if d < 0 else hi)] for lo, hi in halo]
    return [d for d in itertools.product(*axes) if any(d)]


def _piece(x: da.Array, depth: tuple, src: tuple, d: tuple) -> tuple:
    """The slices of block ``src`` that its neighbour in direction ``-d`` reads as halo."""
    sl = []
    for a, di in enumerate(d):
        lo, hi = depth[a]
        size = x.chunks[a][src[a]]
        sl.append(slice(size - lo, size) if di < 0 else slice(0, hi) if di > 0 else slice(None))
    return tuple(sl)


def _route_halos(x: da.Array, depth: tuple, periodic: tuple, located, halo_name: str):
    """Where each block's halo pieces come from: ({block: (its halo, routes (direction,
    source number, slices or None), source keys)}, {source block: pieces to cut and send}).
    A neighbour on the same worker is read in place (a view); another's piece is cut there into
    a small owning array (``halo_name``) so that only it travels."""
    nb = x.numblocks

    def local(a, b):
        return located is not None and (not located or located[a] == located[b])

    sends: dict = {}
    plans = {}
    for index in itertools.product(*(range(k) for k in nb)):
        halo = block_halo(index, nb, depth, periodic)
        routes, sources = [], []
        for d in _directions(halo):
            src = _neighbour(index, d, nb, periodic)
            if local(index, src):
                key, sl = (x.name,) + src, _piece(x, depth, src, d)
            else:
                sends.setdefault(src, []).append((d, _piece(x, depth, src, d)))
                key, sl = (halo_name,) + src, None
            if key not in sources:
                sources.append(key)
            routes.append((d, sources.index(key), sl))
        plans[index] = (halo, tuple(routes), sources)
    return plans, sends


def _block_tasks(x: da.Array, func, params: dict, plans: dict, runs: list, rest: list, out_name: str,
                 per_chunk, dtype) -> dict:
    """The result's tasks: one per chunk, or one per run of chunks along axis 0 (each chunk
    still runs on its own, writing its rows of the run's block)."""
    dsk = {}
    for g, run in enumerate(runs):
        for ri, r in enumerate(rest):
            members = [(i,) + r for i in run]
            if per_chunk is not None:
                key = (out_name, g * len(rest) + ri) + (0,) * len(per_chunk)
            else:
                key = (out_name, g) + r
            if len(members) == 1:
                halo, routes, sources = plans[members[0]]
                fn = partial(_run, func, halo, routes, **params)
                dsk[key] = ((_stacked, fn) if per_chunk is not None else (fn,)) + ((x.name,) + members[0], *sources)
                continue
            keys, specs, row = [], [], 0
            for m in members:
                halo, routes, sources = plans[m]
                pos = [_slot(keys, k) for k in [(x.name,) + m, *sources]]
                rows = x.chunks[0][m[0]]
                specs.append((pos[0], halo, tuple((d, pos[1 + i], sl) for d, i, sl in routes),
                              slice(row, row + rows)))
                row += rows
            shape = None if per_chunk is not None else (row,) + tuple(c[k] for c, k in zip(x.chunks[1:], r))
            fn = partial(_run_members, partial(func, **params) if params else func, tuple(specs), shape, dtype)
            dsk[key] = ((_stacked, fn) if per_chunk is not None else (fn,)) + tuple(keys)
    return dsk


def _layered(x: da.Array, cuts: dict, blocks: dict, halo_name: str, out_name: str, made_of) -> HighLevelGraph:
    """``x``'s graph with the halo cuts' layer (first in every worker's queue) and the blocks'
    layer (declaring ``made_of``) on top."""
    hlg = x.__dask_graph__()
    layers, deps = dict(hlg.layers), dict(hlg.dependencies)
    below = set(x.__dask_layers__())
    if cuts:
        # cut first: a worker's queue of big tasks must not delay the halo another worker waits for
        layers[halo_name] = MaterializedLayer(cuts, annotations={"priority": CUT_PRIORITY})
        deps[halo_name] = below
        below = below | {halo_name}
    layers[out_name] = declare(blocks, made_of)
    deps[out_name] = below
    return HighLevelGraph(layers, deps)


def _slot(keys: list, key) -> int:
    if key not in keys:
        keys.append(key)
    return keys.index(key)


def _run_members(func, specs, shape, dtype, *blocks):
    """One task for a run of chunks along axis 0 (graph.groups): each member's tile from the
    blocks handed in (neighbours in the run are views, as any local neighbour); results go
    into row slices of one block of ``shape``, or (``shape`` None: per-chunk counts) add up."""
    total = None
    for centre, halo, routes, rows in specs:
        pieces = {d: blocks[i][sl] if sl is not None else blocks[i][d] for d, i, sl in routes}
        tile = Tile(blocks[centre], halo, pieces)
        if shape is None:
            part = func(tile)
            total = part if total is None else total + part
            continue
        if total is None:
            total = empty_like_run(blocks[centre], shape, dtype)
        run_into(func, tile, total[rows])
    return total


def _stacked(fn, *blocks):
    return fn(*blocks)[None]
