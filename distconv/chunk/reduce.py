"""Reduction of one block (add / mul / min / max) over some axes: numpy on the CPU,
kernels/reduce.cu on the GPU."""

from __future__ import annotations

from . import is_cupy
from .ops import UFUNCS


def reduce(block, op: str, axis, dtype, keepdims: bool = False):
    """``op``-reduce ``block`` over ``axis`` (int, tuple or None) into ``dtype``."""
    axes = tuple(range(block.ndim)) if axis is None else tuple(sorted(a % block.ndim for a in (
        axis if isinstance(axis, tuple) else (axis,))))
    if is_cupy(block):
        from ..cuda import reduce as cuda_reduce

        return cuda_reduce.reduce(block, op, axes, dtype, keepdims)
    return UFUNCS[op].reduce(block, axis=axes, dtype=dtype, keepdims=keepdims)
