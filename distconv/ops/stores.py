"""Zarr out, from Python and xarray, through the engine `distconv run` uses.

``dc.to_zarr(y, path)`` where ``y`` is distconv stencils (filters, derivatives, laplace, fused
as they were called), possibly then a scan along an axis, over an array read whole from a Zarr
store (``da.from_zarr`` or ``xr.open_zarr``; a folder or object storage reached by URL: engine/location.py):
the chain runs as the engine's blocks (distconv/engine: one task per block from read to write, named after the steps on the dashboard; on GPU workers nvCOMP decodes and
encodes there), and the output is distconv's sharded Zarr v3, read by plain zarr-python and
``xr.open_zarr``. Anything else is written by dask, and the returned report says why."""

from __future__ import annotations

from ..core import checks
from ..core.stencil import ScanStep, identity
from ..engine import ownership, storage
from ..engine.location import absolute, join
from ..graph.declared import declared
from .filters import fused_source, fusing


def to_zarr(x, path: str, *, overwrite: bool = False, client=None) -> dict:
    """Write ``x`` (numpy, cupy, dask, an xarray DataArray or Dataset) to a new Zarr store at
    ``path``: the engine where it can take the work, else dask. ``overwrite``: replace a store
    distconv wrote (never anything else). ``client``: a distributed Client (default: the
    current one, if any). Returns {"path": "engine" | "general", "why": ..., "tasks": ...}
    (per variable for a Dataset)."""
    path = absolute(path)  # the workers' folder may be another's (a kept cluster started elsewhere)
    if checks.array_kind(x) == "xarray" and hasattr(x, "data_vars"):
        return _dataset(x, path, overwrite, client)
    if checks.array_kind(x) == "xarray":
        return _dataset(x.to_dataset(name=x.name or "data"), path, overwrite, client)[x.name or "data"]
    return _array(x, path, client, attrs={}, dims=None, overwrite=overwrite)


def _claim(path: str, overwrite: bool) -> ownership.Claim:
    """The output made ours, its errors in this face's words (``path``, ``overwrite=True``)."""
    return ownership.claim(path, overwrite, key="path", words=ownership.PYTHON_WORDS)


def _dataset(ds, path: str, overwrite: bool, client) -> dict:
    """A Dataset as xr.open_zarr gives it back: coordinates, then each data variable."""
    claim = _claim(path, overwrite)
    names = [str(n) for n in ds.data_vars]
    ownership.record_entries(path, [*names, *map(str, ds.coords)])
    frame = ds.drop_vars(list(ds.data_vars))
    storage.write_dataset_frame(path, frame, dict(ds.attrs))
    report = {n: _array(ds[n].data, join(path, n), client, dict(ds[n].attrs), list(map(str, ds[n].dims)),
                        claim=claim)
              for n in names}
    storage.consolidate(path)
    ownership.mark_complete(path, {"by": "dc.to_zarr"}, claim)  # last: the whole dataset is there
    return report


def _array(data, path: str, client, attrs: dict, dims, overwrite: bool = False,
           claim: ownership.Claim | None = None) -> dict:
    """One array to ``path`` (inside the output ``claim`` made ours, else claimed here): the
    engine's job when plan() finds one, else dask."""
    import dataclasses
    import time

    from .. import engine  # the engine: imported when a job runs, not with distconv

    t0 = time.perf_counter()
    reason, job = plan(data, path, client)
    whole = claim is None  # an output of its own, not a dataset's variable
    if whole:
        claim = _claim(path, overwrite)
    if job is None:
        if checks.array_kind(data) != "dask":
            import dask.array as da

            data = da.from_array(data, chunks=data.shape or ())
        graph, tasks = storage.store_into(data, path, claim, attrs=attrs, dims=dims), None
    else:
        job = dataclasses.replace(job, owner=claim)  # its blocks write while the claim owns the output
        engine.create_output(path, job.layout.shape, job.layout.dtype, job.layout, attrs, dims)
        blocks, merged = engine.graph(job, job.name, _workers(client))
        graph, tasks = [blocks, merged], len(blocks)
    try:
        engine.compute(graph, _client(client), claim)
    except ownership.Superseded as e:  # another run claimed the output meanwhile
        raise ownership.OutputError(str(e)) from None
    storage.finish(path)
    if whole:
        ownership.mark_complete(path, {"by": "dc.to_zarr"}, claim)
    return {"path": "general" if job is None else "engine", "why": reason, "tasks": tasks,
            "seconds": round(time.perf_counter() - t0, 3)}


def plan(data, path: str, client=None, bins=(None, True), out_chunks=None):
    """(None, the engine's Job writing ``data`` to ``path``), or (why the engine cannot, None).
    ``bins``/``out_chunks``: as engine.plan's."""
    from .. import engine

    reason, found = engine_chain(data)
    if found is None:
        return reason, None
    z, src, st, scan = found
    return None, engine.plan(src, path, st, z.shape, z.dtype, z.chunks, _gpu(client), z.metadata.to_dict(),
                                  out_chunks, bins, scan=scan)


def engine_chain(data):
    """(None, (the zarr.Array ``data`` reads, its folder or URL, the fused Stencil made of it,
    the scan after it or None)), or (why the engine cannot run ``data``, None)."""
    if checks.array_kind(data) != "dask":
        return f"a {checks.array_kind(data)} array, not a lazy one read from Zarr", None
    data, scan = declared(data, ScanStep) or (data, None)
    fused = fused_source(data)
    if fused is None and scan is None:
        if not fusing():
            return "distconv.fuse is off (the engine runs a fused chain of distconv stencils)", None
        return ("its last step is not a distconv stencil or scan but arithmetic, a slice or another dask "
                "operation (laplace over some of the dims, or with a mode per dim, is a sum of second "
                "derivatives; nan_policy='omit' divides two filters)"), None
    source, st = fused if fused is not None else (data, identity(data.ndim, scan.name))
    z, why = storage.zarr_source(source)
    if z is None:
        return why, None
    if any(st.periodic):
        return "a step's mode is wrap (its halo comes from the far edge of the array)", None
    src, why = storage.store_path(z)
    if src is None:
        return why, None
    return None, (z, src, st, scan)


def _client(client):
    if client is not None:
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):  # no running client: dask's local scheduler
        return None


def _workers(client):
    from .. import engine

    return engine.workers(_client(client))


def _gpu(client) -> bool:
    """Do the blocks run on GPUs: every worker (or this process, without a client) has one."""
    from ..backends.devices import gpu_count, gpu_stack_available

    def probe():
        return bool(gpu_count()) and gpu_stack_available()

    client = _client(client)
    return all(client.run(probe).values()) if client is not None else probe()
