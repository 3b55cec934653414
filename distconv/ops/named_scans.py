"""The prefix scans (scan, cumsum, cumprod, cummin, cummax) on an xarray DataArray along a
named dim, with xarray's ``skipna`` rule."""

from __future__ import annotations


from . import docs, scans
from .per_dim import axis_of


@docs.fill
def scan(obj, dim, op="add", exclusive=False, dtype=None, skipna=False):
    """Inclusive or exclusive prefix scan along a named dim.

    ``da.distconv.scan(dim, op)``: :func:`distconv.scan` along ``dim`` (numpy's dtype rules;
    on dask-backed data, chunk totals, their scan and one seeded pass per chunk).

    Parameters
    ----------
    dim : str
        The dim to scan along.
    op : {'add', 'mul', 'min', 'max'}, optional
        The operation. Default 'add'.
    exclusive : bool, optional
        False (default): element i holds the scan of elements 0..i; True: of 0..i-1.
    dtype : dtype, optional
        The result's dtype (default numpy's: add and mul widen small integers).
    skipna : bool, optional
        True: NaN counts as the op's identity. Default False: NaN propagates.

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        ``dim`` not a dim of the array, or an unknown ``op``.
    TypeError
        Data of a dtype distconv does not process (complex, float16, object, strings), or
        a ``dtype`` that cannot hold the result.

    See Also
    --------
    distconv.scan : On arrays, by axis.
    cumsum, cumprod, cummin, cummax

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.scan("x", exclusive=True).values.tolist()
    [[0, 0, 1, 3], [0, 4, 9, 15], [0, 8, 17, 27]]
    """
    return scans.scan(obj, op, axis_of(obj, dim), exclusive, dtype, skipna)


# cumsum and cumprod differ in a few words: one text
_NAMED_CUMULATIVE_DOC = """Cumulative ${noun} along a named dim, as DataArray.${name}.

    ``da.distconv.${name}(dim)``: :func:`distconv.${name}` along ``dim``, NaN skipped in float
    data by default, as xarray's${skipped}.

    Parameters
    ----------
    dim : str
        The dim to ${verb} along.
    dtype : dtype, optional
        The result's dtype (default numpy's: small integers widen).
    skipna : bool, optional
        Skip NaN (default: True for float data, as xarray's); False propagates it.

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        ``dim`` not a dim of the array.
    TypeError
        Data of a dtype distconv does not process (complex, float16, object, strings).

    See Also
    --------
    distconv.${name} : On arrays, by axis.
    xarray.DataArray.${name} : xarray's own.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_CUMULATIVE_DOC, name="cumsum", noun="sum", verb="sum", skipped=": a NaN position holds the "
           "running sum", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.cumsum("y").values.tolist()
    [[0, 1, 2, 3], [4, 6, 8, 10], [12, 15, 18, 21]]
    >>> f = xr.DataArray([1.0, np.nan, 2.0], dims="t")
    >>> f.distconv.cumsum("t").values.tolist(), f.distconv.cumsum("t", skipna=False).values.tolist()
    ([1.0, 1.0, 3.0], [1.0, nan, nan])""")
def cumsum(obj, dim, dtype=None, skipna=None):
    return scan(obj, dim, "add", dtype=dtype, skipna=_skips(obj, skipna))


@docs.twin(_NAMED_CUMULATIVE_DOC, name="cumprod", noun="product", verb="multiply", skipped=" (it multiplies by 1)",
           examples="""\
    >>> da = xr.DataArray([[1, 2, 3], [4, 5, 6]], dims=("y", "x"))
    >>> da.distconv.cumprod("x").values.tolist()
    [[1, 2, 6], [4, 20, 120]]""")
def cumprod(obj, dim, dtype=None, skipna=None):
    return scan(obj, dim, "mul", dtype=dtype, skipna=_skips(obj, skipna))


def _skips(obj, skipna) -> bool:
    """xarray's default: skip NaN in float data."""
    return bool(obj.dtype.kind in "fc" if skipna is None else skipna)


_NAMED_CUMULATIVE_EXTREMUM_DOC = """Cumulative ${extreme} along a named dim.

    ``da.distconv.${name}(dim)``: :func:`distconv.${name}` along ``dim``; NaN propagates.

    Parameters
    ----------
    dim : str
        The dim to scan along.

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        ``dim`` not a dim of the array.
    TypeError
        Data of a dtype distconv does not process (complex, float16, object, strings).

    See Also
    --------
    distconv.${name} : On arrays, by axis.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_CUMULATIVE_EXTREMUM_DOC, name="cummin", extreme="minimum", Extreme="Minimum", examples="""\
    >>> xr.DataArray([3, 1, 2, 0], dims="t").distconv.cummin("t").values.tolist()
    [3, 1, 1, 0]""")
def cummin(obj, dim):
    return scan(obj, dim, "min")


@docs.twin(_NAMED_CUMULATIVE_EXTREMUM_DOC, name="cummax", extreme="maximum", Extreme="Maximum", examples="""\
    >>> xr.DataArray([1, 3, 2, 4], dims="t").distconv.cummax("t").values.tolist()
    [1, 3, 3, 4]""")
def cummax(obj, dim):
    return scan(obj, dim, "max")
