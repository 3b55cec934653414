"""derivative and laplace on an xarray DataArray by dim names: the spacing read from a dim's
coordinate (times included, in ``datetime_unit``) and the result's units worked out from it."""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import docs, stencils
from .per_dim import Dims


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
