"""Reductions (add, mul, min, max) with numpy's dtype rules, distributed as tree reductions,
and the numpy-named wrappers sum, prod, min, max, mean."""

from __future__ import annotations

from functools import partial

import numpy as np

from .. import backends
from ..core import checks
from ..core import ops as core_ops


def reduce(x, op="add", axis=None, dtype=None, keepdims=False):
    """``op``-reduction (add | mul | min | max) over ``axis`` with numpy's dtype rules;
    distributed as a tree reduction."""
    op = core_ops.check_op(op)
    x = checks.as_array(x)
    out_dtype = core_ops.result_dtype(op, x.dtype, dtype)
    axes = checks.axes(axis, x.ndim)
    kind = checks.array_kind(x)
    if kind == "xarray":
        dims = [x.dims[a] for a in axes]
        return x.reduce(lambda d, axis=None: reduce(d, op, axis, dtype), dim=dims, keep_attrs=True)
    if kind == "dask":
        from ..graph.blockwise import tree_reduce

        block_fn = partial(backends.reduce, op=op, dtype=out_dtype)
        return tree_reduce(x, block_fn, axes, keepdims, out_dtype, f"distconv-reduce-{op}")
    return backends.reduce(x, op, axes, out_dtype, keepdims)


def sum(x, axis=None, dtype=None, keepdims=False):  # noqa: A001 - numpy's name
    """numpy.sum."""
    return reduce(x, "add", axis, dtype, keepdims)


def prod(x, axis=None, dtype=None, keepdims=False):
    """numpy.prod."""
    return reduce(x, "mul", axis, dtype, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    """numpy.min (NaN propagates)."""
    return reduce(x, "min", axis, None, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    """numpy.max (NaN propagates)."""
    return reduce(x, "max", axis, None, keepdims)


def mean(x, axis=None, keepdims=False):
    """numpy.mean: float64 accumulation for integers, the input's float type otherwise."""
    x = checks.as_array(x)
    acc = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    count = int(np.prod([x.shape[a] for a in checks.axes(axis, x.ndim)], dtype=np.int64))
    return reduce(x, "add", axis, acc, keepdims) / count
