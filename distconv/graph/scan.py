"""Distributed scan with fused carries: per chunk a total, a (tiny) carry, and one scan pass
seeded by the carry. The data is read twice and written once; four tasks per chunk with the
input's own task. On cupy chunks a scan along any axis but the first takes runs of chunks
along axis 0 per task (graph.groups): the carries of a run are its members' stacked."""

from __future__ import annotations

import itertools
from functools import partial

import dask.array as da
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from .. import backends
from ..core.arrays import array_module
from ..core.ops import combine
from .declared import declare
from .groups import block_locations, empty_like_run, row_runs, run_chunks, run_into


def scan(x: da.Array, op: str, axis: int, exclusive: bool, dtype, made_of: tuple | None = None) -> da.Array:
    meta = x._meta.astype(dtype)
    scan_fn = partial(backends.scan, op=op, axis=axis, exclusive=exclusive, dtype=dtype)
    token = tokenize(x, op, axis, exclusive, dtype)
    total_name, carry_name, out_name = (f"distconv-scan-total-{token}", f"distconv-scan-carry-{token}",
                                        f"distconv-scan-{token}")
    runs = (row_runs(x, block_locations(x)) if axis != 0 else None) or [range(i, i + 1) for i in range(x.numblocks[0])]
    chunks = run_chunks(x, runs)
    grid = (len(runs),) + x.numblocks[1:]
    totals, carries, outs = {}, {}, {}
    total_fn = partial(backends.reduce, op=op, axes=(axis,), dtype=dtype, keepdims=True)
    combine_fn = partial(combine, op)
    for index in itertools.product(*(range(k) for k in grid)):
        i = index[axis]
        members = tuple((x.name, m) + index[1:] for m in runs[index[0]])
        carry = None if i == 0 else (carry_name,) + index
        if len(members) == 1:
            outs[(out_name,) + index] = (_scan_with_carry, scan_fn, members[0], carry)
        else:
            shape = tuple(c[k] for c, k in zip(chunks, index))
            outs[(out_name,) + index] = (_scan_members, scan_fn, shape, dtype, carry, *members)
        if i < grid[axis] - 1:
            totals[(total_name,) + index] = (_totals, total_fn, *members)
        if i > 0:
            prev = index[:axis] + (i - 1,) + index[axis + 1:]
            before = None if i == 1 else (carry_name,) + prev
            carries[(carry_name,) + index] = (_combine, combine_fn, before, (total_name,) + prev, dtype)
    hlg = x.__dask_graph__()
    layers, deps = dict(hlg.layers), dict(hlg.dependencies)
    below = set(x.__dask_layers__())
    if totals:
        layers[total_name], deps[total_name] = totals, below
        layers[carry_name], deps[carry_name] = carries, {total_name}
    layers[out_name], deps[out_name] = declare(outs, made_of), below | ({carry_name} if totals else set())
    return da.Array(HighLevelGraph(layers, deps), out_name, chunks, dtype=dtype, meta=meta)


def _scan_with_carry(scan_fn, block, carry):
    return scan_fn(block, carry=carry)


def _totals(total_fn, *blocks):
    """Each member's total along the scan axis, stacked along axis 0 (the run's rows)."""
    parts = [total_fn(b) for b in blocks]
    return parts[0] if len(parts) == 1 else array_module(parts[0]).concatenate(parts, axis=0)


def _scan_members(scan_fn, shape, dtype, carry, *blocks):
    """A run of chunks scanned into row slices of one block, each seeded by its rows of the
    run's carry."""
    out = empty_like_run(blocks[0], shape, dtype)
    row = 0
    for b in blocks:
        rows = slice(row, row + b.shape[0])
        run_into(partial(scan_fn, carry=None if carry is None else carry[rows]), b, out[rows])
        row = rows.stop
    return out


def _combine(combine_fn, carry, tot, dtype):
    return combine_fn(carry, tot, dtype)
