"""The ``.distconv`` accessor on xarray DataArray and Dataset (registered when it is first
looked up, or when this module is imported: distconv/__init__.py).

Every op of the registry with a named form takes dimension names instead of axes and keeps
dims, coords, attrs and name (ops/named.py). Every per-dim argument (size, sigma, order, mode,
cval, origin, spacing, footprint) is read one way, by ops/per_dim.py: one value, a sequence in
the order the call names its dims, or {dim: value}; the dims a call does not name are left
alone. Dataset methods apply to each data variable that has the dims the call names and pass
the others through unchanged. The methods are made from the registry as the classes are
defined, so ``help()``, ``dir()`` and tab completion see them before first use.
"""

from __future__ import annotations

import functools

import xarray as xr

from .ops import named
from .ops.registry import OPS


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


def _to_zarr(self, path, *, overwrite=False, client=None, progress=False, chunks=None):
    """Write the DataArray or Dataset to a new Zarr store, through distconv's engine.

    ``da.distconv.to_zarr(path)`` is ``dc.to_zarr(da, path)``: a lazy result of distconv
    stencils (and a final scan) over data read whole from Zarr (``xr.open_zarr``) runs on the
    engine, one task per block from read to write; anything else is written by dask. The
    store is a Zarr v3 dataset with the coordinates and attrs, which ``xr.open_zarr`` reads;
    float variables fill with NaN and carry xarray's ``_FillValue``, as xarray writes them.

    The layout: variables with the same dims (and shape) are stored alike. Their chunks are
    the first such variable's dask chunks, as ``Dataset.to_zarr`` would store them (a numpy
    variable: one chunk), or ``chunks[dim]`` where given. Where none of them runs on the
    engine, that is all: unsharded chunks, as xarray writes. Where one does, every one of
    them is sharded as the engine writes: one shard per such chunk, and inner chunks (the
    chunks a reader decodes, ``encoding["chunks"]``) halved along the dims a distconv filter
    of theirs reads a halo along, longest first, until an inner chunk is about 1 MiB; along
    the other dims the chunks are kept (halved only beyond 16 MiB, and never along a dim
    ``chunks`` names). Dims not filtered so keep the input's chunking in the shards and in
    the inner chunks alike.

    Parameters
    ----------
    path : str or os.PathLike
        The new store: a local folder or a URL that fsspec knows (``s3://...``).
    overwrite : bool, optional
        Replace a store distconv wrote there; anything else there is never deleted.
    client : distributed.Client, optional
        The cluster to run on (default: the current client, if any; else dask's threads).
    progress : bool, optional
        Show the blocks finishing while it runs (a bar on a terminal, else a line every few
        seconds). Default False.
    chunks : dict, optional
        ``{dim: size}``: the stored chunks (and shards) along those dims, in place of the
        input's; the other dims follow the rule above.

    Returns
    -------
    report : dict
        ``{"path": "engine" | "general", "why": reason or None, "tasks": n, "seconds": s}``;
        from a Dataset, one such dict per data variable.

    Raises
    ------
    OutputError
        (a ValueError) ``path`` is, holds or lies inside a Zarr store the data reads, holds
        something distconv did not write, or a finished output without ``overwrite=True``;
        nothing is touched then.
    ValueError
        ``chunks`` not ``{dim: positive size}`` for dims of the data.

    See Also
    --------
    distconv.to_zarr : The same for any array.
    xarray.Dataset.to_zarr : xarray's writer, whose chunks these are.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(6).reshape(2, 3), dims=("y", "x"), name="t")
    >>> da.distconv.to_zarr("t.zarr")["path"]
    'general'
    >>> xr.open_zarr("t.zarr")["t"].values.tolist()
    [[0, 1, 2], [3, 4, 5]]
    >>> ds = xr.Dataset({"t": (("y", "x"), np.zeros((4, 6)))}).chunk({"y": 2})
    >>> ds.distconv.to_zarr("c.zarr", chunks={"x": 3})["t"]["path"]
    'general'
    >>> xr.open_zarr("c.zarr")["t"].encoding["chunks"]
    (2, 3)
    """
    from .ops import stores

    return stores.to_zarr(self._obj, path, overwrite=overwrite, client=client, progress=progress, chunks=chunks)


def _with_ops(wrap):
    """A class decorator: every named op of the registry as a method (made by ``wrap``), and
    ``to_zarr``."""

    def define(cls):
        for op in OPS.values():
            if op.named is not None:
                setattr(cls, op.name, wrap(op.named))
        cls.to_zarr = _to_zarr
        return cls

    return define


for _cls in (xr.DataArray, xr.Dataset):  # distconv/__init__'s stand-in makes way for the accessor
    if getattr(vars(_cls).get("distconv"), "stand_in", False):
        delattr(_cls, "distconv")


@xr.register_dataarray_accessor("distconv")
@_with_ops(_array_method)
class DataArrayAccessor:
    """``da.distconv``: distconv's ops on a DataArray by dim names (dims, coords, attrs and
    name kept; lazy on dask-backed data, on the GPU for cupy-backed data)."""

    def __init__(self, obj: xr.DataArray):
        self._obj = obj


@xr.register_dataset_accessor("distconv")
@_with_ops(_dataset_method)
class DatasetAccessor:
    """Dataset ops: each data variable having every named dim is transformed, others kept."""

    def __init__(self, obj: xr.Dataset):
        self._obj = obj
