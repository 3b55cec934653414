"""numpy-named wrappers (cumsum, sum, min, ...) over :func:`distconv.api.scan` and
:func:`distconv.api.reduce`; kept apart so api.py never shadows Python's builtins."""

from __future__ import annotations

import numpy as np

from . import checks
from .api import _axes, reduce, scan


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
    count = int(np.prod([x.shape[a] for a in _axes(axis, x.ndim)], dtype=np.int64))
    return reduce(x, "add", axis, acc, keepdims) / count
