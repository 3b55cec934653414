"""Whether the workers' memory_limit can hold a job's blocks, asked once the job is planned and
before the output is claimed: a limit too small for the blocks a worker runs at once has
distributed restart the worker without end (KilledWorker after a flood of its log)."""

from __future__ import annotations

import math

import numpy as np

WORKER_BASE = 250 * 10**6  # a worker process before its first block
PER_BLOCK = 3  # a CPU block holds about 3.4x its bytes at its peak (rows with halos, result, a pass's copy)
USABLE = 0.95  # the share of memory_limit at which distributed's nanny ends the worker


def memory_problem(job, workers: dict) -> str | None:
    """Why the workers (scheduler_info()'s ``workers``: each one's memory_limit and nthreads)
    cannot run the engine's CPU ``job``, naming the key, the value, the block size and what to
    do; None where they can (or have no limit, or the blocks run on GPUs)."""
    from ..core import keys
    from ..engine.job import block_bytes

    if job is None or job.gpu or not workers or not job.row_blocks:
        return None
    rows = max(r1 - r0 for r0, r1 in job.row_blocks)
    block = max(max(block_bytes(job)), rows * math.prod(job.layout.shape[1:]) * np.dtype(job.layout.dtype).itemsize)
    worst = None
    for w in workers.values():
        limit, threads = int(w.get("memory_limit") or 0), int(w.get("nthreads") or 1)
        # a CPU worker runs a block per thread, or per slot where distconv.io-slots sets fewer
        at_once = min(keys.positive(keys.IO_SLOTS, threads), threads, len(job.row_blocks))
        need = WORKER_BASE + at_once * PER_BLOCK * block
        if limit and need > USABLE * limit and (worst is None or limit < worst[0]):
            worst = (limit, threads, at_once, need)
    if worst is None:
        return None
    limit, threads, at_once, need = worst
    fit = int((USABLE * limit - WORKER_BASE) // (PER_BLOCK * block))
    fix = f"raise the cluster's memory_limit to at least {size_text(need / USABLE)}"
    fix += f" or lower threads_per_worker to {fit}" if 1 <= fit < threads else ""
    return (f"cluster key 'memory_limit' is {size_text(limit)} per worker, too little for this job's blocks: "
            f"{size_text(block)} each, a worker runs {at_once} at once (threads_per_worker {threads}) at about "
            f"{PER_BLOCK}x a block's bytes, {size_text(need)} with the worker's own; {fix}")


def size_text(n: float) -> str:
    """Bytes as a user reads them: '67.1 MB' (powers of 1000, as memory_limit's sizes)."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
