"""The ``.distconv`` accessor on xarray DataArray and Dataset (registered when xarray is
imported: distconv/__init__.py).

Every op of the registry with a named form takes dimension names instead of axes and keeps
dims, coords, attrs and name (ops/named.py). Every per-dim argument (size, sigma, order, mode,
cval, origin, spacing, footprint) is read one way, by ops/per_dim.py: one value, a sequence in
the order the call names its dims, or {dim: value}; the dims a call does not name are left
alone. Dataset methods apply to each data variable that has the dims the call names and pass
the others through unchanged. This module imports only xarray: the
methods are attached from the registry when an accessor is first made, so registering it costs
nothing of dask's or the ops' imports.
"""

from __future__ import annotations

import functools

import xarray as xr


@xr.register_dataarray_accessor("distconv")
class DataArrayAccessor:
    def __init__(self, obj: xr.DataArray):
        self._obj = obj
        _attach_methods()


@xr.register_dataset_accessor("distconv")
class DatasetAccessor:
    """Dataset ops: each data variable having every named dim is transformed, others kept."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj
        _attach_methods()


def _array_method(func):
    @functools.wraps(func)
    def method(self, *args, **kwargs):
        return func(self._obj, *args, **kwargs)

    return method


def _dataset_method(func):
    from .ops import named

    @functools.wraps(func)
    def method(self, *args, **kwargs):
        return named.on_dataset(self._obj, func, *args, **kwargs)

    return method


def _to_zarr(self, path, *, overwrite=False, client=None):
    """Write to a new Zarr store through distconv's engine (ops/stores.py: dc.to_zarr)."""
    from .ops import stores

    return stores.to_zarr(self._obj, path, overwrite=overwrite, client=client)


@functools.cache
def _attach_methods():
    """Every named op of the registry as a method of both accessors (once, on first use)."""
    from .ops.registry import OPS

    for op in OPS.values():
        if op.named is not None:
            setattr(DataArrayAccessor, op.name, _array_method(op.named))
            setattr(DatasetAccessor, op.name, _dataset_method(op.named))


DataArrayAccessor.to_zarr = DatasetAccessor.to_zarr = _to_zarr
