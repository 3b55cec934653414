"""Zarr v3 in and out through dask: storage-aligned writes, synthetic inputs, chunk planning."""

from __future__ import annotations

import math
from pathlib import Path

import dask.array as da
import numpy as np

GPU_CHUNK_BYTES = 256 * 2**20  # compute chunks of a few hundred MiB keep a GPU busy
CODECS = ("zstd", "lz4", "none")


def open_array(path: str, variable: str | None = None) -> da.Array:
    """A lazy dask array over a Zarr array (or a variable of a Zarr group)."""
    import zarr

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"input store {path!r} does not exist")
    node = zarr.open(str(p), mode="r")
    if variable is not None:
        if not hasattr(node, "array_keys") or variable not in set(node.array_keys()):
            raise ValueError(f"input variable {variable!r} is not in {path!r}")
        node = node[variable]
    elif not hasattr(node, "shape"):
        raise ValueError(f"input {path!r} is a group; name the array with 'variable'")
    return da.from_zarr(node)


def compute_chunks(arr: da.Array, target_bytes: int = GPU_CHUNK_BYTES) -> da.Array:
    """Rechunk to ~target_bytes blocks made of whole storage chunks (slabs along axis 0)."""
    storage = tuple(c[0] for c in arr.chunks)
    per_slab = arr.dtype.itemsize * math.prod(arr.shape[1:])
    rows = max(storage[0], (target_bytes // max(per_slab, 1)) // storage[0] * storage[0])
    return arr.rechunk((min(rows, arr.shape[0]),) + tuple(arr.shape[1:]))


def _compressors(codec: str):
    import zarr.codecs as zc

    if codec == "zstd":
        return (zc.ZstdCodec(level=1),)
    if codec == "lz4":
        return (zc.BloscCodec(cname="lz4", clevel=5),)
    if codec == "none":
        return ()
    raise ValueError(f"codec must be one of {CODECS}, got {codec!r}")


def create(path: str, shape, chunks, dtype, codec: str = "zstd", overwrite: bool = False, attrs=None):
    import zarr

    return zarr.create_array(str(path), shape=tuple(shape), chunks=tuple(chunks), dtype=dtype,
                             compressors=_compressors(codec), overwrite=overwrite,
                             attributes=attrs or {})


def to_host_blocks(arr: da.Array) -> da.Array:
    """GPU blocks come back to host memory before they are encoded."""
    from .chunk import is_cupy, to_host

    if is_cupy(arr._meta):
        return arr.map_blocks(to_host, meta=np.empty((0,) * arr.ndim, dtype=arr.dtype))
    return arr


def to_device_blocks(arr: da.Array) -> da.Array:
    import cupy

    return arr.map_blocks(cupy.asarray, meta=cupy.empty((0,) * arr.ndim, dtype=arr.dtype))


def store(arr: da.Array, path: str, storage_chunks=None, codec: str = "zstd",
          overwrite: bool = False, attrs=None):
    """Write ``arr`` into a new Zarr array, rechunked so that no storage chunk has two writers.
    Returns the (lazy) delayed store."""
    storage = tuple(storage_chunks or (c[0] for c in arr.chunks))
    aligned = tuple(
        tuple(_aligned(sizes, s)) for sizes, s in zip(arr.chunks, storage))
    if aligned != arr.chunks:
        arr = arr.rechunk(aligned)
    target = create(path, arr.shape, storage, arr.dtype, codec, overwrite, attrs)
    return da.store(to_host_blocks(arr), target, lock=False, compute=False)


def _aligned(sizes: tuple, step: int) -> list[int]:
    """Chunk boundaries moved to multiples of the storage chunk (each at least one)."""
    total = sum(sizes)
    bounds, pos = [], 0
    for s in sizes:
        pos += s
        b = min(total, max(step, round(pos / step) * step))
        if not bounds or b > bounds[-1]:
            bounds.append(b)
    if bounds[-1] != total:
        bounds.append(total)
    return list(np.diff([0] + bounds))


def synthetic(path: str, shape, chunks, dtype="float32", seed: int = 0, codec: str = "zstd"):
    """A smooth random field with noise (so filters have structure to act on), written once."""
    rs = da.random.RandomState(seed)
    noise = rs.standard_normal(tuple(shape), chunks=tuple(chunks)).astype(dtype)
    grids = da.meshgrid(*[da.linspace(0, 6 * np.pi, n, chunks=c) for n, c in zip(shape, chunks)],
                        indexing="ij")
    field = sum(da.sin(g * (i + 1)) for i, g in enumerate(grids)).astype(dtype)
    arr = (field + 0.3 * noise).rechunk(tuple(chunks))
    da.store(arr, create(path, shape, chunks, dtype, codec), lock=False)
