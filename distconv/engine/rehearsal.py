"""A job's GPU kernels built before its blocks ask for them.

CuPy compiles a kernel at its first launch in a process (NVRTC) and keeps the binary in its kernel
cache (backends.cuda.loader.cache_dir), which every process of the node reads. On a fresh node every
worker of a new cluster compiled the same kernels at once inside its first blocks, which made a
first job several times slower than the same job with the cache filled. ``rehearse`` runs the device
stage of a job's first block on zeros — the chain, the scan and its carry, the histogram, the encode
— in a process of its own that `distconv run` starts while its cluster starts
(session.builds.KernelBuilds), so the blocks find every kernel they launch in the cache.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..backends.device import device
from ..core.arrays import to_host
from . import chunk_heads, plain_chunks, shards
from .job import block_rows, device_stage
from .plan import Job
from .read import input_array
from .slots import Clock

MARKS = "distconv-rehearsed"  # the kernel cache's folder of rehearsed jobs' marks


def rehearse(job: Job) -> dict:
    """Block 0's device stage of ``job`` on zeros of its exact shape and dtype, on this process's
    GPU: {"built": kernels added to the node's cache, "seconds": how long it took}. (Its parts
    run one after another: with the chain and the encode in threads of their own, the blocks
    still built a kernel of the chain that the rehearsal had not.)"""
    dev = device(True)
    dev.zeros((1,), np.uint8)  # the CUDA context first, once
    before, t = dev.kernels_cached(), time.perf_counter()
    rows = block_rows(job, 0)
    step = dataclasses.replace(job, part="local") if job.carried else job  # its scan's total too
    out, total = device_stage(step, _rows_on_device(job, rows, dev), rows, Clock(True))
    if total is not None:  # the seed by a carry
        out = job.scan.seed(out, job.scan.combine(None, to_host(total)))
    if job.edges is not None:
        from .. import backends

        backends.counts(out, job.edges, job.uniform)
    shards.encode_block(job.layout, out, dev.encoder(0))
    dev.sync()
    return {"built": dev.kernels_cached() - before, "seconds": round(time.perf_counter() - t, 2)}


def rehearse_once(job: Job) -> dict:
    """rehearse(job) unless this node rehearsed a job of the same kernels before (a mark in the
    kernel cache: the job without its paths and run, the input's codecs, the kernel sources,
    the compiler and the GPU's architecture; clearing the cache clears the marks), then mark it:
    {"built", "seconds", "skipped"}."""
    import hashlib
    from pathlib import Path

    folder, build = device(True).kernel_cache()
    codecs = input_array(job).metadata.to_dict().get("codecs")
    what = repr((dataclasses.replace(job, src="", dst="", run="", owner=None, batches=(), source=None), codecs, build))
    mark = Path(folder) / MARKS / hashlib.sha256(what.encode()).hexdigest()[:32]
    if mark.exists():
        return {"built": 0, "seconds": 0.0, "skipped": True}
    done = rehearse(job)
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    return {**done, "skipped": False}


def _rows_on_device(job: Job, rows: tuple, dev):
    """Zeros as the rows lo..hi of block 0 reach the device: for zarr's plain zstd chunks, which
    the GPU decodes in batches, cut from their decoded chunk rows (plain_chunks.gather: its
    strided copies are kernels too); else as one array."""
    lo, hi = rows[0], rows[3]
    shape, dtype = tuple(job.in_shape or job.layout.shape), np.dtype(job.in_dtype or job.layout.dtype)
    src = input_array(job)
    if not (dev.frames and job.src_layout is None and chunk_heads.plain(src)):
        return dev.zeros((hi - lo,) + shape[1:], dtype)
    chunks = tuple(src.chunks)
    layout = shards.Layout(shape, chunks, chunks, dtype.str)
    k1 = -(-hi // chunks[0])  # the chunk rows from the first to the one holding row hi - 1
    elems = math.prod(layout.shard_grid(1)[1:]) * math.prod(chunks)
    empty = np.zeros(0, np.int64)
    decoded = plain_chunks.Chunks((), empty, empty, 0, min(k1 * chunks[0], shape[0]), layout)
    return plain_chunks.gather([(dev.zeros((k1 * elems,), dtype), decoded, lo, hi)], lo, hi)
