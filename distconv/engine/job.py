"""Zarr in, a stencil chain, Zarr out: one task per block, from read to write.

Blocks are slabs along axis 0 made of whole output shards. A block's task reads its rows plus
the chain's halo straight from the input store (so it needs no neighbour task and nothing
travels between workers), moves them to the GPU where the worker has one, runs the fused
stencil on a Tile whose halo pieces are views of that one buffer, optionally counts a
histogram of the result, and writes its own shards (encoded with nvCOMP on the GPU when
available, else zstd on every CPU core). Reads go through zarr, with the zarrs Rust codec
pipeline when it is installed, or straight from the input's shard files when nvCOMP decodes
them, or (zarr's plain zstd chunks, with nvCOMP) from device memory that a batch of the
worker's blocks was decoded into ahead of them (engine/batches.py). A task runs in three
stages (read, device, write) and a process keeps settings.io_slots() blocks in flight,
settings.device_blocks() of them at a time on its device, so the stages of different blocks overlap. A per-block mark
makes a rerun with resume skip finished blocks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import time

import numpy as np

from .. import backends
from ..backends.device import device
from ..core.arrays import array_module, to_host
from ..core.tile import Tile
from ..core.ops import FAN_IN
from . import batches, carries, fencing, settings, shards
from .plan import Job, block_mark, runs, written
from .read import fetch, resumed, to_device
from .slots import Clock, device_turn
from .slots import slots as process_slots


def run_block(job: Job, i: int, carry=None, local=None):
    """One block end to end, in one of the process's I/O slots. Returns (histogram counts or an
    empty array, seconds per stage: waiting for a slot, reading, waiting for the device,
    decode or upload, kernels, histogram, encode, file writes, its spans), the stages timed
    with the GPU synced; its spans: [(worker, start, end, part)], when it ran (epoch seconds,
    from its slot to its end; the run's timeline, ``timeline``). A carried scan runs a block in
    two parts: ``local`` (its own scan held here; returns (its total, seconds, spans)), then
    ``write`` (``carry``: the blocks' before it; ``local``: what the first part returned, whose
    spans it returns with its own)."""
    spans = list(local[2]) if local is not None else []
    if resumed(job) and not runs(job, i):
        carries.held().pop((job.run, i))
        return np.zeros(0, dtype=np.int64), {}, spans
    clock = Clock(job.gpu)
    if local is not None:
        for stage, t in local[1].items():
            clock.count(stage, t)
    slots = process_slots(job.gpu)
    slot = slots.get(i)
    clock.lap("slot wait")
    start = time.time()
    from .dashboard import tell_block  # (imports distributed: on a worker, not in a client's check)

    tell_block(job.run, i, "start")  # the page: running from here, not since dask sent it
    try:
        result, laps = _run_block(job, i, slot, clock, carry)
    finally:
        slots.put(slot)
    if job.part != "local":  # a carried scan's block ends with its write (its laps hold both parts')
        tell_block(job.run, i, "end", laps)
    return result, laps, spans + [(_worker(), start, time.time(), job.part)]


def _worker() -> str:
    """The name of the dask worker running this block ("local": dask's threads here)."""
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return "local"


def block_bytes(job: Job) -> list:
    """The bytes of input each block's rows are (whole input rows are read).

    Parameters
    ----------
    job : Job
        The engine's job.

    Returns
    -------
    list of int
        One number per block, in block order.
    """
    row = math.prod((job.in_shape or job.layout.shape)[1:]) * np.dtype(job.in_dtype or job.layout.dtype).itemsize
    return [int((r1 - r0) * row) for r0, r1 in job.row_blocks]


def timeline(job: Job, blocks: list, start: float) -> list:
    """When the job's blocks ran, from what their tasks returned (run_block's spans).

    Parameters
    ----------
    job : Job
        The engine's job.
    blocks : list
        The block tasks' results, in block order (engine.write's first result).
    start : float
        When the job was submitted (epoch seconds).

    Returns
    -------
    list of list
        ``[worker, start, end, bytes]`` per task that ran a block, by start: the worker's name
        ("local" for dask's threads in this process), seconds since ``start``, the bytes of
        input it read (a carried scan's write part reads none; a block this run skipped has
        no entry).
    """
    out = []
    for nbytes, result in zip(block_bytes(job), blocks):
        for worker, t0, t1, part in result[2]:
            out.append([worker, round(t0 - start, 6), round(t1 - start, 6), 0 if part == "write" else nbytes])
    return sorted(out, key=lambda e: e[1])


def _run_block(job: Job, i: int, slot: int, clock, carry=None):
    lo, r0, r1, hi = block_rows(job, i)
    write = job.part != "local" and not (resumed(job) and written(job, i))
    out = carries.held().pop((job.run, i)) if job.part == "write" else None
    if out is None:
        # a write part whose held scan was dropped reads through zarr, not its batch again
        reading = job if job.part != "write" else dataclasses.replace(job, batches=())
        fetched = fetch(reading, i, (lo, r0, r1, hi), slot, clock)
    with device_turn(job.gpu, slot, clock):
        total = None
        if out is None:
            out, total = _result(job, fetched, (lo, r0, r1, hi), clock)
            del fetched
        if job.part == "local":
            carries.held().put((job.run, i), out, settings.held_bytes(job.gpu))
            return to_host(total), clock.laps
        if carry is not None:
            out = job.scan.seed(out, carry)
            clock.lap("carry")
        counts = np.zeros(0, dtype=np.int64)
        if job.edges is not None:
            counts = to_host(backends.counts(out, job.edges, job.uniform))
            clock.lap("histogram")
        if write:
            encoded = shards.encode_block(job.layout, out, device(job.gpu).encoder(slot))
            clock.lap("encode")
        del out
    if write:
        with fencing.block_write(job.owner, job.dst, block_mark(job, i), f"block {i}") as aside:
            shards.write_encoded(job.dst, job.layout, encoded, r1 - r0, r0 - job.box()[0][0], into=aside)
        clock.lap("write files")
    return counts, clock.laps


def block_rows(job: Job, i: int) -> tuple:
    """(lo, r0, r1, hi): block ``i``'s rows r0..r1 and, around them, the rows its halo reads."""
    r0, r1 = job.row_blocks[i]
    (first, n0), (lo_h, hi_h) = job.row_limits(), job.stencil.depth[0]
    return max(first, r0 - lo_h), r0, r1, min(n0, r1 + hi_h)


def _result(job: Job, fetched, rows: tuple, clock):
    """A block's result on its device from its ``fetched`` rows (``rows`` = (lo, r0, r1, hi)):
    the chain, then the scan without the carry of the blocks before it: (result, its scan
    total along axis 0 for a local part, else None)."""
    ext = to_device(job, fetched, rows[0], rows[3], clock)
    return device_stage(job, ext, rows, clock)


def device_stage(job: Job, ext, rows: tuple, clock):
    """_result's work once the rows lo..hi are on the device as ``ext`` (what rehearse runs)."""
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


def task_prefix(job: Job, name: str | None = None) -> str:
    """What the job's tasks are called on the dashboard (dask's ``key_split`` of their keys):
    its steps (``name``, else ``job.name``) without "distconv-", then a three-letter tag of its
    run, ``gaussian-median-kqb``. dask shows a name over 15 characters as its first 12 and
    "...", so the steps come first; the tag makes two jobs of the same steps at once two bars.
    ``key_split`` keeps a word after the first only when it is letters and not 8 of them
    starting a-f (a hex token): any other word is joined to the one before it with "_".

    Parameters
    ----------
    job : Job
        The engine's job (its ``run`` gives the tag).
    name : str, optional
        The steps' name, ``job.name`` by default.

    Returns
    -------
    str
        The prefix every task of the job carries (blocks ``<prefix>-<token>-<i>``, a carried
        scan's ``scan_<prefix>-...`` and ``carry_<prefix>-...``, merges ``merge_<prefix>-...``:
        joined to the first word, which key_split keeps whatever it is).
    """
    words = [w for w in re.split(r"[^A-Za-z0-9_]+", (name or job.name).removeprefix("distconv-")) if w] or ["job"]
    if not words[0][0].isalpha():
        words[0] = "job_" + words[0]
    kept = [words[0]]
    for w in words[1:]:
        if _whole_word(w):
            kept.append(w)
        else:
            kept[-1] += "_" + w
    return "-".join(kept + [run_tag(job.run)])


def run_tag(run: str) -> str:
    """Three lowercase letters read off a run's hex id (``Job.run``): one job's tag."""
    n = int(run[:8], 16) if re.fullmatch(r"[0-9a-fA-F]{8,}", run or "") else abs(hash(run))
    return "".join(chr(ord("a") + (n // 26 ** k) % 26) for k in range(3))


def _whole_word(word: str) -> bool:
    """Does dask's key_split keep ``word`` after a key's first word?"""
    return word.isalpha() and word.isascii() and not (len(word) == 8 and word[0] in "abcdef")


def graph(job: Job, name: str, workers: list | None = None):
    """The job as dask delayed objects: one task per block (named task_prefix(job, ``name``):
    the steps and the run's tag), and their results tree-merged (8 at a time): (histogram
    counts, seconds per stage). With ``workers``
    (addresses) each worker is given one contiguous range of blocks, so neighbouring blocks
    run in one process and hand each other their edge rows (read.EdgeRows); dask may still move a
    task elsewhere (allow_other_workers), which only costs that block a decode. A carried scan
    gives each block two tasks, its own scan (scan_..., which returns its total) and its
    write, and chains the totals into each block's carry (carry_...): one read."""
    import dask
    from dask.base import tokenize

    n = len(job.row_blocks)
    name = task_prefix(job, name)
    # each worker's range of blocks (the GPU decodes them in batches; on CPUs the ranges say
    # which neighbours run on another worker: read.PeerEdges hands them their halo rows)
    in_rows = (job.in_shape or job.layout.shape)[1:]  # whole input rows are decoded
    row_bytes = math.prod(in_rows) * np.dtype(job.in_dtype or job.layout.dtype).itemsize
    job = dataclasses.replace(job, batches=batches.cut_batches(job.row_blocks, row_bytes, len(workers or [None]),
                                                               settings.batch_bytes()))
    token = tokenize(job)
    tasks, carry = [], None
    for i in range(n):
        # a worker's blocks waiting for a thread run lowest first (those it starts at once are
        # the ones that reach it first, in no set order: the Reader starts batches for that)
        where = {"priority": n - i}
        if workers:
            where |= {"workers": [workers[batches.worker_of(i, n, len(workers))]], "allow_other_workers": True}
        with dask.annotate(**where):
            if not job.carried:
                tasks.append(dask.delayed(run_block, pure=False)(job, i, dask_key_name=f"{name}-{token}-{i}"))
                continue
            local = dask.delayed(run_block, pure=False)(dataclasses.replace(job, part="local"), i,
                                                         dask_key_name=f"scan_{name}-{token}-{i}")
            tasks.append(dask.delayed(run_block, pure=False)(dataclasses.replace(job, part="write"), i, carry, local,
                                                             dask_key_name=f"{name}-{token}-{i}"))
        if i < n - 1:
            carry = dask.delayed(carries.carry, pure=True)(job.scan, carry, local,
                                                    dask_key_name=f"carry_{name}-{token}-{i + 1}")
    level, depth = tasks, 0
    while len(level) > 1:
        level = [dask.delayed(_add, pure=True)(*level[k:k + FAN_IN],
                                              dask_key_name=f"merge_{name}-{token}-{depth}-{k}")
                 for k in range(0, len(level), FAN_IN)]
        depth += 1
    return tasks, level[0]


def _add(*parts):
    """(counts, stage seconds) of several blocks (or merges) added up."""
    counts = functools.reduce(np.add, [p[0] for p in parts])
    stages: dict = {}
    for p in parts:
        for k, v in p[1].items():
            stages[k] = stages.get(k, 0.0) + v
    return counts, stages
