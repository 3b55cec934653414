"""Scan of one block along one axis, seeded by an optional carry (the dask layer's chunk
carries): numpy ufunc.accumulate (the oracle for backends/cuda/scan.py)."""

from __future__ import annotations

import numpy as np

from ...core.arrays import into
from ...core.ops import UFUNCS, identity


def scan(block, op: str, axis: int, exclusive: bool, dtype, carry=None, out=None):
    """Inclusive (or exclusive) scan along ``axis``; ``carry`` has the block's shape with
    ``axis`` of length 1 and is combined in front of every element."""
    uf = UFUNCS[op]
    res = uf.accumulate(block, axis=axis, dtype=dtype) if block.size else np.empty(block.shape, dtype)
    if exclusive:
        first = np.full_like(np.take(res, [0], axis=axis) if res.shape[axis] else
                             np.empty(_one(res.shape, axis), dtype), identity(op, dtype))
        res = np.concatenate([first, np.take(res, np.arange(res.shape[axis] - 1), axis=axis)], axis=axis)
    if carry is not None:
        res = uf(carry.astype(dtype, copy=False), res, dtype=dtype)
    return into(out, res)


def _one(shape, axis):
    s = list(shape)
    s[axis] = 1
    return tuple(s)
