"""Prefix scans (add, mul, min, max; inclusive or exclusive) with numpy's dtype rules, and the
numpy-named wrappers. Distributed: chunk totals -> a chain of tiny carries -> one seeded scan
pass per chunk (graph.scan)."""

from __future__ import annotations

from .. import backends
from ..core import checks
from ..core import ops as core_ops
from ..core.arrays import on_data


def scan(x, op="add", axis=None, exclusive=False, dtype=None):
    """Inclusive (or exclusive) prefix scan with ``op`` in add | mul | min | max.

    numpy's rules: ``axis=None`` scans the C-order flattened array; add/mul widen small
    integers (as np.cumsum/np.cumprod), min/max keep the dtype; NaN propagates; integer
    overflow wraps. Distributed: chunk totals -> carries -> one seeded pass per chunk.
    """
    op = core_ops.check_op(op)
    x = checks.as_array(x)
    out_dtype = core_ops.result_dtype(op, x.dtype, dtype)
    if not isinstance(exclusive, bool):
        raise TypeError(f"exclusive must be True or False, got {exclusive!r}")
    if axis is None:
        if checks.array_kind(x) == "xarray":
            raise ValueError("axis=None flattens; give an axis (or use a dim) for xarray inputs")
        x = x.reshape(-1) if checks.array_kind(x) == "dask" else x.ravel()
        ax = 0
    else:
        ax = checks.axis(axis, max(x.ndim, 1))

    def run(data):
        if checks.array_kind(data) == "dask":
            from ..graph.scan import scan as graph_scan

            return graph_scan(data, op, ax, exclusive, out_dtype)
        return backends.scan(data, op, ax, exclusive, out_dtype)

    return on_data(x, run)


def cumsum(x, axis=None, dtype=None):
    """numpy.cumsum."""
    return scan(x, "add", axis, False, dtype)


def cumprod(x, axis=None, dtype=None):
    """numpy.cumprod."""
    return scan(x, "mul", axis, False, dtype)


def cummin(x, axis=None, dtype=None):
    """numpy.minimum.accumulate (axis=None flattens)."""
    return scan(x, "min", axis, False, dtype)


def cummax(x, axis=None, dtype=None):
    """numpy.maximum.accumulate (axis=None flattens)."""
    return scan(x, "max", axis, False, dtype)
