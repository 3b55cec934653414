"""Distributed scan with fused carries: per chunk a total, a (tiny) carry, and one scan pass
seeded by the carry. The data is read twice and written once; four tasks per chunk with the
input's own task."""

from __future__ import annotations

import itertools
from functools import partial

import dask.array as da
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from .. import backends
from ..core.ops import combine


def scan(x: da.Array, op: str, axis: int, exclusive: bool, dtype) -> da.Array:
    meta = x._meta.astype(dtype)
    scan_fn = partial(backends.scan, op=op, axis=axis, exclusive=exclusive, dtype=dtype)
    if x.numblocks[axis] == 1:
        return x.map_blocks(scan_fn, dtype=dtype, meta=meta, name=f"distconv-scan-{tokenize(x, op, axis, exclusive, dtype)}")
    token = tokenize(x, op, axis, exclusive, dtype)
    total_name, carry_name, out_name = (f"distconv-scan-total-{token}", f"distconv-scan-carry-{token}",
                                        f"distconv-scan-{token}")
    totals, carries, outs = {}, {}, {}
    total_fn = partial(backends.reduce, op=op, axes=(axis,), dtype=dtype, keepdims=True)
    combine_fn = partial(combine, op)
    for index in itertools.product(*(range(k) for k in x.numblocks)):
        i = index[axis]
        key = (x.name,) + index
        outs[(out_name,) + index] = (_scan_with_carry, scan_fn, key, None if i == 0 else (carry_name,) + index)
        if i < x.numblocks[axis] - 1:
            totals[(total_name,) + index] = (total_fn, key)
        if i > 0:
            prev = index[:axis] + (i - 1,) + index[axis + 1:]
            before = None if i == 1 else (carry_name,) + prev
            carries[(carry_name,) + index] = (_combine, combine_fn, before, (total_name,) + prev, dtype)
    hlg = x.__dask_graph__()
    layers, deps = dict(hlg.layers), dict(hlg.dependencies)
    below = set(x.__dask_layers__())
    layers[total_name], deps[total_name] = totals, below
    layers[carry_name], deps[carry_name] = carries, {total_name}
    layers[out_name], deps[out_name] = outs, below | {carry_name}
    return da.Array(HighLevelGraph(layers, deps), out_name, x.chunks, dtype=dtype, meta=meta)


def _scan_with_carry(scan_fn, block, carry):
    return scan_fn(block, carry=carry)


def _combine(combine_fn, carry, tot, dtype):
    return combine_fn(carry, tot, dtype)
