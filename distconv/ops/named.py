"""Every op on an xarray DataArray by dimension names instead of axes: dims, coords, attrs and
name kept; lazy on dask-backed data, on the GPU for cupy-backed data. The accessors
(distconv/xarray.py) and workflow steps on datasets call these through the registry; each
family's module (named_filters, named_edges, named_rank, named_stencils, named_scans,
named_histogram) holds its own, and ``on_dataset`` runs any of them on a Dataset."""

from __future__ import annotations

import xarray as xr

from .named_edges import gaussian_gradient_magnitude, gaussian_laplace, prewitt, sobel
from .named_filters import (
    convolve, convolve1d, correlate, correlate1d, gaussian_filter, gaussian_filter1d, uniform_filter,
    uniform_filter1d,
)
from .named_histogram import histogram
from .named_rank import (
    maximum_filter, maximum_filter1d, median_filter, minimum_filter, minimum_filter1d, percentile_filter,
    rank_filter,
)
from .named_scans import cummax, cummin, cumprod, cumsum, scan
from .named_stencils import derivative, laplace
from .per_dim import ARGUMENTS

__all__ = ["convolve", "convolve1d", "correlate", "correlate1d", "cummax", "cummin", "cumprod", "cumsum",
           "derivative", "gaussian_filter", "gaussian_filter1d", "gaussian_gradient_magnitude",
           "gaussian_laplace", "histogram", "laplace", "maximum_filter", "maximum_filter1d", "median_filter",
           "minimum_filter", "minimum_filter1d", "on_dataset", "percentile_filter", "prewitt", "rank_filter",
           "scan", "sobel", "uniform_filter", "uniform_filter1d"]


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
