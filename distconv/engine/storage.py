"""Zarr v3 in and out through dask: opening inputs, chunk planning, storage-aligned writes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..backends.device import device
from ..core.arrays import LazyModule, to_host
from . import fencing
from .location import Location, join, write_pieces
from .marks import BLOCKS, Claim
from .source import native

from .plan import CPU_CHUNK_BYTES, GPU_CHUNK_BYTES  # noqa: F401  (the general path's chunks too)

da = LazyModule("dask.array")  # imported where a function first uses it
CODECS = ("zstd", "lz4", "none")


def open_array(path: str) -> da.Array:
    """A lazy dask array over a Zarr array."""
    import zarr

    if not Location(path).exists():
        raise FileNotFoundError(f"input store {path!r} does not exist")
    node = zarr.open(str(path), mode="r")
    if not hasattr(node, "shape"):
        raise ValueError(f"input {path!r} is a group; name the array with 'variable'")
    # a sharded array's dask chunks are its shards: its inner chunks (~1 MiB in distconv's
    # outputs) would make a big input thousands of dask chunks, slow to build and check
    return da.from_zarr(node, chunks=getattr(node, "shards", None) or node.chunks)


# xarray's lazy wrappers that hand the Zarr array's values through unchanged (any other, a CF
# decoding say, changes them: such a variable is not a plain read of its array)
_PASS_THROUGH = {"ImplicitToExplicitIndexingAdapter", "CopyOnWriteArray", "MemoryCachedArray",
                 "LazilyIndexedArray", "ZarrArrayWrapper",
                 # bytes swapped to native order: the engine's blocks decode into native memory too
                 "NativeEndiannessArray"}


def zarr_source(arr: da.Array):
    """(the zarr.Array ``arr`` reads whole and unchanged, None), or (None, why not): ``arr``
    must be ``da.from_zarr``'s array or an ``xr.open_zarr`` variable's, not sliced or cast."""
    import zarr

    graph = arr.__dask_graph__()
    layers = getattr(graph, "layers", {})
    if len(layers) != 2:
        return None, "the input is not a Zarr array read whole (sliced, rechunked or computed first)"
    found = [v for v in dict(graph).values() if type(v).__name__ not in ("Task", "Alias", "tuple")]
    if len(found) != 1:
        return None, "the input is not one Zarr array read whole"
    obj = found[0]
    while not isinstance(obj, zarr.Array):
        name = type(obj).__name__
        if name not in _PASS_THROUGH:  # xarray's own wrappers, said in the user's words
            decoded = {
                "_ElementwiseFunctionArray": "the input's values are decoded by xarray as it reads them "
                                             "(CF decoding: a scale_factor or add_offset, a fill value masked "
                                             "to NaN, or a dtype change), not read as stored",
                "BoolTypeArray": "the input is stored as integers that xarray decodes to bool, not read as stored",
                "LazilyVectorizedIndexedArray": "the input is a part of the stored array (indexed as it was "
                                                "opened), not the whole array"}
            return None, decoded.get(name, "the input's values are changed by xarray as it reads them "
                                           "(decoded or indexed), not read as stored")
        if name == "LazilyIndexedArray" and any(k != slice(None) for k in obj.key.tuple):
            return None, "the input is a part of the stored array (indexed as it was opened), not the whole array"
        obj = getattr(obj, "array", None) if hasattr(obj, "array") else getattr(obj, "_array", None)
        if obj is None:
            return None, "the input's values do not come from a Zarr array"
    if tuple(obj.shape) != tuple(arr.shape) or native(obj.dtype) != native(arr.dtype):
        return None, "the input is not the Zarr array read whole"
    return obj, None


def store_path(z) -> tuple:
    """(where the zarr.Array ``z`` lives: its local folder or its URL, None), or (None, why the
    engine cannot reach it by path). A URL is reopened with the environment's settings
    (credentials, endpoint), so a store opened with storage options of its own is not taken."""
    store = z.store
    root = getattr(store, "root", None)  # LocalStore
    fs = getattr(store, "fs", None)
    protocol = getattr(fs, "protocol", None)
    if root is None and protocol in ("file", ("file", "local")):
        root = store.path  # FsspecStore over the local file system (da.from_zarr of a path)
    if root is not None:  # absolute: the workers' folder may not be this process's
        return str(Path(str(root), z.path or "").absolute()), None
    if fs is None:
        return None, f"the input lives in a {type(store).__name__}, not in files or object storage"
    if set(getattr(fs, "storage_options", {})) - {"asynchronous", "use_listings_cache"}:
        return None, "the input's store was opened with storage options (the engine reopens it by URL)"
    proto = protocol[0] if isinstance(protocol, tuple) else protocol
    url = f"{proto}://{store.path.strip('/')}"
    return (f"{url}/{z.path}" if z.path else url), None


def compute_chunks(arr: da.Array, target_bytes: int = CPU_CHUNK_BYTES) -> da.Array:
    """Rechunk to ~target_bytes blocks made of whole storage chunks (slabs along axis 0)."""
    if 0 in arr.shape:  # nothing to cut
        return arr
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


def create(path: str, shape, chunks, dtype, codec: str = "zstd", attrs=None, dims=None, inner=None):
    """A new Zarr v3 array (with Zarr's dimension names when ``dims``; ``inner``: its chunks
    are shards of chunks this shape); never replaces one (zarr's overwrite deletes the whole
    folder)."""
    import zarr

    from .output import fill_of

    chunks = tuple(max(1, int(c)) for c in chunks)  # Zarr's chunk sides are positive, an empty axis's too
    fill, attrs = fill_of(dtype, attrs, dims)
    layout = {"chunks": chunks} if inner is None else {"shards": chunks, "chunks": tuple(max(1, int(c)) for c in inner)}
    return zarr.create_array(str(path), shape=tuple(shape), dtype=dtype, compressors=_compressors(codec),
                             overwrite=False, fill_value=fill, attributes=attrs, dimension_names=dims, **layout)


def to_device_blocks(arr: da.Array) -> da.Array:
    """Blocks moved to the worker's GPU, staged through pinned memory (the device object's upload)."""
    gpu = device(True)
    return arr.map_blocks(gpu.upload, pinned=False, token="to_device", meta=gpu.empty((0,) * arr.ndim, arr.dtype))


def store_into(arr: da.Array, path: str, claim: Claim, storage_chunks=None, codec: str = "zstd",
               attrs=None, dims=None, inner=None) -> da.Array:
    """Lazily write ``arr`` into a Zarr array at ``path`` (inside the output ``claim`` made
    ours): blocks aligned to storage chunks (no chunk has two writers; ``inner``: those are
    shards of chunks this shape), each block encoded as the array's chunks (every chunk
    written, a block of fill values too) and written as the engine's blocks are
    (fencing.block_write: only while the claim owns the output, recorded by a mark of its
    job), so a resumed run writes only the blocks that are missing. Returns the dask array of
    write flags."""
    import zarr

    storage = tuple(storage_chunks or (c[0] for c in arr.chunks))
    aligned = write_chunks(arr, storage_chunks)
    if aligned != arr.chunks:
        arr = arr.rechunk(aligned)
    p = str(path)
    if claim.resuming and Location(p).child("zarr.json").exists():
        target = zarr.open_array(p, mode="r+")
        if target.shape != arr.shape or target.dtype != arr.dtype:
            raise ValueError(f"cannot resume {path!r}: it holds {target.shape} {target.dtype}, "
                             f"the workflow makes {arr.shape} {arr.dtype}")
    else:
        create(p, arr.shape, storage, arr.dtype, codec, attrs=attrs, dims=dims, inner=inner)
    Location(p).child(BLOCKS).make_dir()
    meta = Location(p).child("zarr.json").read_text()  # each block encodes its chunks as the array does

    def write(block, block_info=None):
        info = block_info[0]
        name = fencing.block_name(info["array-location"])
        # a fresh claim's token is new: no block has its mark yet, none is looked up
        if not (claim.resuming and fencing.block_mark(p, name, claim.token).exists()):
            files = _encoded(meta, info["array-location"], to_host(block))
            with fencing.block_write(claim, p, name, f"block {info['chunk-location']}") as aside:
                for key, data in files.items():
                    write_pieces(aside(join(p, *key.split("/"))), [data])
        return np.ones((1,) * block.ndim, dtype=bool)

    from dask.base import tokenize

    return arr.map_blocks(write, chunks=tuple((1,) * len(c) for c in arr.chunks), dtype=bool,
                          meta=np.empty((0,) * arr.ndim, dtype=bool),
                          name=f"distconv-store-{tokenize(arr, p, claim)}")


def _encoded(meta: str, extent, block) -> dict:
    """The files (chunk key -> bytes) that zarr writes for ``block`` at ``extent`` ((start,
    stop) per axis, whole chunks or shards) of the array whose zarr.json is ``meta``."""
    import zarr
    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage import MemoryStore

    files = {"zarr.json": default_buffer_prototype().buffer.from_bytes(meta.encode())}
    z = zarr.open_array(MemoryStore(files), mode="r+").with_config({"write_empty_chunks": True})
    z[tuple(slice(a, b) for a, b in extent)] = block
    return {k: v.to_bytes() for k, v in files.items() if k != "zarr.json"}


def write_chunks(arr: da.Array, storage_chunks=None) -> tuple:
    """The blocks store() writes ``arr`` in: its chunks aligned to the storage chunks."""
    storage = tuple(storage_chunks or (c[0] for c in arr.chunks))
    return tuple(tuple(_aligned(sizes, s)) for sizes, s in zip(arr.chunks, storage))


def written_bytes(arr: da.Array, path: str, token: str, storage_chunks=None) -> int:
    """Bytes of ``arr`` an interrupted store() to ``path`` of the job ``token`` already wrote:
    the blocks whose region has a mark of that job."""
    import itertools

    done = fencing.written_blocks(path, token)
    bounds = [np.cumsum((0,) + c) for c in write_chunks(arr, storage_chunks)]
    total = 0
    for idx in itertools.product(*(range(len(b) - 1) for b in bounds)):
        extent = [(b[i], b[i + 1]) for b, i in zip(bounds, idx)]
        if fencing.block_name(extent) in done:
            total += int(np.prod([hi - lo for lo, hi in extent])) * arr.dtype.itemsize
    return total


def _aligned(sizes: tuple, step: int) -> list[int]:
    """Chunk boundaries moved to multiples of the storage chunk (each at least one)."""
    total = sum(sizes)
    if total == 0:  # an empty axis: its one empty chunk
        return list(sizes)
    bounds, pos = [], 0
    for s in sizes:
        pos += s
        b = min(total, max(step, round(pos / step) * step))
        if not bounds or b > bounds[-1]:
            bounds.append(b)
    if bounds[-1] != total:
        bounds.append(total)
    return list(np.diff([0] + bounds))


def dataset_array_name(result) -> str:
    """The entry a dataset output's data variable is written to."""
    return str(result.name or "data")


def write_dataset_frame(path: str, result, attrs: dict):
    """Make ``path`` (already claimed) a Zarr group that xarray opens: the result's coordinates
    written by xarray (so times and calendars keep their CF encoding), the group's attributes
    (the data variables go to ``path/<name>``). Consolidated metadata is written by
    ``consolidate`` once the variables are there."""
    import warnings

    import zarr

    coords = result.coords.to_dataset()
    for name in coords.variables:
        coords[name].encoding = {k: v for k, v in coords[name].encoding.items()
                                 if k in ("units", "calendar", "dtype")}  # the source's chunks do not fit
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        warnings.filterwarnings("ignore", message=".*distconv.*not recognized as a component.*")
        coords.to_zarr(str(path), mode="a", consolidated=False, zarr_format=3)
    zarr.open_group(str(path), mode="a").attrs.update(attrs)


def consolidate(path: str):
    import warnings

    import zarr

    with warnings.catch_warnings():  # v3 consolidated metadata: xr.open_zarr then opens quietly
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        warnings.filterwarnings("ignore", message=".*distconv.*not recognized as a component.*")
        zarr.consolidate_metadata(str(path))
