"""The ``.distconv`` accessor on xarray DataArray and Dataset (registered on import).

Every op of the registry with a named form takes dimension names instead of axes and keeps
dims, coords, attrs and name (ops/named.py). Dataset methods apply to each data variable that
has the dims and pass the others through unchanged.
"""

from __future__ import annotations

import functools

import xarray as xr

from .ops import named, stores
from .ops.registry import OPS


@xr.register_dataarray_accessor("distconv")
class DataArrayAccessor:
    def __init__(self, obj: xr.DataArray):
        self._obj = obj


@xr.register_dataset_accessor("distconv")
class DatasetAccessor:
    """Dataset ops: each data variable having every named dim is transformed, others kept."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj


def _array_method(func):
    @functools.wraps(func)
    def method(self, *args, **kwargs):
        return func(self._obj, *args, **kwargs)

    return method


def _dataset_method(func):
    @functools.wraps(func)
    def method(self, *args, **kwargs):
        return named.on_dataset(self._obj, func, *args, **kwargs)

    return method


def _to_zarr(self, path, *, overwrite=False, client=None):
    """Write to a new Zarr store through distconv's engine (ops/stores.py: dc.to_zarr)."""
    return stores.to_zarr(self._obj, path, overwrite=overwrite, client=client)


DataArrayAccessor.to_zarr = DatasetAccessor.to_zarr = _to_zarr

for _op in OPS.values():
    if _op.named is not None:
        setattr(DataArrayAccessor, _op.name, _array_method(_op.named))
        setattr(DatasetAccessor, _op.name, _dataset_method(_op.named))
