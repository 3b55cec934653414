"""Zarr out, from Python and xarray, through the engine `distconv run` uses.

``dc.to_zarr(y, path)`` where ``y`` is distconv stencils (filters, derivatives, laplace, fused
as they were called), possibly then a scan along an axis, over an array read whole from a Zarr
store (``da.from_zarr`` or ``xr.open_zarr``; a folder or object storage reached by URL:
engine/location.py): the chain runs as the engine's blocks, one task per block from read to
write, named after the steps on the dashboard (engine.write, the pipeline `distconv run` runs
too), and the output is distconv's sharded Zarr v3, read by plain zarr-python and
``xr.open_zarr``. Anything else is written by dask, and the returned report says why."""

from __future__ import annotations

from ..core import checks
from ..engine import chain, ownership, storage
from ..engine.location import absolute, join


def to_zarr(x, path: str, *, overwrite: bool = False, client=None, progress: bool = False) -> dict:
    """Write ``x`` to a new Zarr store, through distconv's engine where it can take the work.

    A lazy result of distconv stencils (filters, derivatives, laplace, fused as they were
    called), possibly then a scan along an axis, over an array read whole from a Zarr store
    (``da.from_zarr``, ``xr.open_zarr``) runs on the engine that ``distconv run`` uses: one
    task per block from read to write, and the output is distconv's sharded Zarr v3, which
    plain zarr-python and ``xr.open_zarr`` read. Anything else is written by dask, and the
    returned report says why.

    Parameters
    ----------
    x : numpy.ndarray, cupy.ndarray, dask.array.Array, xarray.DataArray or xarray.Dataset
        What to write. A lazy result of distconv stencils (and a final scan) over a Zarr array
        read whole runs on the engine; anything else is written by dask.
    path : str or os.PathLike
        The new store: a local folder (relative to this process's folder) or a URL that fsspec
        knows (``s3://...``).
    overwrite : bool, optional
        Replace a store distconv wrote there; anything else there is never deleted.
    client : distributed.Client, optional
        The cluster to run on (default: the current client, if any; else dask's local threads).
    progress : bool, optional
        Show the blocks finishing while it runs: a bar on a terminal, a line every few seconds
        otherwise (GB done, GB/s, time left). Default False.

    Returns
    -------
    dict
        ``{"path": "engine" | "general", "why": reason or None, "tasks": n, "seconds": s}``;
        for a Dataset, one such dict per data variable.

    Raises
    ------
    OutputError
        (a ValueError) ``path`` holds something distconv did not write, or a finished output
        without ``overwrite=True``; nothing is touched then.

    See Also
    --------
    dask.array.to_zarr, xarray.Dataset.to_zarr : dask's and xarray's writers.

    Examples
    --------
    >>> dc.to_zarr(np.arange(12).reshape(3, 4), "in.zarr")["why"]
    'a numpy array, not a lazy one read from Zarr'
    >>> import dask.array as da
    >>> smooth = dc.uniform_filter(da.from_zarr("in.zarr"), 3)
    >>> dc.to_zarr(smooth, "smooth.zarr")["path"]
    'engine'
    >>> da.from_zarr("smooth.zarr").compute().tolist()
    [[1, 2, 3, 3], [4, 5, 6, 6], [6, 7, 8, 8]]
    """
    path = absolute(path)  # the workers' folder may be another's (a kept cluster started elsewhere)
    if checks.array_kind(x) == "xarray" and hasattr(x, "data_vars"):
        return _dataset(x, path, overwrite, client, progress)
    if checks.array_kind(x) == "xarray":
        return _dataset(x.to_dataset(name=x.name or "data"), path, overwrite, client, progress)[x.name or "data"]
    claim = _claim(path, overwrite)
    report = _array(x, path, client, claim, attrs={}, dims=None, progress=progress)
    ownership.mark_complete(path, {"by": "dc.to_zarr"}, claim)
    return report


def _claim(path: str, overwrite: bool) -> ownership.Claim:
    """The output made ours, its errors in this face's words (``path``, ``overwrite=True``)."""
    return ownership.claim(path, overwrite, key="path", words=ownership.PYTHON_WORDS)


def _dataset(ds, path: str, overwrite: bool, client, progress: bool = False) -> dict:
    """A Dataset as xr.open_zarr gives it back: coordinates, then each data variable."""
    claim = _claim(path, overwrite)
    names = [str(n) for n in ds.data_vars]
    ownership.record_entries(path, [*names, *map(str, ds.coords)])
    frame = ds.drop_vars(list(ds.data_vars))
    storage.write_dataset_frame(path, frame, dict(ds.attrs))
    report = {n: _array(ds[n].data, join(path, n), client, claim, dict(ds[n].attrs), list(map(str, ds[n].dims)),
                        progress)
              for n in names}
    storage.consolidate(path)
    ownership.mark_complete(path, {"by": "dc.to_zarr"}, claim)  # last: the whole dataset is there
    return report


def _array(data, path: str, client, claim: ownership.Claim, attrs: dict, dims, progress: bool = False) -> dict:
    """One array to ``path`` inside the output ``claim`` made ours: the engine's plan where it
    takes ``data``, else dask's writes."""
    import time

    from .. import engine  # the engine's blocks: imported when a write runs, not with distconv

    t0 = time.perf_counter()
    client = _client(client)
    plan = chain.plan_write(data, path, chain.gpu_blocks(client))
    if plan.job is None and checks.array_kind(data) != "dask":  # a numpy or cupy array: dask writes it whole
        import dask.array as da

        plan = chain.Plan(data=da.from_array(data, chunks=data.shape or ()), why=plan.why)
    try:
        shown = engine.Progress(label=f"distconv: {path}") if progress else None
        results = engine.write(plan, path, claim, client, attrs, dims, progress=shown)
    except ownership.Superseded as e:  # another run claimed the output meanwhile
        raise ownership.OutputError(str(e)) from None
    return {"path": "general" if plan.job is None else "engine", "why": plan.why,
            "tasks": None if plan.job is None else len(results[0]), "seconds": round(time.perf_counter() - t0, 3)}


def _client(client):
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):  # no running client: dask's local scheduler
        return None
