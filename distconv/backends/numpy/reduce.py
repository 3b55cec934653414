"""Reduction of one block (add / mul / min / max) over some axes: numpy on the CPU,
the oracle for backends/cuda/reduce.py."""

from __future__ import annotations

from ...core.ops import UFUNCS


def reduce(block, op: str, axes: tuple, dtype, keepdims: bool = False):
    """``op``-reduce ``block`` over ``axes`` (sorted, non-negative) into ``dtype``."""
    return UFUNCS[op].reduce(block, axis=axes, dtype=dtype, keepdims=keepdims)
