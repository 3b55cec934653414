"""Scan of one block along one axis, seeded by an optional carry (the dask layer's chunk
carries): numpy ufunc.accumulate on the CPU, kernels/scan.cu on the GPU."""

from __future__ import annotations

import numpy as np

from . import is_cupy
from .ops import UFUNCS, identity


def scan(block, op: str, axis: int, exclusive: bool, dtype, carry=None):
    """Inclusive (or exclusive) scan along ``axis``; ``carry`` has the block's shape with
    ``axis`` of length 1 and is combined in front of every element."""
    if is_cupy(block):
        from ..cuda import scan as cuda_scan

        return cuda_scan.scan(block, op, axis, exclusive, dtype, carry)
    uf = UFUNCS[op]
    res = uf.accumulate(block, axis=axis, dtype=dtype) if block.size else np.empty(block.shape, dtype)
    if exclusive:
        first = np.full_like(np.take(res, [0], axis=axis) if res.shape[axis] else
                             np.empty(_one(res.shape, axis), dtype), identity(op, dtype))
        res = np.concatenate([first, np.take(res, np.arange(res.shape[axis] - 1), axis=axis)], axis=axis)
    if carry is not None:
        res = uf(carry.astype(dtype, copy=False), res, dtype=dtype)
    return res


def total(block, op: str, axis: int, dtype):
    """The block's reduction along ``axis`` (keepdims): what the next chunk's carry needs."""
    from .reduce import reduce

    return reduce(block, op, (axis,), dtype, keepdims=True)


def combine(op: str, carry, tot, dtype):
    """carry after this chunk = op(carry before it, its total)."""
    if carry is None:
        return tot
    xp = np if not is_cupy(tot) else __import__("cupy")
    return xp.asarray(UFUNCS[op](carry, tot, dtype=dtype))


def _one(shape, axis):
    s = list(shape)
    s[axis] = 1
    return tuple(s)
