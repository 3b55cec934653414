"""Reductions (add, mul, min, max) with numpy's dtype rules, distributed as tree reductions,
and the numpy-named wrappers sum, prod, min, max, mean."""

from __future__ import annotations

from functools import partial

import numpy as np

from .. import backends
from ..core import checks
from ..core import ops as core_ops
from . import docs


@docs.fill
def reduce(x, op="add", axis=None, dtype=None, keepdims=False):
    """Reduce an array by a sum, product, minimum or maximum, as numpy's ufunc.reduce.

    numpy's dtype rules (add and mul widen small integers as ``np.sum`` and ``np.prod`` do;
    min and max keep the dtype), NaN propagating. On a dask array each chunk is reduced and
    the partial results merge as a tree: integer results are exact and the same for every
    chunking.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    op : {'add', 'mul', 'min', 'max'}, optional
        The operation. Default 'add'.
    {reduce_axis}
    dtype : dtype, optional
        The result's dtype (default numpy's).
    {keepdims}

    Returns
    -------
    {returns_reduced}

    Raises
    ------
    ValueError
        An unknown ``op``, or an ``axis`` out of range or repeated.
    {raises_reduce_type}

    See Also
    --------
    sum, prod, min, max, mean : The numpy-named forms.
    scan : The running (prefix) form.

    Examples
    --------
    >>> dc.reduce(np.array([[1, 2], [3, 4]]), "mul", axis=1).tolist()
    [2, 12]
    >>> int(dc.reduce(np.array([[1, 2], [3, 4]])))
    10
    """
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


@docs.fill
def sum(x, axis=None, dtype=None, keepdims=False):  # noqa: A001 - numpy's name
    """Sum of array elements over the given axes, as numpy.sum.

    ``reduce(x, "add", axis, dtype, keepdims)``: small integers widen as numpy's do.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {reduce_axis}
    dtype : dtype, optional
        The result's dtype (default numpy's).
    {keepdims}

    Returns
    -------
    {returns_reduced}

    Raises
    ------
    ValueError
        An ``axis`` out of range or repeated.
    {raises_reduce_type}

    See Also
    --------
    reduce, mean, cumsum
    numpy.sum : The reference on numpy arrays.

    Examples
    --------
    >>> dc.sum(np.array([[1, 2], [3, 4]]), axis=0).tolist()
    [4, 6]
    >>> int(dc.sum(np.array([[1, 2], [3, 4]])))
    10
    >>> dc.sum(np.array([[1, 2], [3, 4]]), axis=1, keepdims=True).tolist()
    [[3], [7]]
    """
    return reduce(x, "add", axis, dtype, keepdims)


@docs.fill
def prod(x, axis=None, dtype=None, keepdims=False):
    """Product of array elements over the given axes, as numpy.prod.

    ``reduce(x, "mul", axis, dtype, keepdims)``: small integers widen as numpy's do, integer
    overflow wraps.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {reduce_axis}
    dtype : dtype, optional
        The result's dtype (default numpy's).
    {keepdims}

    Returns
    -------
    {returns_reduced}

    Raises
    ------
    ValueError
        An ``axis`` out of range or repeated.
    {raises_reduce_type}

    See Also
    --------
    reduce, cumprod
    numpy.prod : The reference on numpy arrays.

    Examples
    --------
    >>> int(dc.prod(np.array([1, 2, 3, 4])))
    24
    """
    return reduce(x, "mul", axis, dtype, keepdims)


@docs.fill
def min(x, axis=None, keepdims=False):  # noqa: A001
    """Minimum of array elements over the given axes, as numpy.min.

    ``reduce(x, "min", axis, keepdims=keepdims)``: the dtype is kept, NaN propagates.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {reduce_axis}
    {keepdims}

    Returns
    -------
    {returns_reduced}

    Raises
    ------
    ValueError
        An ``axis`` out of range or repeated.
    {raises_reduce_type}

    See Also
    --------
    max, reduce, cummin
    numpy.min : The reference on numpy arrays.

    Examples
    --------
    >>> dc.min(np.array([[1, 2], [3, 0]]), axis=1).tolist()
    [1, 0]
    >>> float(dc.min(np.array([1.0, np.nan])))
    nan
    """
    return reduce(x, "min", axis, None, keepdims)


@docs.fill
def max(x, axis=None, keepdims=False):  # noqa: A001
    """Maximum of array elements over the given axes, as numpy.max.

    ``reduce(x, "max", axis, keepdims=keepdims)``: the dtype is kept, NaN propagates.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {reduce_axis}
    {keepdims}

    Returns
    -------
    {returns_reduced}

    Raises
    ------
    ValueError
        An ``axis`` out of range or repeated.
    {raises_reduce_type}

    See Also
    --------
    min, reduce, cummax
    numpy.max : The reference on numpy arrays.

    Examples
    --------
    >>> dc.max(np.array([[1, 2], [3, 0]]), axis=0).tolist()
    [3, 2]
    >>> int(dc.max(np.array([[1, 2], [3, 0]])))
    3
    """
    return reduce(x, "max", axis, None, keepdims)


@docs.fill
def mean(x, axis=None, keepdims=False):
    """Arithmetic mean over the given axes, as numpy.mean.

    The sum divided by the count: integers accumulate in float64, floats in their own type
    (so float32 data gives float32, as numpy's). NaN propagates.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {reduce_axis}
    {keepdims}

    Returns
    -------
    {returns_reduced}

    Raises
    ------
    ValueError
        An ``axis`` out of range or repeated.
    {raises_reduce_type}

    See Also
    --------
    sum, reduce
    numpy.mean : The reference on numpy arrays.

    Examples
    --------
    >>> float(dc.mean(np.array([1, 2, 3, 4])))
    2.5
    >>> dc.mean(np.array([[1.0, 2], [3, 4]]), axis=0).tolist()
    [2.0, 3.0]
    """
    x = checks.as_array(x)
    acc = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    count = int(np.prod([x.shape[a] for a in checks.axes(axis, x.ndim)], dtype=np.int64))
    return reduce(x, "add", axis, acc, keepdims) / count
