"""Zarr in, a stencil chain, Zarr out: one task per block, from read to write.

Blocks are slabs along axis 0 made of whole output shards. A block's task reads its rows plus
the chain's halo straight from the input store (so it needs no neighbour task and nothing
travels between workers), moves them to the GPU where the worker has one, runs the fused
stencil on a Tile whose halo pieces are views of that one buffer, optionally counts a
histogram of the result, and writes its own shards (encoded with nvCOMP on the GPU when
available, else zstd on every CPU core). Reads go through zarr, with the zarrs Rust codec
pipeline when it is installed, or straight from the input's shard files when nvCOMP decodes
them, or (zarr's plain zstd chunks, with nvCOMP) from device memory that a batch of the
worker's blocks was decoded into ahead of them (graph/batches.py). A task runs in three
stages (read, device, write) and a process keeps IO_SLOTS blocks in flight, DEVICE_BLOCKS
of them at a time on its device, so the stages of different blocks overlap. A per-block mark
makes a rerun with resume skip finished blocks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import itertools
import math
import threading
import uuid
from dataclasses import dataclass, field

import numpy as np

from .. import backends
from ..core.arrays import array_module, is_cupy, to_host
from ..core.stencil import Stencil
from ..core.tile import Tile
from . import batches, chunk_heads, ownership, plain_chunks, shards
from .halo import merge_thin
from .location import Location


@dataclass(frozen=True)
class Job:
    src: str
    dst: str
    stencil: Stencil
    layout: shards.Layout        # the output's
    row_blocks: tuple            # ((r0, r1), ...): the input rows each block writes, covering the window
    edges: np.ndarray | None     # histogram of the result, when asked (float edges)
    uniform: bool = True
    gpu: bool = False
    src_layout: shards.Layout | None = None   # the input's, when its shards can be read directly
    in_dtype: str | None = None  # the input's (layout.dtype is the output's); None: the same
    batches: tuple = ()          # per block (b0, b1, w1): its decode batch b0..b1, its worker's end w1
    run: str = field(default_factory=lambda: uuid.uuid4().hex)  # names this run's shared edge rows
    in_shape: tuple | None = None  # the input's; None: the output's
    window: tuple = ()           # ((start, stop), ...): the box of the input the output is; (): all of it
    edges_data: bool = False     # halos read the input beyond the window (a region's edges: data)
    scan: object = None          # a scan after the chain (ops.scans.ScanStep)
    part: str = "block"          # block: read to write; local: the block's own scan held, its total
                                 # returned; write: that scan seeded by its carry and written

    def box(self) -> tuple:
        """((start, stop), ...) of the input the output covers."""
        return self.window or tuple((0, n) for n in (self.in_shape or self.layout.shape))

    def limits(self, axis: int) -> tuple:
        """(lo, hi): the input a halo may read along ``axis``: the window (its edges take the
        steps' modes), or the whole input when the region's edges are the data's."""
        if self.edges_data:
            return 0, (self.in_shape or self.layout.shape)[axis]
        return self.box()[axis]

    def row_limits(self) -> tuple:
        return self.limits(0)

    @property
    def name(self) -> str:
        """Its tasks' name on the dashboard, the steps': distconv-gaussian-laplace, distconv-cumsum."""
        if self.scan is None or self.stencil.name == self.scan.name:
            return self.stencil.name
        return self.stencil.name + self.scan.name.removeprefix("distconv")

    @property
    def carried(self) -> bool:
        """Does a block's result need the blocks before it (a scan along axis 0)?"""
        return self.scan is not None and self.scan.axis == 0 and len(self.row_blocks) > 1


def plan(src: str, dst: str, st: Stencil, shape, dtype, storage_chunks, gpu: bool, src_meta=None,
         out_chunks=None, bins=(None, True), window=(), edges_data=False, scan=None) -> Job:
    """The job of ``st`` (a fused stencil chain), then ``scan`` if any, from the Zarr array at
    ``src`` (``shape``, ``dtype``, ``storage_chunks``; ``src_meta``: its metadata document, so
    its shards can be read directly) to a new sharded array at ``dst`` in the result dtype:
    blocks of ~1 GiB on GPUs, 64 MiB on CPUs, made of whole output shards (``out_chunks``, else
    the input's chunks grown to SHARD_MIN_BYTES). ``window``: ((start, stop), ...) of the input
    (a region), ``edges_data``: its halos read the data around it. ``bins``: (kernel edges,
    uniform) to count a histogram of the result in the same pass."""
    from .storage import CPU_CHUNK_BYTES, GPU_CHUNK_BYTES

    box = tuple(window) or tuple((0, n) for n in shape)
    out_shape = tuple(b - a for a, b in box)
    out_dtype = scan.dtype if scan is not None else st.result_dtype(dtype)  # output= may change it
    itemsize = out_dtype.itemsize
    shard = tuple(out_chunks or shard_shape(storage_chunks, out_shape, itemsize))
    layout = shards.Layout(out_shape, shard, shards.inner_shape(shard, itemsize), out_dtype.str)
    row_bytes = max(itemsize, np.dtype(dtype).itemsize) * math.prod(shape[1:])  # whole input rows are read
    rows = plan_rows(out_shape[0], shard[0], row_bytes, GPU_CHUNK_BYTES if gpu else CPU_CHUNK_BYTES, st.depth[0])
    rows = tuple((a + box[0][0], b + box[0][0]) for a, b in rows)
    src_layout = shards.layout_of(src_meta, shape, dtype) if src_meta else None
    return Job(str(src), str(dst), st, layout, rows, bins[0], bins[1], gpu, src_layout,
               in_dtype=np.dtype(dtype).str, in_shape=tuple(shape), window=tuple(map(tuple, window)),
               edges_data=bool(window) and edges_data, scan=scan)


def plan_rows(n0: int, shard_rows: int, row_bytes: int, target_bytes: int, depth: tuple) -> tuple:
    """Row blocks of ~target_bytes made of whole shard rows, each thick enough for the halo."""
    per = max(1, target_bytes // max(1, row_bytes * shard_rows)) * shard_rows
    sizes = [min(per, n0 - r) for r in range(0, n0, per)]
    sizes = list(merge_thin(tuple(sizes), *depth))
    bounds = np.cumsum([0] + sizes)
    return tuple((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))


@functools.cache
def zarr_settings() -> dict:
    """zarr config for the arrays the engine opens: the zarrs Rust codec pipeline (2.7x
    zarr-python's reads, NOTES.md) when it imports. Applied while an array is opened (zarr
    picks an array's pipeline then), so the process's own zarr config is left as it was."""
    try:
        import zarrs  # noqa: F401
    except ImportError:
        return {}
    return {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}


def open_with_settings(path: str, mode: str = "r", **kwargs):
    """zarr.open_array under zarr_settings()."""
    import zarr

    with zarr.config.set(zarr_settings()):
        return zarr.open_array(path, mode=mode, **kwargs)


@functools.lru_cache(maxsize=8)
def _open(path: str):
    return open_with_settings(path)


# Blocks in flight per worker process: a block's task is three stages, read (shard files, or
# zarr decoding on the CPU, into the slot's pinned staging), device (upload or nvCOMP decode,
# the stencil, nvCOMP encode, download; DEVICE_BLOCKS at a time) and write (shard files), so
# the stages of different blocks overlap. Each slot owns its pinned staging buffers and stream.
# dask config ``distconv.io-slots`` changes it (read once per process, at its first block).
# Measured: NOTES.md, "End to end, round 4".
IO_SLOTS = 2
SLOTS_KEY = "distconv.io-slots"


def io_slots(gpu: bool = True) -> int:
    """Blocks in flight per process: IO_SLOTS on a GPU, one per thread of the process on CPUs
    (there every stage of a block runs on its own thread: fewer slots leave cores idle); dask
    config overrides it, a bad value raises naming the key."""
    return _positive(SLOTS_KEY, IO_SLOTS if gpu else _threads())


def _threads() -> int:
    """Threads of this dask worker, or the cores of this process's machine."""
    import os

    try:
        from distributed import get_worker

        return get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        return os.cpu_count() or 1


def device_blocks() -> int:
    """Blocks in their device stage at once per process, from dask config (as io_slots)."""
    return _positive(DEVICE_KEY, DEVICE_BLOCKS)


def batch_bytes() -> int:
    """Most bytes of rows decoded in one nvCOMP batch, from dask config (as io_slots)."""
    return _positive(BATCH_KEY, BATCH_BYTES)


def _positive(key: str, default: int) -> int:
    """A positive integer from dask config ``key``; a bad value raises naming the key."""
    import dask

    n = dask.config.get(key, default)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"dask config {key!r} must be a positive integer, got {n!r}")
    return n


# The GIL switch interval of a process running blocks. A thread back from a blocking call
# (a stream wait, a copy, a file read) waits until the thread holding the GIL lets go, up to
# one interval; the device stage makes ~30 such calls per block. Measured beside a busy
# Python thread (diagnose_codec.py, NOTES.md, H200): nvCOMP encode of 1 GiB 0.29 s at
# Python's default 5 ms, 0.18 s at 1 ms, 0.16 s at 0.2 ms (= alone).
SWITCH_INTERVAL_S = 2e-4


@functools.cache
def _slots(gpu: bool) -> _Slots:
    """The process's I/O slots, made at its first block (which, in a dask worker, also sets the
    switch interval: local_blocks() scopes it where blocks run in a user's own process)."""
    import sys

    try:
        from distributed import get_worker

        get_worker()
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
    except (ImportError, ValueError):
        pass
    return _Slots(io_slots(gpu))


@contextlib.contextmanager
def local_blocks():
    """Around blocks run on dask's local threads in this process: the engine's switch interval
    while they run, the process's own after."""
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(old)


class _Slots:
    """I/O slots handed out lowest block first, so a block's upper neighbour in this process
    holds a slot (and has promised its edge rows, _EdgeRows) before the block itself does:
    in FIFO order, blocks that reached the queue first took the slots, and half the upper
    halos were decoded again from whole chunks (NOTES.md, round 5)."""

    def __init__(self, n: int):
        self._free = list(range(n))
        self._waiting: list = []  # heap of (block, arrival)
        self._arrivals = itertools.count()
        self._cv = threading.Condition()

    def get(self, block: int) -> int:
        me = (block, next(self._arrivals))
        with self._cv:
            heapq.heappush(self._waiting, me)
            self._cv.wait_for(lambda: self._free and self._waiting[0] == me)
            heapq.heappop(self._waiting)
            self._cv.notify_all()  # the next in line may take another free slot
            return self._free.pop()

    def put(self, slot: int):
        with self._cv:
            self._free.append(slot)
            self._cv.notify_all()


def run_block(job: Job, i: int, carry=None, local=None):
    """One block end to end, in one of the process's IO_SLOTS. Returns (histogram counts or an
    empty array, seconds per stage: waiting for a slot, reading, waiting for the device,
    decode or upload, kernels, histogram, encode, file writes), the stages timed with the GPU
    synced. A carried scan runs a block in two parts: ``local`` (its own scan held here; returns
    (its total, seconds)), then ``write`` (``carry``: the blocks' before it; ``local``: what the
    first part returned)."""
    mark = ownership.block_mark(job.dst, block_mark(job, i))
    if not _runs(job, i):
        _HELD.pop((job.run, i))
        return np.zeros(0, dtype=np.int64), {}
    clock = _Clock(job.gpu)
    if local is not None:
        for stage, t in local[1].items():
            clock.count(stage, t)
    slots = _slots(job.gpu)
    slot = slots.get(i)
    clock.lap("slot wait")
    try:
        return _run_block(job, i, slot, mark, clock, carry)
    finally:
        slots.put(slot)


def _runs(job: Job, i: int) -> bool:
    """Whether block ``i`` runs in this run (run_block skips a written block unless it counts a
    histogram; every block's scan is needed for the carries)."""
    return (job.part == "local" or job.edges is not None
            or not ownership.block_mark(job.dst, block_mark(job, i)).exists())


def block_mark(job: Job, i: int) -> str:
    """The mark of block ``i``: the region of the output it writes (its rows, every other axis
    whole)."""
    r0, r1 = job.row_blocks[i]
    first = job.box()[0][0]
    return ownership.block_name([(r0 - first, r1 - first)] + [(0, n) for n in job.layout.shape[1:]])


def _run_block(job: Job, i: int, slot: int, mark, clock, carry=None):
    r0, r1 = job.row_blocks[i]
    write = job.part != "local" and not mark.exists()
    (first, n0), (lo_h, hi_h) = job.row_limits(), job.stencil.depth[0]
    lo, hi = max(first, r0 - lo_h), min(n0, r1 + hi_h)
    out = _HELD.pop((job.run, i)) if job.part == "write" else None
    if out is None:
        # a write part whose held scan was dropped reads through zarr, not its batch again
        reading = job if job.part != "write" else dataclasses.replace(job, batches=())
        fetched = _fetch(reading, i, (lo, r0, r1, hi), slot, clock)
    with _device_turn(job.gpu, slot, clock):
        total = None
        if out is None:
            out, total = _result(job, fetched, (lo, r0, r1, hi), clock)
            del fetched
        if job.part == "local":
            _HELD.put((job.run, i), out, held_bytes(job.gpu))
            return to_host(total), clock.laps
        if carry is not None:
            out = job.scan.seed(out, carry)
            clock.lap("carry")
        counts = np.zeros(0, dtype=np.int64)
        if job.edges is not None:
            counts = to_host(backends.counts(out, job.edges, job.uniform))
            clock.lap("histogram")
        if write:
            encoded = shards.encode_block(job.layout, out, _encoder(out, slot))
            clock.lap("encode")
        del out
    if write:
        shards.write_encoded(job.dst, job.layout, encoded, r1 - r0, r0 - job.box()[0][0])
        clock.lap("write files")
        mark.touch()
    return counts, clock.laps


def _result(job: Job, fetched, rows: tuple, clock):
    """A block's result on its device from its ``fetched`` rows (``rows`` = (lo, r0, r1, hi)):
    the chain, then the scan without the carry of the blocks before it: (result, its scan
    total along axis 0 for a local part, else None)."""
    lo, r0, r1, hi = rows
    ext = _to_device(job, fetched, lo, hi, clock)
    ext, halo, trim = _around(job, ext, rows)
    out = job.stencil.func(Tile.extended(ext, halo))
    del ext
    if trim is not None:
        out = array_module(out).ascontiguousarray(out[trim])
    clock.lap("compute")
    total = None
    if job.scan is not None:
        scanned = job.scan(out)
        total = job.scan.total(scanned, out) if job.part == "local" else None
        out = scanned
        clock.lap("scan")
    return out, total


def _around(job: Job, ext, rows: tuple):
    """The block's rows lo..hi ``ext`` (whole along the other axes) cut to the window and the
    halo around it: (that array, contiguous; the tile's halo per axis; the slices of the
    chain's result that are the block, or None for all of it). Where a halo reaches the
    input's edge short of the chain's depth (a region's data edges near it), the block grows
    to that edge instead, which the steps then treat as the global edge it is, and the result
    is trimmed back: a halo that short would have the later steps apply their modes inside
    the input."""
    lo, r0, r1, hi = rows
    ranges = [((r0, r1), (lo, hi))]
    for a in range(1, ext.ndim):
        (start, stop), (first, last), (below, above) = job.box()[a], job.limits(a), job.stencil.depth[a]
        ranges.append(((start, stop), (max(first, start - below), min(last, stop + above))))
    cut, halo, trim, grown = [slice(None)], [], [], False
    for a, ((start, stop), (c0, c1)) in enumerate(ranges):
        (below, above), (first, last) = job.stencil.depth[a], job.limits(a)
        # a short halo at the input's edge: the centre grows to that edge (its halo then 0)
        s = c0 if (c0 == first and 0 < start - c0 < below) else start
        e = c1 if (c1 == last and 0 < c1 - stop < above) else stop
        if a:
            cut.append(slice(c0, c1))
        halo.append((s - c0, c1 - e))
        trim.append(slice(start - s, stop - s))
        grown = grown or (s, e) != (start, stop)
    whole = all(c.start == 0 and c.stop == n for c, n in zip(cut[1:], ext.shape[1:]))
    if not whole:
        ext = array_module(ext).ascontiguousarray(ext[tuple(cut)])
    return ext, tuple(halo), tuple(trim) if grown else None


class _Held:
    """Blocks' own scans (a carried scan's local parts) held in this process until their write
    part seeds and writes them, at most ``limit`` bytes: beyond it the oldest is dropped, and
    its write part computes it again (so does one that dask ran in another process)."""

    def __init__(self):
        import collections

        self._lock = threading.Lock()
        self._held = collections.OrderedDict()

    def put(self, key, arr, limit: int):
        """Hold ``arr`` under ``key`` = (run, block); another run's blocks are dropped first (a
        failed run's would otherwise stay in a worker that outlives it)."""
        with self._lock:
            for k in [k for k in self._held if k[0] != key[0]]:
                del self._held[k]
            self._held[key] = arr
            while sum(a.nbytes for a in self._held.values()) > limit and len(self._held) > 1:
                self._held.popitem(last=False)

    def pop(self, key):
        with self._lock:
            return self._held.pop(key, None)


_HELD = _Held()
HOLD_KEY = "distconv.scan-hold-bytes"


def held_bytes(gpu: bool = False) -> int:
    """Bytes of blocks' scans a process holds between their two parts (dask config
    ``distconv.scan-hold-bytes``; 8 GiB of device memory on a GPU, 1 GiB on a CPU)."""
    return _positive(HOLD_KEY, 8 * 2**30 if gpu else 2**30)


# Blocks in their device stage at once per process (a dask-cuda worker owns one GPU), each on
# its slot's stream; dask config ``distconv.device-blocks``. Measured: NOTES.md, round 4.
DEVICE_BLOCKS = 2
DEVICE_KEY = "distconv.device-blocks"


@contextlib.contextmanager
def _device_turn(gpu: bool, slot: int, clock):
    """On a GPU: this block's turn on the device, on its slot's stream, so the device stage of
    some blocks runs while other slots read and write files."""
    if not gpu:
        yield
        return
    from ..backends.cuda import transfer

    with _device_gate(), transfer.slot_stream(slot):
        clock.lap("device wait")
        yield


@functools.cache
def _device_gate() -> threading.Semaphore:
    return threading.Semaphore(device_blocks())


class _Clock:
    def __init__(self, gpu: bool):
        import time

        self._now, self._gpu, self.laps = time.perf_counter, gpu, {}
        self._t = self._now()

    def lap(self, stage: str):
        if self._gpu:
            import cupy

            cupy.cuda.get_current_stream().synchronize()
        t = self._now()
        self.laps[stage] = self.laps.get(stage, 0.0) + t - self._t
        self._t = t

    def count(self, what: str, n):
        """A number reported beside the stages, summed over blocks (a count, or seconds spent
        off this block's path)."""
        self.laps[what] = self.laps.get(what, 0) + n


def _fetch(job: Job, i: int, rows: tuple, slot: int, clock):
    """The read stage of block ``i``: rows lo..hi of the input (``rows`` = (lo, r0, r1, hi): the
    block r0..r1 and its halo), as shards.Frames on the host when the input's shards decode on
    this GPU through nvCOMP (the files read straight into pinned memory), as its batch's
    frames decoded on the device when the input is zarr's plain zstd chunks (batches.Reader), else
    as an array decoded by zarr (zarrs when installed; on a GPU straight into pinned memory: a
    pageable upload runs at ~1 GB/s there), the halo rows shared with neighbouring blocks."""
    lo, r0, r1, hi = rows
    if job.gpu:
        from ..backends.cuda import transfer
        from ..backends.cuda import zstd as gpu_zstd

        if job.src_layout is None and job.batches and gpu_zstd.available():
            parts = _BATCHES.take(job, i, _open(job.src), lo, hi, clock, functools.partial(_runs, job))
            clock.lap("batch wait")
            if parts is not None:
                return _Decoded(parts)
        if job.src_layout is not None and gpu_zstd.available():
            alloc = functools.partial(transfer.staging, slot, "frames")
            fr = shards.read_frames(job.src, job.src_layout, lo, hi, alloc)
            clock.lap("read files")
            if fr is not None:
                return fr
    src = _open(job.src)
    shape = (hi - lo,) + src.shape[1:]
    if job.gpu:
        nbytes = int(np.prod(shape)) * src.dtype.itemsize
        host = transfer.staging(slot, "read", nbytes).view(src.dtype).reshape(shape)
    else:
        host = np.empty(shape, src.dtype)
    clock.count("halos decoded", _EDGES.read(job.run, src, host, rows, job.stencil.depth[0]))
    clock.lap("decode")
    return host


def _to_device(job: Job, fetched, lo: int, hi: int, clock):
    """The fetched rows where the block runs: cut from its batch's decoded chunks, frames
    decoded by nvCOMP, a pinned host array uploaded, or (no GPU) the host array itself."""
    if isinstance(fetched, _Decoded):
        ext = plain_chunks.gather([(d.flat, d.chunks, a, b) for d, a, b in fetched.parts], lo, hi)
        clock.lap("rows")
        return ext
    if isinstance(fetched, shards.Frames):
        from ..backends.cuda import zstd as gpu_zstd

        ext = shards.decode_rows(fetched, lo, hi, gpu_zstd.decode_frames)
        clock.lap("decode")
        return ext
    if not job.gpu:
        return fetched
    from ..backends.cuda import transfer

    ext = transfer.to_device(fetched, pinned=True)
    clock.lap("upload")
    return ext


@dataclass(frozen=True)
class _Decoded:
    """A block's rows decoded in batches on the device: [(batches.Decoded, a, b), ...]."""
    parts: list


def _decode_into(src, a: int, b: int, dest: np.ndarray):
    """Rows a..b of the zarr array ``src`` decoded straight into ``dest``."""
    try:
        from zarr.core.buffer import default_buffer_prototype

        src.get_basic_selection((slice(a, b),), out=default_buffer_prototype().nd_buffer.from_numpy_array(dest))
    except (TypeError, ValueError, NotImplementedError):
        np.copyto(dest, src[a:b])


class _EdgeRows:
    """Rows at the edges of the blocks this process decodes, handed to the neighbouring block.

    A block's halo rows lie in its neighbours' storage chunks; with 64 MiB chunks and 1 GiB
    blocks, decoding them again doubled every block's decode work (NOTES.md). A lower halo (the
    first rows of the chunks below) of a plain zstd array is decoded from the heads of those
    chunks alone (chunk_heads). Other halo rows: a block first promises its edge rows, decodes
    its own rows, then publishes the edges; a neighbour in flight in this process waits for
    them, one that is not (or is on another worker) decodes the rows from storage. Nothing
    waits before publishing, so no two blocks wait on each other.
    """

    KEEP = 64  # entries not taken (a neighbour on another worker) are dropped oldest first

    def __init__(self):
        import collections
        import threading

        self._lock = threading.Lock()
        self._rows = collections.OrderedDict()

    def _promise(self, key):
        from concurrent.futures import Future

        with self._lock:
            fut = self._rows[key] = Future()
            while len(self._rows) > self.KEEP:
                self._rows.popitem(last=False)
        return fut

    def _take(self, key):
        with self._lock:
            return self._rows.pop(key, None)

    def read(self, run: str, src, host: np.ndarray, rows: tuple, depth: tuple):
        """Fill ``host`` with rows lo..hi of ``src``: the block's own rows r0..r1 decoded here,
        its halo rows from a neighbour's published edges where there are any. ``depth``: the
        job's halo rows (above, below), the same for every block. Returns how many halo pieces
        were decoded from whole storage chunks (0, 1 or 2)."""
        lo, r0, r1, hi = rows
        above, below = depth
        own = host[r0 - lo:r1 - lo]
        # the block above takes our first `below` rows as its lower halo (unless it decodes them
        # from the heads of our first chunks: chunk_heads), the block below our last `above`
        # rows as its upper halo
        heads = chunk_heads.plain(src)
        edges = {(run, r1 - above, r1): own[own.shape[0] - above:]}
        if not heads:
            edges[(run, r0, r0 + below)] = own[:below]
        promised = {k: self._promise(k) for k, v in edges.items() if 0 < k[2] - k[1] == v.shape[0]}
        try:
            _decode_into(src, r0, r1, own)
        except BaseException as e:
            for fut in promised.values():
                fut.set_exception(e)
            raise
        for k, fut in promised.items():
            fut.set_result(edges[k].copy())
        decoded = 0
        for a, b, dest in ((lo, r0, host[:r0 - lo]), (r1, hi, host[r1 - lo:])):
            if b <= a or (heads and a == r1 and chunk_heads.read(src, a, b, dest)):
                continue
            fut = self._take((run, a, b))
            if fut is not None:
                try:
                    np.copyto(dest, fut.result())
                    continue
                except Exception:  # noqa: BLE001 - the neighbour failed: decode the rows here
                    pass
            _decode_into(src, a, b, dest)
            decoded += 1
        return decoded


_EDGES = _EdgeRows()


# Zarr's plain zstd chunks decoded by nvCOMP a batch of blocks at a time (graph/batches.py):
# dask config ``distconv.decode-batch-bytes`` bounds a batch's rows (device memory: a process
# holds up to batches.READERS of them, decoding, and those its blocks still read).
BATCH_BYTES = 4 * 2**30
BATCH_KEY = "distconv.decode-batch-bytes"
_BATCHES = batches.Reader()


def _encoder(block, slot: int):
    """nvCOMP on a cupy block when installed; else zstd on the host's cores."""
    if is_cupy(block):
        from ..backends.cuda import zstd as gpu_zstd

        if gpu_zstd.available():
            return functools.partial(gpu_zstd.encode_frames, slot=slot)
        from ..backends.cuda import transfer

        return lambda b, n, align: backends.implementation("zstd", "encode_frames", "numpy")(transfer.to_host(b), n, align)
    return backends.implementation("zstd", "encode_frames", "numpy")


def create_output(dst: str, shape, dtype, layout: shards.Layout, attrs: dict, dims=None):
    """The job's output array (sharded as ``layout``; ``dims``: Zarr's dimension names, which
    xarray reads)."""
    import zarr

    z = zarr.create_array(dst, shape=tuple(shape), shards=layout.shard, chunks=layout.inner,
                          dtype=dtype, compressors=zarr.codecs.ZstdCodec(level=1),
                          attributes=attrs, overwrite=False, dimension_names=dims)
    if not shards.matches(z.metadata.to_dict(), layout):
        raise RuntimeError(f"zarr wrote a sharding layout distconv cannot write into: {z.metadata}")
    Location(dst).child(ownership.BLOCKS).make_dir()
    return z


def graph(job: Job, name: str, workers: list | None = None):
    """The job as dask delayed objects: one task per block (named ``name``), and their
    results tree-merged (8 at a time): (histogram counts, seconds per stage). With ``workers``
    (addresses) each worker is given one contiguous range of blocks, so neighbouring blocks
    run in one process and hand each other their edge rows (_EdgeRows); dask may still move a
    task elsewhere (allow_other_workers), which only costs that block a decode. A carried scan
    gives each block two tasks, its own scan (``name``-local, which returns its total) and
    its write, and chains the totals into each block's carry (distconv-carry): one read."""
    import dask
    from dask.base import tokenize

    n = len(job.row_blocks)
    if job.gpu:
        in_rows = (job.in_shape or job.layout.shape)[1:]  # whole input rows are decoded
        row_bytes = math.prod(in_rows) * np.dtype(job.in_dtype or job.layout.dtype).itemsize
        job = dataclasses.replace(job, batches=batches.plan(job.row_blocks, row_bytes, len(workers or [None]),
                                                            batch_bytes()))
    token = tokenize(job)
    tasks, carry = [], None
    for i in range(n):
        where = {} if not workers else {"workers": [workers[batches.worker_of(i, n, len(workers))]],
                                        "allow_other_workers": True}
        with dask.annotate(**where):
            if not job.carried:
                tasks.append(dask.delayed(run_block, pure=False)(job, i, dask_key_name=f"{name}-{token}-{i}"))
                continue
            local = dask.delayed(run_block, pure=False)(dataclasses.replace(job, part="local"), i,
                                                         dask_key_name=f"{name}-local-{token}-{i}")
            tasks.append(dask.delayed(run_block, pure=False)(dataclasses.replace(job, part="write"), i, carry, local,
                                                             dask_key_name=f"{name}-{token}-{i}"))
        if i < n - 1:
            carry = dask.delayed(_carry, pure=True)(job.scan, carry, local,
                                                    dask_key_name=f"distconv-carry-{token}-{i + 1}")
    level, depth = tasks, 0
    while len(level) > 1:
        level = [dask.delayed(_add, pure=True)(*level[k:k + 8],
                                              dask_key_name=f"distconv-merge-{token}-{depth}-{k}")
                 for k in range(0, len(level), 8)]
        depth += 1
    return tasks, level[0]


def _carry(scan, carry, local):
    """The carry into the next block: this one's (``carry``) combined with its total."""
    return scan.combine(carry, local[0])


def _add(*parts):
    """(counts, stage seconds) of several blocks added up."""
    counts = functools.reduce(np.add, [p[0] for p in parts])
    stages: dict = {}
    for _, laps in parts:
        for k, v in laps.items():
            stages[k] = stages.get(k, 0.0) + v
    return counts, stages


SHARD_MIN_BYTES = 16 * 2**20


def shard_shape(storage: tuple, shape: tuple, itemsize: int) -> tuple:
    """Output shards: the input's storage chunks, grown along axis 0 to at least
    SHARD_MIN_BYTES so every shard holds many inner chunks."""
    min_bytes = SHARD_MIN_BYTES
    shard = list(min(s, n) for s, n in zip(storage, shape))
    while math.prod(shard) * itemsize < min_bytes and shard[0] < shape[0]:
        shard[0] = min(shape[0], shard[0] * 2)
    return tuple(shard)
