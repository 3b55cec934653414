"""GPU-sized blocks: runs of consecutive chunks along the first axis that one task handles.

A dask task costs ~1-2 ms of scheduler and worker bookkeeping while a GPU streams a 256 MiB
chunk in ~0.1 ms, so on cupy chunks the graph builders (halos, scans, per-chunk counts) give
one task a run of chunks along axis 0 up to ``distconv.block-bytes`` (dask config, 2 GiB by
default; 0 keeps one task per chunk). The members keep their own arrays: each runs as before,
its neighbours in the run are views, and results go straight into slices of one output block
(a run along axis 0 of C-ordered chunks is a run of rows, so every slice is contiguous).
Runs never cross workers (placement is read from the scheduler), and numpy chunks never merge:
a CPU task is long next to its bookkeeping, and the cores want many of them.
"""

from __future__ import annotations

import itertools
import math

import dask.array as da
import numpy as np

from ..core import keys
from ..core.arrays import array_module, is_cupy
from ..core.stencil import accepts_out

CONFIG_KEY = keys.BLOCK_BYTES.name  # (tests and benchmarks set it by this name)


def block_bytes() -> int:
    """The run size from dask's config (bytes or a string such as "4 GiB"); 0: no runs."""
    return keys.size(keys.BLOCK_BYTES)


def block_locations(x: da.Array):
    """{} when blocks live in this process (no distributed client: every neighbour is a view),
    {block index: worker} when a distributed client holds every block in memory, None when
    placement is not known yet."""
    import sys

    if "distributed" not in sys.modules:  # no client can exist: not worth importing it to ask
        return {}
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        return {}
    try:
        who = dict(client.who_has(x))
    except Exception:  # noqa: BLE001 - an unreachable scheduler means "unknown", not an error
        return None
    located = {}
    for i in itertools.product(*(range(k) for k in x.numblocks)):
        workers = who.get((x.name,) + i)
        if not workers:
            return None
        located[i] = sorted(workers)[0]
    return located


def wants_runs(x: da.Array) -> bool:
    """Runs pay on GPU chunks only (tests set this to run the same code on numpy chunks)."""
    return is_cupy(x._meta)


def row_runs(x: da.Array, located) -> list[range] | None:
    """Runs of block rows (indices along axis 0) to give one task each, or None for one task
    per chunk: numpy chunks, placement unknown, the config at 0, or nothing to merge."""
    limit = block_bytes()
    if not limit or x.ndim == 0 or x.numblocks[0] == 1 or located is None or not wants_runs(x):
        return None
    rest = [range(k) for k in x.numblocks[1:]]
    widest = math.prod(max(c) for c in x.chunks[1:]) * x.dtype.itemsize

    def same_place(i):
        return not located or all(located[(i,) + r] == located[(i - 1,) + r] for r in itertools.product(*rest))

    runs, start, size = [], 0, 0
    for i, rows in enumerate(x.chunks[0]):
        nbytes = rows * widest
        if i > start and (size + nbytes > limit or not same_place(i)):
            runs.append(range(start, i))
            start, size = i, 0
        size += nbytes
    runs.append(range(start, x.numblocks[0]))
    return runs if len(runs) < x.numblocks[0] else None


def run_chunks(x: da.Array, runs: list[range]) -> tuple:
    """The output chunks when each run of rows is one block."""
    return (tuple(sum(x.chunks[0][i] for i in r) for r in runs),) + x.chunks[1:]


def run_into(func, arg, dest):
    """``func(arg)`` written into ``dest`` (a slice of a run's output block): by the function
    itself where it takes ``out=``, else copied."""
    if accepts_out(func):
        got = func(arg, out=dest)
        if got is dest:
            return
    else:
        got = func(arg)
    dest[...] = got


def empty_like_run(block, shape: tuple, dtype):
    """The output block of a run, on the device of its first member."""
    return array_module(block).empty(shape, dtype=np.dtype(dtype))
