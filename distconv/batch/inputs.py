"""Workflow inputs: a Zarr array or a dataset variable (made synthetic when asked and
missing), cut to a region, planned into compute chunks and, on GPU workers, moved to the GPU."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np

from ..graph import storage
from .spec import Workflow, WorkflowError


def ensure_input(wf: Workflow):
    """Write the synthetic input when it is asked for and missing; refuse a missing input."""
    inp = wf.input
    if not Path(inp["path"]).exists():
        if "synthetic" not in inp:
            raise WorkflowError(f"input store {inp['path']!r} does not exist")
        s = inp["synthetic"]
        if "variable" in inp:
            synthetic_dataset(inp["path"], inp["variable"], s["shape"], s["chunks"], s.get("dims"),
                                 s.get("dtype", "float32"), s.get("seed", 0))
        else:
            synthetic(inp["path"], s["shape"], s["chunks"], s.get("dtype", "float32"), s.get("seed", 0))


def open_input(wf: Workflow, gpu: bool):
    """The input as a planned dask array (or DataArray), with its storage chunks and size."""
    inp = wf.input
    ensure_input(wf)
    if "variable" in inp:
        import xarray as xr

        ds = xr.open_zarr(inp["path"], consolidated=False)
        if inp["variable"] not in ds.data_vars:
            raise WorkflowError(f"input variable {inp['variable']!r} is not in {inp['path']!r}")
        arr = ds[inp["variable"]]
        if inp.get("region"):
            arr = arr.isel({k: slice(*v) for k, v in inp["region"].items()})
        stored = tuple(c[0] for c in arr.data.chunks)
        data = plan(arr.data, wf.chunks, gpu)
        if gpu:
            data = storage.to_device_blocks(data)
        arr = arr.copy(data=data)
        return arr, {"storage": stored, "nbytes": arr.nbytes, "array": arr}
    arr = storage.open_array(inp["path"])
    if inp.get("region"):
        region = inp["region"]
        try:
            arr = arr[tuple(slice(*region.get(a, region.get(str(a), [None]))) for a in range(arr.ndim))]
        except (TypeError, ValueError) as e:
            raise WorkflowError(f"input.region {region!r} is not valid: {e}") from None
        if arr.size == 0:
            raise WorkflowError(f"input.region {region!r} selects nothing")
    stored = tuple(c[0] for c in arr.chunks)
    arr = plan(arr, wf.chunks, gpu)
    if gpu:
        arr = storage.to_device_blocks(arr)
    return arr, {"storage": stored, "nbytes": arr.nbytes, "array": arr}


def plan(arr, chunks, gpu: bool):
    if chunks == "auto":
        return storage.compute_chunks(arr, storage.GPU_CHUNK_BYTES if gpu else storage.CPU_CHUNK_BYTES)
    if chunks is not None:
        return arr.rechunk(tuple(chunks))
    return arr


def synthetic_dataset(path: str, variable: str, shape, chunks, dims=None, dtype="float32", seed: int = 0):
    """An xarray dataset (time, lat, lon by default) with coordinates, written to Zarr."""
    import xarray as xr

    dims = list(dims or ["time", "lat", "lon"][-len(shape):])
    coords = {d: np.linspace(0.0, 1.0 if d != "time" else n - 1.0, n) for d, n in zip(dims, shape)}
    rs = da.random.RandomState(seed)
    grids = da.meshgrid(*[da.from_array(coords[d], chunks=c) for d, c in zip(dims, chunks)], indexing="ij")
    field = sum(da.sin(2 * np.pi * (i + 1) * g) for i, g in enumerate(grids))
    data = (field + 0.1 * rs.standard_normal(tuple(shape), chunks=tuple(chunks))).astype(dtype)
    ds = xr.Dataset({variable: (dims, data.rechunk(tuple(chunks)))}, coords=coords,
                    attrs={"title": "distconv synthetic dataset"})
    ds[variable].attrs["units"] = "K"
    ds.to_zarr(path, mode="w", consolidated=False)


def synthetic(path: str, shape, chunks, dtype="float32", seed: int = 0, codec: str = "zstd"):
    """A smooth random field with noise (so filters have structure to act on), written once."""
    rs = da.random.RandomState(seed)
    noise = rs.standard_normal(tuple(shape), chunks=tuple(chunks)).astype(dtype)
    grids = da.meshgrid(*[da.linspace(0, 6 * np.pi, n, chunks=c) for n, c in zip(shape, chunks)],
                        indexing="ij")
    field = sum(da.sin(g * (i + 1)) for i, g in enumerate(grids)).astype(dtype)
    arr = (field + 0.3 * noise).rechunk(tuple(chunks))
    da.store(arr, storage.create(path, shape, chunks, dtype, codec), lock=False)
