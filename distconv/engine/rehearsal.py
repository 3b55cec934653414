"""A job's GPU kernels built before its blocks ask for them.

CuPy compiles a kernel at its first launch in a process (NVRTC) and keeps the binary in its kernel
cache (backends.cuda.loader.cache_dir), which every process of the node reads. On a fresh node every
worker of a new cluster compiled the same kernels at once inside its first blocks, which made a
first job several times slower than the same job with the cache filled. ``rehearse`` runs the device
stage of a job's first block on zeros — the chain, the scan and its carry, the histogram, the encode
— in a process of its own that `distconv run` starts while its cluster starts
(session.builds.KernelBuilds), so the blocks find every kernel they launch in the cache.

A kernel found in the cache is still loaded at its first launch in each process, and a load
while the device runs other blocks waits for them (~0.1 s on an H200, in every I/O slot of a
worker's first job): ``prepare`` runs the same stage once in every worker process before a job
of new kernels, while its device is idle.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time

import numpy as np

from ..backends.device import device
from ..core.arrays import to_host
from . import chunk_heads, plain_chunks, shards
from .job import block_rows, device_stage
from .plan import Job
from .read import input_array
from .slots import Clock, device_turn

MARKS = "distconv-rehearsed"  # the kernel cache's folder of rehearsed jobs' marks


# this process's jobs whose stage ran here (their kernels' identity), the newest LAUNCHED_KEPT
_launched: dict = {}
_launched_lock = threading.Lock()
LAUNCHED_KEPT = 1024
BUILD_WAIT_S = 60.0  # longest a worker waits for its host's build of a job's kernels
BUILD_START_S = 2.0  # how long it waits for that build to start (all are submitted at once)


def rehearse(job: Job, build: bool = True) -> dict:
    """Block 0's device stage of ``job`` on zeros of its exact shape and dtype, on this process's
    GPU (in a turn of the device as a block takes one, on I/O slot 0's stream: in a worker,
    blocks of another job may be running beside it): {"built": kernels added to the node's
    cache, "seconds": how long it took}. A ``build`` (of the node's cache) also runs the
    kernels every worker's warm-up loads (prewarm.py) and the encode; without it, this
    process's launch of the job's own kernels is all: the chain's and the encode's reorder (the
    warm-up made the rest). (Its parts run one after another: with the chain and the encode in
    threads of their own, the blocks still built a kernel of the chain that the rehearsal had
    not.)"""
    dev = device(True)
    dev.zeros((1,), np.uint8)  # the CUDA context first, once
    before, t = dev.kernels_cached(), time.perf_counter()
    if build:
        dev.warm_kernels()
    clock = Clock(True)
    with device_turn(True, 0, clock):
        rows = block_rows(job, 0)
        step = dataclasses.replace(job, part="local") if job.carried else job  # its scan's total too
        out, total = device_stage(step, _rows_on_device(job, rows, dev), rows, clock)
        if total is not None:  # the seed by a carry
            out = job.scan.seed(out, job.scan.combine(None, to_host(total)))
        if job.edges is not None:
            from .. import backends

            backends.counts(out, job.edges, job.uniform)
        if build:  # into pinned memory of its own: a block of another job may hold slot 0's
            shards.encode_block(job.layout, out, dev.encoder(None))
        else:  # the encode's reorder: its copy kernel is by the block's shape (nvCOMP's the warm-up loaded)
            shards.chunk_major(out, job.layout)
        dev.sync()
    return {"built": dev.kernels_cached() - before, "seconds": round(time.perf_counter() - t, 2)}


def _kernels_of(job: Job) -> str:
    """What a job's kernels depend on: the job without its paths, run and claim, and the
    input's codecs (plain zstd chunks are cut from decoded batches by kernels of their own): a
    digest."""
    import hashlib

    codecs = input_array(job).metadata.to_dict().get("codecs")
    what = repr((dataclasses.replace(job, src="", dst="", run="", owner=None, batches=(), source=None), codecs))
    return hashlib.sha256(what.encode()).hexdigest()


def prepare(job: Job, build: bool) -> dict:
    """(On a worker, before the job's blocks.) The job's kernels built into the node's cache
    where ``build`` (rehearse_once: one worker a host; the others wait for that build, so that
    they load what it built instead of each compiling it) and launched once in this process
    (rehearse, not a build; nothing where a job of the same kernels ran here): {"built",
    "seconds", "skipped": the node had them built}."""
    done, key = {"built": 0, "seconds": 0.0, "skipped": True}, _kernels_of(job)
    if build:
        done = rehearse_once(job, _mark(key))
    elif key not in _launched:
        _wait_for_build(_mark(key))
    if key not in _launched and done["skipped"]:  # (a build here launched them)
        rehearse(job, build=False)
    with _launched_lock:
        _launched[key] = True
        while len(_launched) > LAUNCHED_KEPT:
            del _launched[next(iter(_launched))]
    return done


def rehearse_once(job: Job, mark=None) -> dict:
    """rehearse(job) unless this node rehearsed a job of the same kernels before (its ``mark``,
    default ``_mark``), then mark it: {"built", "seconds", "skipped"}. A file beside the mark
    says while it builds."""
    mark = _mark(_kernels_of(job)) if mark is None else mark
    if mark.exists():
        return {"built": 0, "seconds": 0.0, "skipped": True}
    mark.parent.mkdir(parents=True, exist_ok=True)
    building = mark.with_suffix(".building")
    building.touch()
    try:
        done = rehearse(job)
        mark.touch()
    finally:
        building.unlink(missing_ok=True)
    return {**done, "skipped": False}


def _wait_for_build(mark):
    """Return once ``mark`` exists, or no build of it runs on this node: none started within
    BUILD_START_S, it ended without the mark (it failed), or it has run BUILD_WAIT_S (a builder
    that died leaves its file: one older than that is not waited for)."""
    building = mark.with_suffix(".building")
    start = time.monotonic()
    while not mark.exists():
        try:
            running = time.time() - building.stat().st_mtime < BUILD_WAIT_S
        except FileNotFoundError:
            running = False
        waited = time.monotonic() - start
        if waited > BUILD_WAIT_S or not (running or waited < BUILD_START_S):
            return
        time.sleep(0.05)


def _mark(kernels: str):
    """The node's mark of a rehearsed job, in its kernel cache: named by the job's kernels
    (``_kernels_of``), the kernel sources, the compiler and the GPU's architecture (clearing
    the cache clears the marks)."""
    import hashlib
    from pathlib import Path

    folder, build = device(True).kernel_cache()
    what = repr((kernels, build))
    return Path(folder) / MARKS / hashlib.sha256(what.encode()).hexdigest()[:32]


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
