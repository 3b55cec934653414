"""Every op on an xarray DataArray by dimension names instead of axes: dims, coords, attrs and
name kept; lazy on dask-backed data, on the GPU for cupy-backed data. The accessors
(distconv/xarray.py) and workflow steps on datasets call these through the registry."""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import histograms, scans, stencils
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


def derivative(obj, dim, order=1, accuracy=2, spacing=None, mode="nearest", datetime_unit=None):
    """d^order/d dim^order; spacing from the coordinate unless given (a time coordinate in
    ``datetime_unit``, seconds by default); integer data gives floats. ``spacing``, ``mode``:
    one value, or {dim: value}."""
    one = Dims.given(obj, (dim,), "dim")
    mode = one.one_mode(mode, fill="nearest")
    h = one.one(spacing, "spacing")
    h = h if h is not None else _spacing(obj, dim, accuracy, order, datetime_unit)
    if h is None:  # non-uniform coordinate: numpy.gradient's scheme (one-sided at the edges)
        time = _is_time(np.asarray(obj[dim].values))
        out = obj.astype(np.float64) if obj.dtype.kind in "biu" else obj
        out = out.differentiate(dim, datetime_unit=_time_unit(datetime_unit)) if time else out.differentiate(dim)
        out.encoding = {}
        return _with_units(out, obj, {dim: 1}, datetime_unit)
    out = stencils.derivative(obj, one.axes[0], order, accuracy, h, mode)
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


def laplace(obj, dims=None, accuracy=2, spacing=None, mode="nearest", datetime_unit=None):
    """Laplacian over ``dims`` (default: all), spacings from the coordinates unless given.
    ``spacing`` and ``mode``: one value, a list with one per entry of ``dims``, or
    {dim: value}; dims with their own modes (a periodic longitude, a bounded latitude) run
    as a sum of second derivatives."""
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


def scan(obj, dim, op="add", exclusive=False, dtype=None, skipna=False):
    return scans.scan(obj, op, axis_of(obj, dim), exclusive, dtype, skipna)


def cumsum(obj, dim, dtype=None, skipna=None):
    """Cumulative sum along ``dim``; ``skipna`` (default: for float data) as
    DataArray.cumsum: NaN adds nothing (a NaN position holds the running sum)."""
    return scan(obj, dim, "add", dtype=dtype, skipna=_skips(obj, skipna))


def cumprod(obj, dim, dtype=None, skipna=None):
    """Cumulative product along ``dim``; ``skipna`` as DataArray.cumprod (NaN multiplies by 1)."""
    return scan(obj, dim, "mul", dtype=dtype, skipna=_skips(obj, skipna))


def _skips(obj, skipna) -> bool:
    """xarray's default: skip NaN in float data."""
    return bool(obj.dtype.kind in "fc" if skipna is None else skipna)


def cummin(obj, dim):
    return scan(obj, dim, "min")


def cummax(obj, dim):
    return scan(obj, dim, "max")


def histogram(obj, bins=10, range=None, weights=None, density=False, dims=None):  # noqa: A002
    """Histogram over ``dims`` (default: all) -> DataArray on dim 'bin' (plus the other
    dims), with bin centres and edges as coordinates. ``weights``: an array of the data's
    shape, or a DataArray that broadcasts against it (cos(lat) weights over lat alone). One set
    of edges serves every slice; per-slice counts are one task per chunk and a tree merge."""
    along = Dims.every_dim(obj) if dims is None else Dims.given(obj, dims)
    w = weights
    if isinstance(weights, xr.DataArray):
        w = weights.broadcast_like(obj).transpose(*obj.dims).data
    if along.dims == along.every:
        counts, edges = histograms.histogram(obj.data, bins, range, w, density)
        return _hist_array(counts, edges, obj)
    keep = [d for d in obj.dims if d not in along.named]
    counts, edges = histograms.histogram_along(obj.data, list(along.axes), bins, range, w, density)
    out = xr.DataArray(counts, dims=(*keep, "bin"), coords={d: obj[d] for d in keep if d in obj.coords},
                       name=f"{obj.name}_histogram" if obj.name else "histogram", attrs=_count_attrs(obj))
    return _with_bin_coords(out, edges)


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
