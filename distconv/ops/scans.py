"""Prefix scans (add, mul, min, max; inclusive or exclusive) with numpy's dtype rules, and the
numpy-named wrappers. Distributed: chunk totals -> a chain of tiny carries -> one seeded scan
pass per chunk (graph.scan)."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..core import checks
from ..core import ops as core_ops
from ..core.arrays import array_module, on_data
from ..core.stencil import Probe, ScanStep, nan_as_identity


def scan(x, op="add", axis=None, exclusive=False, dtype=None, skipna=False):
    """Inclusive (or exclusive) prefix scan with ``op`` in add | mul | min | max.

    numpy's rules: ``axis=None`` scans the C-order flattened array; add/mul widen small
    integers (as np.cumsum/np.cumprod), min/max keep the dtype; NaN propagates unless
    ``skipna`` (then NaN counts as the op's identity: np.nancumsum, np.nancumprod); integer
    overflow wraps. Distributed: chunk totals -> carries -> one seeded pass per chunk.
    """
    op = core_ops.check_op(op)
    if not isinstance(skipna, bool):
        raise TypeError(f"skipna must be True or False, got {skipna!r}")
    if isinstance(x, Probe):  # planning: the checked step, nothing run
        out_dtype = core_ops.result_dtype(op, x.dtype, dtype)
        _check_exclusive(exclusive)
        return ScanStep(backends.scan, op, None if axis is None else checks.axis(axis, max(x.ndim, 1)), exclusive,
                        out_dtype, skipna and np.dtype(x.dtype).kind in "fc")
    x = checks.as_array(x)
    out_dtype = core_ops.result_dtype(op, x.dtype, dtype)
    _check_exclusive(exclusive)
    if axis is None:
        if checks.array_kind(x) == "xarray":
            raise ValueError("axis=None flattens; give an axis (or use a dim) for xarray inputs")
        x = x.reshape(-1) if checks.array_kind(x) == "dask" else x.ravel()
        ax = 0
    else:
        ax = checks.axis(axis, max(x.ndim, 1))

    skip = skipna and np.dtype(x.dtype).kind in "fc"

    def run(data):
        filled = nan_as_identity(data, op) if skip else data
        if checks.array_kind(data) == "dask":
            from ..graph.scan import scan as graph_scan

            step = ScanStep(backends.scan, op, ax, exclusive, out_dtype, skip)  # what dc.to_zarr hands the engine
            return graph_scan(filled, op, ax, exclusive, out_dtype,
                              made_of=(data, step) if axis is not None else None)
        return backends.scan(filled, op, ax, exclusive, out_dtype)

    return on_data(x, run)


def _check_exclusive(exclusive):
    if not isinstance(exclusive, bool):
        raise TypeError(f"exclusive must be True or False, got {exclusive!r}")


def scan_step(func, ndim: int, in_dtype, /, **params) -> ScanStep:
    """The ScanStep that ``func(x, **params)`` (scan, cumsum, ...) would run on an array of
    ``ndim`` and ``in_dtype``, every argument checked as in a real call."""
    return func(Probe.like(ndim, in_dtype), **params)


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
