"""CUDA plumbing: kernel sources, compilation, constant-memory slots, launch structs.

Nothing here imports cupy at import time; it is imported on the worker when a cupy block runs.
"""

from __future__ import annotations

import functools

import numpy as np


def oom_message(shape, dtype, free: int, total: int) -> str:
    """What to tell a user whose chunk did not fit: its size, the GPU's memory, a chunk to try."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    # input + output + halos/intermediates: aim for a chunk of a quarter of the free memory
    target = max(free // 4, 1)
    scale = (target / max(nbytes, 1)) ** (1 / max(len(shape), 1))
    suggest = tuple(max(1, int(s * min(scale, 1.0))) for s in shape)
    return (f"GPU out of memory on a chunk of shape {tuple(shape)} {np.dtype(dtype)} "
            f"({nbytes / 2**30:.2f} GiB); the GPU has {free / 2**30:.2f} GiB free of "
            f"{total / 2**30:.2f} GiB. Rechunk to about {suggest} (~{target / 2**30:.2f} GiB per chunk).")


def guard_memory(fn):
    """Turn cupy's out-of-memory error on a chunk into a MemoryError that says what to do."""

    @functools.wraps(fn)
    def wrapper(block, *args, **kwargs):
        import cupy

        try:
            return fn(block, *args, **kwargs)
        except cupy.cuda.memory.OutOfMemoryError:
            centre = getattr(block, "centre", block)
            free, total = cupy.cuda.runtime.memGetInfo()
            raise MemoryError(oom_message(centre.shape, centre.dtype, free, total)) from None

    return wrapper
