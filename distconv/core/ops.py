"""Associative operators of scans and reductions: numpy ufuncs, kernel functors, identities,
and numpy's result-dtype rules."""

from __future__ import annotations

import numpy as np

UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}
FUNCTORS = {"add": "DcAdd", "mul": "DcMul", "min": "DcMin", "max": "DcMax"}
# partials are added FAN_IN at a time in every tree reduction of distconv (the graph's merges,
# the engine's merge of its blocks' results), so sums come out the same on every path
FAN_IN = 8


def check_op(op) -> str:
    if op not in UFUNCS:
        raise ValueError(f"op must be one of {', '.join(UFUNCS)}; got {op!r}")
    return op


def identity(op: str, dtype) -> np.generic:
    dt = np.dtype(dtype)
    if op == "add":
        return dt.type(0)
    if op == "mul":
        return dt.type(1)
    if dt.kind == "b":
        return dt.type(op == "min")
    if dt.kind == "f":
        return dt.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dt)
    return dt.type(info.max if op == "min" else info.min)


def result_dtype(op: str, dtype, requested=None) -> np.dtype:
    """numpy's dtype for cumsum/cumprod/sum/prod (small ints widen) and min/max (kept)."""
    if requested is not None:
        dt = np.dtype(requested)
        if dt.kind not in "biuf" or dt == np.float16:
            raise TypeError(f"dtype {dt} cannot hold a {op} scan or reduction; use a real "
                            "integer or float32/float64 dtype")
        return dt
    if op in ("min", "max"):
        return np.dtype(dtype)
    return np.add.reduce(np.zeros(1, dtype=dtype)).dtype if op == "add" else \
        np.multiply.reduce(np.ones(1, dtype=dtype)).dtype


def kernel_dtype(dtype) -> np.dtype:
    """The type kernels compute in: 8/16-bit ints and bool widen to 32 bits (add and mul wrap
    the same way modulo 2^k, min and max are exact), the rest as is."""
    dt = np.dtype(dtype)
    if dt.kind == "b" or (dt.kind in "iu" and dt.itemsize < 4):
        return np.dtype(np.uint32 if dt.kind in "bu" else np.int32)
    return dt


def combine(op: str, carry, tot, dtype):
    """A scan's carry after a chunk = op(carry before it, the chunk's total)."""
    if carry is None:
        return tot
    from .arrays import array_module

    return array_module(tot).asarray(UFUNCS[op](carry, tot, dtype=dtype))
