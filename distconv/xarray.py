"""The ``.distconv`` accessor on xarray DataArray and Dataset (registered on import).

Every op takes dimension names instead of axes and keeps dims, coords, attrs and name; it
stays lazy on dask-backed data and on the GPU for cupy-backed data. Dataset methods apply to
each data variable that has the dims and pass the others through unchanged.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import api, stencil
from . import histograms as hist_mod


def _axis(da: xr.DataArray, dim: str, name: str = "dim") -> int:
    if dim not in da.dims:
        raise ValueError(f"{name} {dim!r} is not a dimension of this array; dims are {da.dims}")
    return da.dims.index(dim)


def _spacing(da: xr.DataArray, dim: str, accuracy: int, order: int):
    """Uniform spacing from the coordinate (fast path), or None when it is non-uniform."""
    if dim not in da.coords:
        raise ValueError(f"dimension {dim!r} has no coordinate to take the spacing from; pass spacing")
    c = np.asarray(da[dim].values, dtype=np.float64)
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


@xr.register_dataarray_accessor("distconv")
class DataArrayAccessor:
    def __init__(self, obj: xr.DataArray):
        self._obj = obj

    def _full_mask(self, weights, dims):
        w = np.asarray(weights, dtype=np.float64)
        dims = list(dims)
        if w.ndim != len(dims):
            raise ValueError(f"weights have {w.ndim} dimensions but dims names {len(dims)}: {dims}")
        axes = [_axis(self._obj, d, "dims entry") for d in dims]
        order = np.argsort(axes)
        w = np.transpose(w, order)
        shape = [1] * self._obj.ndim
        for ax, k in zip(sorted(axes), w.shape):
            shape[ax] = k
        return w.reshape(shape), sorted(axes)

    def correlate(self, weights, dims, mode="reflect", cval=0.0):
        w, _ = self._full_mask(weights, dims)
        return api.correlate(self._obj, w, mode=mode, cval=cval)

    def convolve(self, weights, dims, mode="reflect", cval=0.0):
        w, _ = self._full_mask(weights, dims)
        return api.convolve(self._obj, w, mode=mode, cval=cval)

    def correlate1d(self, weights, dim, mode="reflect", cval=0.0, origin=0):
        return api.correlate1d(self._obj, weights, _axis(self._obj, dim), mode, cval, origin)

    def convolve1d(self, weights, dim, mode="reflect", cval=0.0, origin=0):
        return api.convolve1d(self._obj, weights, _axis(self._obj, dim), mode, cval, origin)

    def gaussian_filter(self, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0):
        """``sigma``: one value for every dim, or {dim: sigma} (other dims untouched)."""
        if isinstance(sigma, dict):
            for d in sigma:
                _axis(self._obj, d, "sigma key")
            sigma = [float(sigma.get(d, 0.0)) for d in self._obj.dims]
        if isinstance(order, dict):
            order = [int(order.get(d, 0)) for d in self._obj.dims]
        return api.gaussian_filter(self._obj, sigma, order, mode, cval, truncate)

    def derivative(self, dim, order=1, accuracy=2, spacing=None, mode="nearest"):
        """d^order/d dim^order; spacing from the coordinate unless given."""
        ax = _axis(self._obj, dim)
        h = spacing if spacing is not None else _spacing(self._obj, dim, accuracy, order)
        if h is None:  # non-uniform coordinate: numpy.gradient's scheme (one-sided at the edges)
            return self._obj.differentiate(dim)
        out = stencil.derivative(self._obj, ax, order, accuracy, h, mode)
        return out

    def laplace(self, dims=None, accuracy=2, spacing=None, mode="nearest"):
        """Laplacian over ``dims`` (default: all), spacings from the coordinates unless given."""
        dims = list(self._obj.dims if dims is None else dims)
        for d in dims:
            _axis(self._obj, d, "dims entry")
        if set(dims) != set(self._obj.dims):
            return sum(self.derivative(d, 2, accuracy, None if spacing is None else spacing, mode) for d in dims)
        hs = spacing if spacing is not None else [_spacing(self._obj, d, accuracy, 2) for d in dims]
        if np.ndim(hs) and dims != list(self._obj.dims):
            hs = [hs[dims.index(d)] for d in self._obj.dims]
        return stencil.laplace(self._obj, accuracy, hs, mode)

    def scan(self, dim, op="add", exclusive=False, dtype=None):
        return api.scan(self._obj, op, _axis(self._obj, dim), exclusive, dtype)

    def cumsum(self, dim, dtype=None):
        return self.scan(dim, "add", dtype=dtype)

    def cumprod(self, dim, dtype=None):
        return self.scan(dim, "mul", dtype=dtype)

    def cummin(self, dim):
        return self.scan(dim, "min")

    def cummax(self, dim):
        return self.scan(dim, "max")

    def histogram(self, bins=10, range=None, weights=None, density=False, dims=None):  # noqa: A002
        """Histogram over ``dims`` (default: all) -> DataArray on dim 'bin' (plus the other
        dims), with bin centres and edges as coordinates."""
        obj = self._obj
        dims = list(obj.dims if dims is None else dims)
        for d in dims:
            _axis(obj, d, "dims entry")
        w = None if weights is None else (weights.data if isinstance(weights, xr.DataArray) else weights)
        if set(dims) == set(obj.dims):
            counts, edges = hist_mod.histogram(obj.data, bins, range, w, density)
            return _hist_array(counts, edges, {}, obj)
        if range is None and np.ndim(bins) == 0:  # one set of edges for every slice
            _, edges = hist_mod.histogram(obj.data, bins, None)
            bins = edges
        keep = [d for d in obj.dims if d not in dims]
        stacked = obj.transpose(*keep, *dims).stack(_dc_keep=keep)
        parts = [hist_mod.histogram(stacked.isel(_dc_keep=i).data, bins, range, None, density)
                 for i in builtin_range(stacked.sizes["_dc_keep"])]
        import dask.array as dsa

        data = dsa.stack([dsa.asarray(p[0]) for p in parts]) if parts else None
        out = xr.DataArray(data, dims=("_dc_keep", "bin"), coords={"_dc_keep": stacked["_dc_keep"]})
        out = _with_bin_coords(out, parts[0][1]).unstack("_dc_keep")
        return out.transpose(*keep, "bin")


builtin_range = range


def _with_bin_coords(out, edges):
    return out.assign_coords(bin=0.5 * (edges[:-1] + edges[1:]), bin_left=("bin", edges[:-1]),
                             bin_right=("bin", edges[1:]))


def _hist_array(counts, edges, coords, obj):
    out = xr.DataArray(counts, dims=("bin",), name=f"{obj.name}_histogram" if obj.name else "histogram",
                       attrs=dict(obj.attrs))
    return _with_bin_coords(out, edges)


@xr.register_dataset_accessor("distconv")
class DatasetAccessor:
    """Dataset ops: each data variable having every named dim is transformed, others kept."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj

    def _map(self, method: str, dims, *args, **kwargs):
        dims = [dims] if isinstance(dims, str) else list(dims or [])
        for d in dims:
            if d not in self._obj.dims:
                raise ValueError(f"dim {d!r} is not a dimension of this dataset; dims are {tuple(self._obj.dims)}")
        out = {}
        for name, var in self._obj.data_vars.items():
            if all(d in var.dims for d in dims):
                out[name] = getattr(var.distconv, method)(*args, **kwargs)
            else:
                out[name] = var
        return self._obj.assign(out)

    def derivative(self, dim, order=1, accuracy=2, spacing=None, mode="nearest"):
        return self._map("derivative", dim, dim, order, accuracy, spacing, mode)

    def laplace(self, dims=None, accuracy=2, spacing=None, mode="nearest"):
        return self._map("laplace", dims, dims, accuracy, spacing, mode)

    def gaussian_filter(self, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0):
        dims = list(sigma) if isinstance(sigma, dict) else []
        return self._map("gaussian_filter", dims, sigma, order, mode, cval, truncate)

    def correlate(self, weights, dims, mode="reflect", cval=0.0):
        return self._map("correlate", dims, weights, dims, mode, cval)

    def convolve(self, weights, dims, mode="reflect", cval=0.0):
        return self._map("convolve", dims, weights, dims, mode, cval)

    def scan(self, dim, op="add", exclusive=False, dtype=None):
        return self._map("scan", dim, dim, op, exclusive, dtype)

    def cumsum(self, dim, dtype=None):
        return self._map("cumsum", dim, dim, dtype)

    def cumprod(self, dim, dtype=None):
        return self._map("cumprod", dim, dim, dtype)

    def cummin(self, dim):
        return self._map("cummin", dim, dim)

    def cummax(self, dim):
        return self._map("cummax", dim, dim)
