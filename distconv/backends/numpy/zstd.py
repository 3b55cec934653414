"""zstd frames of a chunk-major buffer on the CPU (numcodecs, which releases the GIL, so the
frames compress on every core at once); the fallback for backends/cuda/zstd.py."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LEVEL = 1  # zstd level of CPU-written frames (the output's metadata records it)
_POOL = None  # one pool per process, made on first use


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 4, thread_name_prefix="distconv-zstd")
    return _POOL


def encode_frames(block, frame_nbytes: int) -> list:
    """``block`` (contiguous) cut into frames of ``frame_nbytes``, each compressed: a list of
    bytes-like objects in order."""
    from numcodecs import Zstd

    codec = Zstd(level=LEVEL)
    raw = np.ascontiguousarray(block).view(np.uint8).reshape(-1)
    frames = [raw[i:i + frame_nbytes] for i in range(0, raw.size, frame_nbytes)]
    return list(_pool().map(codec.encode, frames))


def decode_frames(buf, starts, sizes, frame_nbytes: int, dtype):
    """Frames ``buf[starts[i]:starts[i] + sizes[i]]`` back into one contiguous 1-D array of
    ``dtype`` (each frame decodes to ``frame_nbytes``)."""
    from numcodecs import Zstd

    codec = Zstd()
    out = np.empty(len(starts) * frame_nbytes, dtype=np.uint8)
    jobs = [(buf[int(a):int(a) + int(n)], out[i * frame_nbytes:(i + 1) * frame_nbytes])
            for i, (a, n) in enumerate(zip(starts, sizes))]
    list(_pool().map(lambda fv: codec.decode(fv[0], out=fv[1]), jobs))
    return out.view(dtype)
