"""Every op on an xarray DataArray by dimension names instead of axes: dims, coords, attrs and
name kept; lazy on dask-backed data, on the GPU for cupy-backed data. The accessors
(distconv/xarray.py) and workflow steps on datasets call these through the registry."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core import checks
from . import docs, histograms, scans, stencils
from .named_filters import (  # noqa: F401 - the filters by dim names, listed with the other ops
    correlate, convolve, correlate1d, convolve1d, gaussian_filter, gaussian_filter1d,
    uniform_filter, uniform_filter1d, sobel, prewitt, gaussian_laplace, gaussian_gradient_magnitude,
    minimum_filter, maximum_filter, median_filter, rank_filter, percentile_filter, minimum_filter1d,
    maximum_filter1d,
)
from .per_dim import ARGUMENTS, Dims, axis_of


DATETIME_UNITS = ("W", "D", "h", "m", "s", "ms", "us", "ns")


def _coordinate(da: xr.DataArray, dim: str, datetime_unit=None) -> np.ndarray:
    """The coordinate of ``dim`` as float64; datetime64 (any storage unit) and cftime
    coordinates as time since the first in ``datetime_unit`` (seconds by default), as
    DataArray.differentiate takes them."""
    if dim not in da.coords:
        raise ValueError(f"dimension {dim!r} has no coordinate to take the spacing from; pass spacing")
    c = np.asarray(da[dim].values)
    if not _is_time(c):
        return c.astype(np.float64)
    unit = _time_unit(datetime_unit)
    if c.dtype.kind == "M":
        return (c - c[0]) / np.timedelta64(1, unit)
    seconds = np.array([(t - c[0]).total_seconds() for t in c])  # cftime: datetime.timedelta
    return seconds / (np.timedelta64(1, unit) / np.timedelta64(1, "s"))


def _is_time(c: np.ndarray) -> bool:
    return c.dtype.kind == "M" or (c.dtype == object and c.size > 0 and hasattr(c.flat[0], "calendar"))


def _time_unit(datetime_unit) -> str:
    unit = "s" if datetime_unit is None else datetime_unit
    if unit not in DATETIME_UNITS:
        raise ValueError(f"datetime_unit must be one of {', '.join(DATETIME_UNITS)}, got {datetime_unit!r}")
    return unit


def _spacing(da: xr.DataArray, dim: str, accuracy: int, order: int, datetime_unit=None):
    """Uniform spacing from the coordinate (fast path), or None when it is non-uniform."""
    c = _coordinate(da, dim, datetime_unit)
    if c.size < 2:
        return 1.0
    d = np.diff(c)
    if not (np.all(d > 0) or np.all(d < 0)):
        raise ValueError(f"coordinate {dim!r} is not monotonic")
    if np.allclose(d, d[0], rtol=1e-9, atol=0):
        return float(d[0])
    if accuracy > 2 or order > 1:
        raise ValueError(f"coordinate {dim!r} is non-uniform: only order=1, accuracy=2 "
                         f"(numpy.gradient's second-order differences) are available, got "
                         f"order={order}, accuracy={accuracy}")
    return None


@docs.fill
def derivative(obj, dim, order=1, accuracy=2, spacing=None, mode="nearest", datetime_unit=None, edge_order=None):
    """Derivative along a named dim by central finite differences, spacing from its coordinate.

    ``da.distconv.derivative(dim)``: :func:`distconv.derivative` along ``dim``, the grid step
    taken from ``dim``'s coordinate unless ``spacing`` is given (a time coordinate counts in
    ``datetime_unit``). A non-uniform coordinate takes ``DataArray.differentiate``'s
    second-order scheme (order 1, accuracy 2 only). The units attribute becomes the data's
    over the coordinate's (``K / m``), or is dropped where a unit is unknown; integer data
    gives float64.

    Parameters
    ----------
    dim : str
        The dim to differentiate along.
    order : int, optional
        The derivative's order, 1 or more. Default 1.
    accuracy : int, optional
        The order of the error, an even integer from 2. Default 2.
    spacing : float or dict {dim: float}, optional
        The grid step; None (default) takes it from the coordinate of ``dim``.
    mode : str or dict {dim: str}, optional
        The boundary mode. Default 'nearest'.
        {mode_names}
    datetime_unit : {'W', 'D', 'h', 'm', 's', 'ms', 'us', 'ns'}, optional
        The unit of a time coordinate's step. Default 's'.
    edge_order : {{1, 2}}, optional
        One-sided differences at the ends, as ``DataArray.differentiate(dim,
        edge_order=...)`` (order 1, accuracy 2). Default None: the central formula with
        ``mode`` beyond the ends (a non-uniform coordinate: edge_order 1).

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        ``dim`` not a dim of the array, no coordinate to take the spacing from, a
        coordinate that is not monotonic, a non-uniform coordinate with ``order`` or
        ``accuracy`` above what it allows, an unknown ``datetime_unit``, or any error of
        :func:`distconv.derivative`.

    See Also
    --------
    distconv.derivative : On arrays, by axis.
    xarray.DataArray.differentiate : Second-order differences, one-sided at the edges.

    Examples
    --------
    >>> x = xr.DataArray([0.0, 0.5, 1.0, 1.5, 2.0], dims="x", attrs={"units": "m"})
    >>> t = xr.DataArray([0.0, 1, 4, 9, 16], dims="x", coords={"x": x}, attrs={"units": "K"})
    >>> d = t.distconv.derivative("x")
    >>> d.values.tolist(), d.attrs["units"]
    ([1.0, 4.0, 8.0, 12.0, 7.0], 'K / m')
    """
    one = Dims.given(obj, (dim,), "dim")
    mode = one.one_mode(mode, fill="nearest")
    h = one.one(spacing, "spacing")
    h = h if h is not None else _spacing(obj, dim, accuracy, order, datetime_unit)
    if h is None:  # non-uniform coordinate: numpy.gradient's scheme (one-sided at the edges)
        time = _is_time(np.asarray(obj[dim].values))
        out = obj.astype(np.float64) if obj.dtype.kind in "biu" else obj
        ends = {"edge_order": edge_order or 1}
        out = (out.differentiate(dim, datetime_unit=_time_unit(datetime_unit), **ends) if time
               else out.differentiate(dim, **ends))
        out.encoding = {}
        return _with_units(out, obj, {dim: 1}, datetime_unit)
    out = stencils.derivative(obj, one.axes[0], order, accuracy, h, mode, edge_order=edge_order)
    return _with_units(out, obj, {dim: order}, datetime_unit)


def _coord_unit(obj, dim, datetime_unit=None):
    """The unit of ``dim``'s coordinate: its units attribute, or a time coordinate's
    datetime_unit (given spacing has no unit known here)."""
    if dim not in obj.coords:
        return None
    if _is_time(np.asarray(obj[dim].values)):
        return _time_unit(datetime_unit)
    return obj[dim].attrs.get("units")


def _with_units(out, obj, per: dict, datetime_unit=None, given_spacing=False):
    """A derivative's units: the data's over each coordinate's to its order; dropped where a
    unit is unknown (keeping the data's units would be wrong)."""
    attrs = dict(out.attrs)
    units = obj.attrs.get("units")
    coord_units = [_coord_unit(obj, d, datetime_unit) for d in per]
    attrs.pop("units", None)
    if units is not None and coord_units and all(coord_units) and not given_spacing:
        den = " ".join(f"{u}" if n == 1 else f"{u}^{n}" for u, n in zip(coord_units, per.values()))
        attrs["units"] = f"{units} / ({den})" if " " in den else f"{units} / {den}"
    out.attrs = attrs
    return out


@docs.fill
def laplace(obj, dims=None, accuracy=2, spacing=None, mode="nearest", datetime_unit=None):
    """Laplacian over named dims by central finite differences, spacings from their coordinates.

    ``da.distconv.laplace(dims)``: the sum over ``dims`` of second derivatives
    (:func:`distconv.laplace` over every dim when they share one mode, else a sum of
    :func:`distconv.derivative`), each dim's step taken from its coordinate unless
    ``spacing`` is given. Dims may have their own modes (a periodic longitude 'wrap', a
    bounded latitude 'nearest'). The units attribute becomes ``units / u^2`` when every dim's
    coordinate has the one unit u, else it is dropped.

    Parameters
    ----------
    dims : sequence of str, optional
        The dims to sum over (default: every dim).
    accuracy : int, optional
        The order of the error, an even integer from 2. Default 2.
    spacing : float, sequence of float or dict {dim: float}, optional
        The grid steps: one for every dim, one per entry of ``dims``, or ``{dim: step}``;
        None (default) takes each from its coordinate, which must be uniform.
    mode : str, sequence of str or dict {dim: str}, optional
        One mode for every dim, one per entry of ``dims``, or ``{dim: mode}``. Default
        'nearest'.
        {mode_names}
    datetime_unit : {'W', 'D', 'h', 'm', 's', 'ms', 'us', 'ns'}, optional
        The unit of a time coordinate's step. Default 's'.

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        A dim that is not one of the array's, no coordinate to take a spacing from, a
        non-uniform coordinate, or any error of :func:`distconv.laplace`.
    TypeError
        ``dims`` given as a string (write ``dims=["x"]``).

    See Also
    --------
    distconv.laplace : On arrays, by axes.
    derivative : One derivative along one dim.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4) ** 2, dims=("y", "x"))
    >>> da.distconv.laplace(["x"], spacing=1.0).values.tolist()[0]
    [1.0, 2.0, 2.0, -5.0]
    """
    if isinstance(dims, str):
        raise TypeError(f"dims must be a list of dimension names, got the string {dims!r}: write "
                        f"dims=[{dims!r}]")
    along = Dims.every_dim(obj) if dims is None else Dims.given(obj, dims)
    modes = along.modes(mode, fill="nearest")
    hs = along.values(spacing, "spacing")  # None: from the coordinate
    hs = [_spacing(obj, d, accuracy, 2, datetime_unit) if h is None else h for d, h in zip(along.dims, hs)]
    if any(h is None for h in hs):
        bad = [d for d, h in zip(along.dims, hs) if h is None]
        raise ValueError(f"coordinate {bad[0]!r} is non-uniform: laplace needs uniform spacing")
    if along.dims == along.every and len(set(modes)) == 1:  # one N-D star pass
        out = stencils.laplace(obj, accuracy, hs, modes[0])
    else:
        out = sum(stencils.derivative(obj, a, 2, accuracy, h, m) for a, h, m in zip(along.axes, hs, modes))
        out.attrs = dict(obj.attrs)
    return _laplace_units(out, obj, along.dims, datetime_unit, spacing is not None)


def _laplace_units(out, obj, dims, datetime_unit=None, given_spacing=False):
    """units / u^2 when every dim's coordinate has the one unit u; else no units."""
    units = {_coord_unit(obj, d, datetime_unit) for d in dims}
    if len(units) == 1 and None not in units:
        return _with_units(out, obj, {dims[0]: 2}, datetime_unit, given_spacing)
    out.attrs = {k: v for k, v in out.attrs.items() if k != "units"}
    return out


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


@docs.fill
def cumsum(obj, dim, dtype=None, skipna=None):
    """Cumulative sum along a named dim, as DataArray.cumsum.

    ``da.distconv.cumsum(dim)``: :func:`distconv.cumsum` along ``dim``, NaN skipped in float
    data by default, as xarray's: a NaN position holds the running sum.

    Parameters
    ----------
    dim : str
        The dim to sum along.
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
    distconv.cumsum : On arrays, by axis.
    xarray.DataArray.cumsum : xarray's own.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.cumsum("y").values.tolist()
    [[0, 1, 2, 3], [4, 6, 8, 10], [12, 15, 18, 21]]
    >>> f = xr.DataArray([1.0, np.nan, 2.0], dims="t")
    >>> f.distconv.cumsum("t").values.tolist(), f.distconv.cumsum("t", skipna=False).values.tolist()
    ([1.0, 1.0, 3.0], [1.0, nan, nan])
    """
    return scan(obj, dim, "add", dtype=dtype, skipna=_skips(obj, skipna))


@docs.fill
def cumprod(obj, dim, dtype=None, skipna=None):
    """Cumulative product along a named dim, as DataArray.cumprod.

    ``da.distconv.cumprod(dim)``: :func:`distconv.cumprod` along ``dim``, NaN skipped in float
    data by default, as xarray's (it multiplies by 1).

    Parameters
    ----------
    dim : str
        The dim to multiply along.
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
    distconv.cumprod : On arrays, by axis.
    xarray.DataArray.cumprod : xarray's own.

    Examples
    --------
    >>> da = xr.DataArray([[1, 2, 3], [4, 5, 6]], dims=("y", "x"))
    >>> da.distconv.cumprod("x").values.tolist()
    [[1, 2, 6], [4, 20, 120]]
    """
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


@docs.fill
def histogram(obj, bins=10, range=None, weights=None, density=False, dims=None):  # noqa: A002
    """Histogram over named dims, as numpy.histogram, as a DataArray on a 'bin' dim.

    ``da.distconv.histogram(bins)``: :func:`distconv.histogram` of the values along ``dims``
    (default: every dim), one histogram per slice along the other dims, all with one set of
    edges (``range``, or the whole data's minimum and maximum, NaN left out; data holding
    +inf or -inf then raise ValueError, as numpy's do). On dask-backed data the
    counts are one task per chunk and a tree merge.

    Parameters
    ----------
    bins : int or sequence of scalars, optional
        The number of equal bins (default 10), or the bin edges, increasing.
    range : (float, float), optional
        The lower and upper edge of the equal bins (default: the data's minimum and maximum,
        NaN left out, a first pass over the data).
    weights : array_like or xarray.DataArray, optional
        A weight per value: an array of the data's shape, or a DataArray that broadcasts
        against it (``cos(lat)`` over lat alone).
    density : bool, optional
        True: each histogram divided by its total and the bin widths. Default False.
    dims : sequence of str, optional
        The dims whose values are counted together (default: every dim).

    Returns
    -------
    hist : xarray.DataArray
        The counts on dim 'bin' after the dims not counted over, with coordinates ``bin``
        (the centres), ``bin_left`` and ``bin_right`` (the edges); named ``<name>_histogram``;
        the data's attrs but units, standard_name and long_name. On ``ds.distconv``, a
        Dataset of one such histogram per data variable having the named dims (the others
        unchanged).

    Raises
    ------
    ValueError
        A dim that is not one of the array's, or any error of :func:`distconv.histogram`.

    See Also
    --------
    distconv.histogram : On arrays.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"), name="t")
    >>> h = da.distconv.histogram(bins=3)
    >>> h.values.tolist(), h.dims, h.name
    ([4, 4, 4], ('bin',), 't_histogram')
    >>> h = da.distconv.histogram(bins=2, range=(0, 12), dims=["x"])
    >>> h.values.tolist(), h.dims, h.bin.values.tolist()
    ([[4, 0], [2, 2], [0, 4]], ('y', 'bin'), [3.0, 9.0])
    """
    along = Dims.every_dim(obj) if dims is None else Dims.given(obj, dims)
    w = _weights_like(histograms.check_weight_dims(weights, obj), obj) if isinstance(weights, xr.DataArray) \
        else weights
    if along.dims == along.every:
        counts, edges = histograms.histogram(obj.data, bins, range, w, density)
        return _hist_array(counts, edges, obj)
    keep = [d for d in obj.dims if d not in along.named]
    counts, edges = histograms.histogram_along(obj.data, list(along.axes), bins, range, w, density)
    out = xr.DataArray(counts, dims=(*keep, "bin"), coords={d: obj[d] for d in keep if d in obj.coords},
                       name=f"{obj.name}_histogram" if obj.name else "histogram", attrs=_count_attrs(obj))
    return _with_bin_coords(out, edges)


def _weights_like(weights: xr.DataArray, obj):
    """``weights`` broadcast against ``obj`` (broadcast_like), its data in ``obj``'s dim order;
    for dask-backed ``obj``, lazily in its chunks: no full-size copy is made, hashed and cut."""
    if checks.array_kind(obj.data) != "dask" or checks.array_kind(weights.data) == "dask":
        return weights.broadcast_like(obj).transpose(*obj.dims).data
    import dask.array as da

    new = [d for d in obj.dims if d not in weights.dims]
    small = weights.broadcast_like(obj, exclude=new).expand_dims(new).transpose(*obj.dims)
    chunks = tuple(c if n > 1 else (1,) for c, n in zip(obj.data.chunks, small.shape))
    return da.broadcast_to(da.from_array(small.data, chunks=chunks), obj.shape, chunks=obj.data.chunks)


def _count_attrs(obj) -> dict:
    """Counts are not in the data's units: those attributes do not carry over."""
    return {k: v for k, v in obj.attrs.items() if k not in ("units", "standard_name", "long_name")}


def _with_bin_coords(out, edges):
    return out.assign_coords(bin=0.5 * (edges[:-1] + edges[1:]), bin_left=("bin", edges[:-1]),
                             bin_right=("bin", edges[1:]))


def _hist_array(counts, edges, obj):
    out = xr.DataArray(counts, dims=("bin",), name=f"{obj.name}_histogram" if obj.name else "histogram",
                       attrs=_count_attrs(obj))
    return _with_bin_coords(out, edges)


def _dims_of_call(func, args, kwargs) -> list:
    """The dims a call names: dim, dims, the keys of its per-dim dicts and a footprint's
    dims; [] = every dim."""
    import inspect

    bound = inspect.signature(func).bind(None, *args, **kwargs).arguments
    named = [bound["dim"]] if "dim" in bound else []
    if bound.get("dims") is not None:
        named += [bound["dims"]] if isinstance(bound["dims"], str) else list(bound["dims"])
    for key in ARGUMENTS:
        value = bound.get(key)
        if isinstance(value, (dict, xr.DataArray)):
            named += list(value.dims if isinstance(value, xr.DataArray) else value)
    return list(dict.fromkeys(named))


def on_dataset(ds: xr.Dataset, func, *args, **kwargs) -> xr.Dataset:
    """``func`` (one of the functions above) on each data variable having every dim the call
    names; the other variables pass through unchanged."""
    dims = _dims_of_call(func, args, kwargs)
    for d in dims:
        if d not in ds.dims:
            raise ValueError(f"dim {d!r} is not a dimension of this dataset; dims are {tuple(ds.dims)}")
    out = {name: func(var, *args, **kwargs) if all(d in var.dims for d in dims) else var
           for name, var in ds.data_vars.items()}
    return ds.assign(out)
