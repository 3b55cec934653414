"""zstd frames of a chunk-major buffer on the CPU (numcodecs, which releases the GIL, so the
frames compress on every core at once); the fallback for backends/cuda/zstd.py."""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...core.frames import aligned_up

LEVEL = 1  # zstd level of CPU-written frames (the output's metadata records it)
_POOL = None  # one pool per process, made on first use


def _pool() -> ThreadPoolExecutor:
    """The process's codec threads: a dask worker's own thread count (its share of the node's
    cores: with every worker's pool the size of the node, many workers ran many times more
    codec threads than cores), else the process's cores."""
    global _POOL
    if _POOL is None:
        from .compiled import _threads

        _POOL = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="distconv-zstd")
    return _POOL


def _forget_pool():
    """In a forked child: a pool of its own (the parent's threads are not in it)."""
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pieces(block, frame_nbytes: int) -> list:
    """``block``'s frames in its C order: slices of its bytes where it is contiguous; of a
    strided view (a block in chunk-major order not copied: shards.chunk_major), each the view's
    trailing axes that hold ``frame_nbytes``, gathered by the thread that compresses it (one
    copy of a block on every core, not all of it on one first)."""
    k = block.ndim
    while k > 0 and math.prod(block.shape[k - 1:]) * block.itemsize <= frame_nbytes:
        k -= 1
    if block.flags.c_contiguous or math.prod(block.shape[k:]) * block.itemsize != frame_nbytes:
        raw = np.ascontiguousarray(block).view(np.uint8).reshape(-1)
        return [raw[i:i + frame_nbytes] for i in range(0, raw.size, frame_nbytes)]
    return [block[idx] for idx in np.ndindex(*block.shape[:k])]


def encode_frames(block, frame_nbytes: int, align: int = 1) -> tuple:
    """``block`` (contiguous, or a view whose trailing axes are frames) cut into frames of
    ``frame_nbytes``, each compressed, then laid end to end in one buffer: (buf, starts, sizes),
    frame i is ``buf[starts[i]:starts[i] + sizes[i]]``, every start a multiple of ``align``
    bytes, zero bytes between, ``buf`` ending at the last frame's padded end (the shard writer
    passes the GPU decoder's alignment)."""
    from numcodecs import Zstd

    codec = Zstd(level=LEVEL)
    frames = list(_pool().map(lambda f: codec.encode(np.ascontiguousarray(f)), _pieces(block, frame_nbytes)))
    sizes = np.array([len(f) for f in frames], dtype=np.int64)
    padded = aligned_up(sizes, align)
    starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    buf = np.zeros(max(int(padded.sum()), 1), dtype=np.uint8)

    def place(i: int) -> None:  # numpy copies without the GIL: the frames move on every core
        buf[starts[i]:starts[i] + sizes[i]] = np.frombuffer(frames[i], dtype=np.uint8)

    list(_pool().map(place, range(len(frames))))
    return buf[:int(padded.sum())], starts, sizes


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
