"""Zarr out, from Python and xarray, through the engine `distconv run` uses.

``dc.to_zarr(y, path)`` where ``y`` is distconv stencils (filters, derivatives, laplace, fused
as they were called), possibly then a scan along an axis, over an array read whole from a Zarr
store (``da.from_zarr`` or ``xr.open_zarr``; a folder or object storage reached by URL:
engine/location.py): the chain runs as the engine's blocks, one task per block from read to
write, named after the steps on the dashboard (engine.write, the pipeline `distconv run` runs
too), and the output is distconv's sharded Zarr v3, read by plain zarr-python and
``xr.open_zarr``. Anything else is written by dask, and the returned report says why."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import checks
from ..engine import chain, fencing, marks, ownership, paths, storage
from ..engine import shards as shard_format
from ..engine.location import absolute, join


def to_zarr(x, path: str, *, overwrite: bool = False, client=None, progress: bool = False, chunks=None) -> dict:
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
    chunks : int, tuple of int or dict, optional
        The stored chunks. For an array, a size per axis (or one for every axis): the chunks
        dask writes, or the engine's shards. For a DataArray or Dataset, ``{dim: size}``: the
        stored chunks and shards along those dims (the others follow the layout rule of the
        accessor's ``to_zarr``). Default: the input's chunks (see that rule for xarray).

    Returns
    -------
    dict
        ``{"path": "engine" | "general", "why": reason or None, "tasks": n, "seconds": s}``;
        for a Dataset, one such dict per data variable.

    Raises
    ------
    OutputError
        (a ValueError) ``path`` is, holds or lies inside a Zarr store that ``x`` reads, holds
        something distconv did not write, or a finished output without ``overwrite=True``;
        nothing is touched then.
    ValueError
        ``chunks`` not positive sizes, one per axis, or naming a dim the data does not have.

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
    paths.check_apart(path, x)  # before anything is removed: replacing what x reads would lose it
    path = absolute(path)  # the workers' folder may be another's (a kept cluster started elsewhere)
    if checks.array_kind(x) == "xarray" and hasattr(x, "data_vars"):
        return _dataset(x, path, overwrite, client, progress, chunks)
    if checks.array_kind(x) == "xarray":
        return _dataset(x.to_dataset(name=x.name or "data"), path, overwrite, client, progress,
                        chunks)[x.name or "data"]
    stored = _array_chunks(chunks, np.shape(x))
    claim = _claim(path, overwrite)
    with fencing.stopped_on_failure(claim):
        report = _array(x, path, client, claim, attrs={}, dims=None, progress=progress,
                        layout=None if stored is None else Stored(stored, None))
        marks.mark_complete(path, {"by": "dc.to_zarr"}, claim)
    return report


def _claim(path: str, overwrite: bool) -> marks.Claim:
    """The output made ours, its errors in this face's words (``path``, ``overwrite=True``)."""
    return ownership.claim(path, overwrite, key="path", words=ownership.PYTHON_WORDS)


def _dataset(ds, path: str, overwrite: bool, client, progress: bool = False, chunks=None) -> dict:
    """A Dataset as xr.open_zarr gives it back: coordinates, then each data variable, every
    variable of one dims in one layout (_layouts)."""
    layouts = _layouts(ds, chunks)  # (checks ``chunks`` before anything is written)
    claim = _claim(path, overwrite)
    names = [str(n) for n in ds.data_vars]
    with fencing.stopped_on_failure(claim):
        marks.record_entries(path, [*names, *map(str, ds.coords)])
        frame = ds.drop_vars(list(ds.data_vars))
        storage.write_dataset_frame(path, frame, dict(ds.attrs))
        report = {n: _array(ds[n].data, join(path, n), client, claim, dict(ds[n].attrs),
                            list(map(str, ds[n].dims)), progress, layouts[n])
                  for n in names}
        storage.consolidate(path)
        marks.mark_complete(path, {"by": "dc.to_zarr"}, claim)  # last: the whole dataset is there
    return report


@dataclasses.dataclass(frozen=True)
class Stored:
    """How one array is stored: ``chunks`` (Zarr's chunks: what a reader decodes, xarray's
    ``encoding["chunks"]``) inside ``shards`` (None: unsharded)."""

    chunks: tuple
    shards: tuple | None = None


FRAME_MAX_BYTES = 16 * 2**20  # an inner chunk (one zstd frame) at most: nvCOMP's zstd encodes up to that


