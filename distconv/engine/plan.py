"""A job's plan: which blocks of which rows, the output's shard layout, and which blocks run
in this run (a rerun with resume skips the blocks whose mark is written)."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field

import numpy as np

from ..core.stencil import Stencil, merge_thin
from . import fencing, shards
from .marks import Claim
from .output import shard_shape
from .source import Source, Stored, describe, native


GPU_CHUNK_BYTES = 2**30  # a GPU task costs ~1 ms of scheduling: kernels must run longer than that
CPU_CHUNK_BYTES = 64 * 2**20


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
    run: str = field(default_factory=lambda: uuid.uuid4().hex)  # the attempt: engine.write sets the claim's run
    in_shape: tuple | None = None  # the input's; None: the output's
    window: tuple = ()           # ((start, stop), ...): the box of the input the output is; (): all of it
    edges_data: bool = False     # halos read the input beyond the window (a region's edges: data)
    scan: object = None          # a scan after the chain (core.stencil.ScanStep)
    part: str = "block"          # block: read to write; local: the block's own scan held, its total
                                 # returned; write: that scan seeded by its carry and written
    owner: Claim | None = None  # the output's claim: blocks write only while it owns it
    source: Source | None = None  # the input as planned: its fingerprint, codec pipeline, dims

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


def plan_job(stored: Stored, dst: str, st: Stencil, gpu: bool, *, scan=None, bins=(None, True), window=(),
             edges_data=False, out_chunks=None, out_inner=None) -> Job:
    """The job of ``st`` (a fused stencil chain), then ``scan`` if any, from the stored Zarr array
    ``stored`` (its path, shape, dtype, chunks and metadata document: its shards may be read
    directly) to a new sharded array at ``dst`` in the result dtype:
    blocks of ~1 GiB on GPUs, 64 MiB on CPUs, made of whole output shards (``out_chunks``, else
    the input's chunks grown to SHARD_MIN_BYTES; ``out_inner``: their inner chunks, else the
    engine's: shards.inner_shape). ``window``: ((start, stop), ...) of the input
    (a region), ``edges_data``: its halos read the data around it. ``bins``: (kernel edges,
    uniform) to count a histogram of the result in the same pass."""
    src, shape, storage_chunks, src_meta = stored.path, stored.shape, stored.chunks, stored.meta
    dtype = native(stored.dtype)  # blocks decode into native memory whatever the stored byte order
    box = tuple(window) or tuple((0, n) for n in shape)
    out_shape = tuple(b - a for a, b in box)
    out_dtype = native(scan.dtype if scan is not None else st.result_dtype(dtype))  # output= may change it
    itemsize = out_dtype.itemsize
    shard = tuple(out_chunks or shard_shape(storage_chunks, out_shape, itemsize))
    inner = tuple(out_inner) if out_inner else shards.inner_shape(shard, itemsize)
    layout = shards.Layout(out_shape, shard, inner, out_dtype.str)
    row_bytes = max(itemsize, np.dtype(dtype).itemsize) * math.prod(shape[1:])  # whole input rows are read
    target = GPU_CHUNK_BYTES if gpu else cpu_block_bytes(out_shape[0] * row_bytes, CPU_CHUNK_BYTES)
    rows = plan_rows(out_shape[0], shard[0], row_bytes, target, st.depth[0])
    rows = tuple((a + box[0][0], b + box[0][0]) for a, b in rows)
    src_layout = shards.layout_of(src_meta, shape, dtype)
    return Job(str(src), str(dst), st, layout, rows, bins[0], bins[1], gpu, src_layout,
               in_dtype=np.dtype(dtype).str, in_shape=tuple(shape), window=tuple(map(tuple, window)),
               edges_data=bool(window) and edges_data, scan=scan,
               source=describe(str(src), src_meta, stored.meta_digest))


BLOCKS_PER_WORKER = 8  # on CPUs, where the data allow: progress moves and --resume keeps work
MIN_CPU_BLOCK_BYTES = 4 * 2**20


def cpu_block_bytes(nbytes: int, most: int) -> int:
    """Bytes of a CPU block of a job reading ``nbytes``: ``most``, or less where that leaves a
    worker of the current cluster (dask's default client; one worker without) fewer than
    BLOCKS_PER_WORKER blocks, down to MIN_CPU_BLOCK_BYTES. Before, a small job gave each worker
    one block: its progress jumped from 0 to done, and Ctrl-C kept nothing for --resume."""
    import sys

    workers = 1  # no client: dask's threads in this process
    if "distributed" in sys.modules:  # else no client can exist: not worth importing it to ask
        try:
            from distributed import default_client

            from ..backends.devices import cluster_workers

            workers = len(cluster_workers(default_client())) or 1
        except (ImportError, ValueError):
            pass
    return min(most, max(MIN_CPU_BLOCK_BYTES, nbytes // (BLOCKS_PER_WORKER * workers)))


def plan_rows(n0: int, shard_rows: int, row_bytes: int, target_bytes: int, depth: tuple) -> tuple:
    """Row blocks of ~target_bytes made of whole shard rows, each thick enough for the halo."""
    per = max(1, target_bytes // max(1, row_bytes * shard_rows)) * shard_rows
    sizes = [min(per, n0 - r) for r in range(0, n0, per)]
    sizes = list(merge_thin(tuple(sizes), *depth))
    bounds = np.cumsum([0] + sizes)
    return tuple((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))


def runs(job: Job, i: int) -> bool:
    """Whether block ``i`` runs in this run (a block this job wrote is skipped unless it counts a
    histogram; every block's scan is needed for the carries)."""
    return job.part == "local" or job.edges is not None or not written(job, i)


def mark_of(job: Job, i: int):
    """Where block ``i``'s write mark lives (None for a job that owns no output)."""
    return None if job.owner is None else fencing.block_mark(job.dst, block_mark(job, i), job.owner.token)


def written(job: Job, i: int) -> bool:
    """Did this job (in this run or an interrupted one) write block ``i``?"""
    mark = mark_of(job, i)
    return mark is not None and mark.exists()


def block_mark(job: Job, i: int) -> str:
    """The mark of block ``i``: the region of the output it writes (its rows, every other axis
    whole)."""
    r0, r1 = job.row_blocks[i]
    first = job.box()[0][0]
    return fencing.block_name([(r0 - first, r1 - first)] + [(0, n) for n in job.layout.shape[1:]])
