"""Prefix scans (add, mul, min, max; inclusive or exclusive) with numpy's dtype rules, and the
numpy-named wrappers. Distributed: chunk totals -> a chain of tiny carries -> one seeded scan
pass per chunk (graph.scan)."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..core import checks
from ..core import ops as core_ops
from ..core.arrays import on_data
from ..core.planned import NotPlannable, Planned
from ..core.stencil import ScanStep, nan_as_identity
from . import docs


@docs.fill
def scan(x, op="add", axis=None, exclusive=False, dtype=None, skipna=False):
    """Inclusive or exclusive prefix scan (cumulative sum, product, minimum or maximum).

    numpy's rules: ``axis=None`` scans the C-order flattened array; add and mul widen small
    integers as ``np.cumsum`` and ``np.cumprod`` do, min and max keep the dtype; NaN
    propagates unless ``skipna``; integer overflow wraps. On a dask array the scan runs as
    chunk totals, a scan of those (tiny), then one seeded pass per chunk: the numbers are the
    same for every chunking (exactly so for integers, min and max).

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    op : {'add', 'mul', 'min', 'max'}, optional
        The operation. Default 'add'.
    axis : int, optional
        The axis to scan along; None (default) scans the flattened array (not for xarray).
    exclusive : bool, optional
        False (default): element i holds the scan of elements 0..i. True: of 0..i-1, the first
        holding the op's identity (0 for add, 1 for mul; for min the dtype's largest value,
        inf for floats, and for max its smallest).
    dtype : dtype, optional
        The result's dtype (default numpy's: add and mul widen small integers).
    skipna : bool, optional
        True: NaN counts as the op's identity (``np.nancumsum``, ``np.nancumprod``). Default
        False: NaN propagates.

    Returns
    -------
    {returns}
        Of the input's shape (flattened for ``axis=None``).

    Raises
    ------
    ValueError
        An unknown ``op``, an ``axis`` out of range, or ``axis=None`` for an xarray input.
    TypeError
        ``x`` of a dtype distconv does not process (complex, float16, object, strings), a
        ``dtype`` that cannot hold the result, or ``exclusive``/``skipna`` not a bool.

    See Also
    --------
    cumsum, cumprod, cummin, cummax : The numpy-named forms.
    numpy.ufunc.accumulate : numpy's inclusive scans.

    Examples
    --------
    >>> dc.scan(np.array([1, 2, 3, 4])).tolist()
    [1, 3, 6, 10]
    >>> dc.scan(np.array([1, 2, 3, 4]), exclusive=True).tolist()
    [0, 1, 3, 6]
    >>> dc.scan(np.array([[1, 2], [3, 4]]), "mul", axis=1).tolist()
    [[1, 2], [3, 12]]
    >>> dc.scan(np.array([1.0, np.nan, 2.0]), skipna=True).tolist()
    [1.0, 1.0, 3.0]
    >>> dc.scan(np.array([1, 2], dtype=np.int8)).dtype
    dtype('int64')
    """
    op = core_ops.check_op(op)
    if not isinstance(skipna, bool):
        raise TypeError(f"skipna must be True or False, got {skipna!r}")
    x = checks.as_array(x)
    out_dtype = core_ops.result_dtype(op, x.dtype, dtype)
    _check_exclusive(exclusive)
    if axis is None:
        if checks.array_kind(x) == "xarray":
            raise ValueError("axis=None flattens; give an axis (or use a dim) for xarray inputs")
        if checks.array_kind(x) == "planned":
            raise NotPlannable("a scan of the flattened array")
        x = x.reshape(-1) if checks.array_kind(x) == "dask" else x.ravel()
        ax = 0
    else:
        ax = checks.axis(axis, max(x.ndim, 1))

    skip = skipna and np.dtype(x.dtype).kind in "fc"

    def run(data):
        if checks.array_kind(data) == "planned":  # the step the engine runs, as dask's layer declares it
            return Planned(data.shape, out_dtype, data, ScanStep(backends.scan, op, ax, exclusive, out_dtype, skip))
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


@docs.fill
def cumsum(x, axis=None, dtype=None):
    """Cumulative sum, as numpy.cumsum.

    ``scan(x, "add", axis, dtype=dtype)``: small integers widen as numpy's do, NaN propagates.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    axis : int, optional
        The axis to sum along; None (default) sums the flattened array.
    dtype : dtype, optional
        The result's dtype (default numpy's).

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        An ``axis`` out of range, or ``axis=None`` for an xarray input.
    TypeError
        ``x`` of a dtype distconv does not process (complex, float16, object, strings), a
        ``dtype`` that cannot hold the result, or a non-integer ``axis``.

    See Also
    --------
    scan : Any op, exclusive scans, skipna.
    numpy.cumsum : The reference on numpy arrays.

    Examples
    --------
    >>> dc.cumsum(np.array([[1, 2], [3, 4]])).tolist()
    [1, 3, 6, 10]
    >>> dc.cumsum(np.array([[1, 2], [3, 4]]), axis=0).tolist()
    [[1, 2], [4, 6]]
    """
    return scan(x, "add", axis, False, dtype)


@docs.fill
def cumprod(x, axis=None, dtype=None):
    """Cumulative product, as numpy.cumprod.

    ``scan(x, "mul", axis, dtype=dtype)``: small integers widen as numpy's do, integer
    overflow wraps, NaN propagates.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    axis : int, optional
        The axis to multiply along; None (default) the flattened array.
    dtype : dtype, optional
        The result's dtype (default numpy's).

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        An ``axis`` out of range, or ``axis=None`` for an xarray input.
    TypeError
        ``x`` of a dtype distconv does not process (complex, float16, object, strings), a
        ``dtype`` that cannot hold the result, or a non-integer ``axis``.

    See Also
    --------
    scan : Any op, exclusive scans, skipna.
    numpy.cumprod : The reference on numpy arrays.

    Examples
    --------
    >>> dc.cumprod(np.array([1, 2, 3, 4])).tolist()
    [1, 2, 6, 24]
    """
    return scan(x, "mul", axis, False, dtype)


_CUMULATIVE_EXTREMUM_DOC = """Cumulative ${extreme}, as numpy.${extreme}.accumulate.

    ``scan(x, ${op}, axis, dtype=dtype)``; unlike ``numpy.${extreme}.accumulate``, ``axis=None``
    scans the flattened array. NaN propagates.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    axis : int, optional
        The axis to scan along; None (default) the flattened array.
    dtype : dtype, optional
        The result's dtype (default: the input's).

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        An ``axis`` out of range, or ``axis=None`` for an xarray input.
    TypeError
        ``x`` of a dtype distconv does not process (complex, float16, object, strings), a
        ``dtype`` that cannot hold the result, or a non-integer ``axis``.

    See Also
    --------
    ${see_also}
    numpy.${extreme}.accumulate : The reference on numpy arrays.

    Examples
    --------
$examples
    """


@docs.twin(_CUMULATIVE_EXTREMUM_DOC, see_also="scan, cummax", op='"min"', name="cummin", extreme="minimum",
           Extreme="Minimum", examples="""\
    >>> dc.cummin(np.array([3, 1, 2, 0])).tolist()
    [3, 1, 1, 0]""")
def cummin(x, axis=None, dtype=None):
    return scan(x, "min", axis, False, dtype)


@docs.twin(_CUMULATIVE_EXTREMUM_DOC, see_also="scan, cummin", op='"max"', name="cummax", extreme="maximum",
           Extreme="Maximum", examples="""\
    >>> dc.cummax(np.array([[1, 3], [2, 4]]), axis=1).tolist()
    [[1, 3], [2, 4]]
    >>> dc.cummax(np.array([1, 3, 2, 4])).tolist()
    [1, 3, 3, 4]""")
def cummax(x, axis=None, dtype=None):
    return scan(x, "max", axis, False, dtype)