def _layouts(ds, chunks=None) -> dict:
    """Each data variable's Stored layout, one for each group of variables of the same dims
    and shape (the accessor's ``to_zarr`` states the rule).

    The group's chunks are those xarray's to_zarr would store its first variable in
    (_xarray_chunks), or ``chunks[dim]`` where given. Where none of the group runs on the
    engine, it is written so, unsharded, as xarray writes. Where one does, the group is
    sharded as the engine writes: a shard per such chunk, inner chunks halved along the dims a
    distconv stencil of the group reads a halo along (longest first, to ~1 MiB: a halo read
    from the store decodes little), the other dims kept but where an inner chunk would pass
    16 MiB (the given dims never)."""
    given = _dim_chunks(chunks, ds)
    groups: dict = {}
    for name, var in ds.data_vars.items():
        groups.setdefault((var.dims, var.shape), []).append(str(name))
    out = {}
    for (dims, shape), names in groups.items():
        datas = [ds[n].data for n in names]
        base = _xarray_chunks(ds[names[0]])
        stored = tuple(max(1, min(given.get(d, b), n) if n else 1) for d, b, n in zip(dims, base, shape))
        if not any(chain.engine_chain(d)[1] is not None for d in datas):
            out.update(dict.fromkeys(names, Stored(stored)))
            continue
        halo = set()
        for d in datas:
            made = chain.stencil_chain(d)[1]
            if made is not None:
                halo |= {a for a, dep in enumerate(made[1].depth) if tuple(dep) != (0, 0)}
        itemsize = max(np.dtype(d.dtype).itemsize for d in datas)
        fixed = {a for a, d in enumerate(dims) if d in given}
        inner = _inner(stored, itemsize, halo - fixed, set(range(len(dims))) - fixed - halo)
        out.update(dict.fromkeys(names, Stored(inner, stored)))
    return out


def _xarray_chunks(var) -> tuple:
    """The chunks xarray's to_zarr stores ``var`` in: its encoding's (a variable read from Zarr
    and passed through keeps them), else dask's first chunk along each dim; a numpy
    variable's: whole."""
    enc = var.encoding.get("chunks")
    if isinstance(enc, (tuple, list)) and len(enc) == var.ndim and all(isinstance(c, (int, np.integer)) for c in enc):
        return tuple(int(c) for c in enc)
    if checks.array_kind(var.data) == "dask":
        return tuple(c[0] if c else 0 for c in var.data.chunks)
    return tuple(var.shape)


def _inner(shard: tuple, itemsize: int, first: set, then: set) -> tuple:
    """``shard`` halved along the longest even axis of ``first`` while above the engine's inner
    chunk size (shards.INNER_BYTES), then along the longest even one of ``then`` while above
    FRAME_MAX_BYTES."""
    inner = list(shard)
    for axes, limit in ((first, shard_format.INNER_BYTES), (then, FRAME_MAX_BYTES)):
        while math.prod(inner) * itemsize > limit:
            even = [a for a in axes if inner[a] % 2 == 0]
            if not even:
                break
            a = max(even, key=lambda k: (inner[k], -k))
            inner[a] //= 2
    return tuple(inner)


def _dim_chunks(chunks, ds) -> dict:
    """``chunks`` of an xarray write as {dim: size}, checked."""
    if chunks is None:
        return {}
    if not isinstance(chunks, dict):
        raise ValueError(f"chunks of a DataArray or Dataset must be {{dim: size}}, got {chunks!r}")
    for d, n in chunks.items():
        if d not in ds.dims:
            raise ValueError(f"chunks names dim {d!r}, which is not one of {tuple(map(str, ds.dims))}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"chunks[{d!r}] must be a positive integer, got {n!r}")
    return {d: int(n) for d, n in chunks.items()}


def _array_chunks(chunks, shape) -> tuple | None:
    """``chunks`` of an array write as a size per axis, checked."""
    if chunks is None:
        return None
    sizes = (chunks,) * len(shape) if isinstance(chunks, (int, np.integer)) else tuple(chunks)
    if len(sizes) != len(shape) or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1
                                       for n in sizes):
        raise ValueError(f"chunks must be {len(shape)} positive integers (one per axis) or one, got {chunks!r}")
    return tuple(int(min(n, s)) if s else 1 for n, s in zip(sizes, shape))


def _array(data, path: str, client, claim: marks.Claim, attrs: dict, dims, progress: bool = False,
           layout: Stored | None = None) -> dict:
    """One array to ``path`` inside the output ``claim`` made ours: the engine's plan where it
    takes ``data``, else dask's writes; stored as ``layout`` where given (an array's: its
    ``chunks`` are the engine's shards, or dask's chunks)."""
    import time

    from .. import engine  # the engine's blocks: imported when a write runs, not with distconv

    t0 = time.perf_counter()
    client = _client(client)
    shards = None if layout is None else layout.shards or layout.chunks
    inner = None if layout is None or layout.shards is None else layout.chunks  # a sharded group's
    plan = chain.plan_write(data, path, chain.gpu_blocks(client), out_chunks=shards, out_inner=inner)
    if plan.job is None and checks.array_kind(data) != "dask":  # a numpy or cupy array: dask writes it whole
        import dask.array as da

        plan = chain.Plan(data=da.from_array(data, chunks=data.shape or ()), why=plan.why)
    try:
        shown = engine.Progress(label=f"distconv: {path}") if progress else None
        results = engine.write(plan, path, claim, client, attrs, dims, storage_chunks=shards, progress=shown,
                               inner_chunks=inner)
    except marks.Superseded as e:  # another run claimed the output meanwhile
        raise marks.OutputError(str(e)) from None
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
