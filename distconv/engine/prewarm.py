"""A GPU worker's one-time costs, paid as it starts instead of inside its first blocks.

A fresh worker's first blocks page-lock their staging buffers (each I/O slot's encoded frames,
~1 GiB; the batch reader's two file pieces) and make nvCOMP's first calls. On one H200 the first
two blocks of a cold 8 GiB job spent 1.0-1.5 s in their encode against 0.25 s for later ones,
and the first batch 0.6 s against 0.1 s in its upload (NOTES.md, 2026-11-24): page-locking
serializes with the job's own CUDA calls. A GPU worker of a cluster distconv starts
(session.cluster.make_cluster) runs ``warm`` in a thread from its start, beside its registration with
the scheduler and the client's submission of the job; the blocks then find the buffers in place
(the device object's staging hands one buffer per key, allocated once). dask config
``distconv.prewarm``: False turns it off (a worker that will run no engine job holds ~2.5 GiB
of pinned host memory and up to 40 GiB of device memory in cupy's pool that it does not need).
"""

from __future__ import annotations

import threading

import numpy as np


def dask_setup(worker):
    """distributed's preload hook: start the warm-up beside the worker's own start."""
    from .config import prewarm_enabled

    if prewarm_enabled():
        threading.Thread(target=warm, name="distconv-prewarm", daemon=True).start()


def warm():
    """Page-lock the staging a GPU block uses and make nvCOMP's first calls; any failure is
    left for the first block to meet (this is only a head start)."""
    try:
        from ..backends.device import device
        from . import batches, config, shards
        from .plain_chunks import PIECE_BYTES
        from .storage import GPU_CHUNK_BYTES

        gpu = device(True)
        if not gpu.frames:
            return
        # in the order a job's first block needs them: its batch's files go through the pieces
        # (a cold job's first batch waited ~1 s for them behind the rest of this warm-up), then
        # nvCOMP decodes, later the block encodes into its slot's buffer
        for k in range(2):  # a piece ends at the first file boundary past PIECE_BYTES
            gpu.staging((batches.PIECES, k), (PIECE_BYTES + PIECE_BYTES // 4,), np.uint8, name="pieces")
        gpu.warm_frames(shards.INNER_BYTES, shards.FRAME_ALIGN)
        # the device memory of the batches in flight (each its files and its rows) and of the
        # blocks' device stages, kept by cupy's pool
        gpu.reserve(batches.READERS * 2 * config.batch_bytes() + 4 * config.io_slots(True) * GPU_CHUNK_BYTES)
        for slot in range(config.io_slots(True)):
            gpu.staging(slot, (GPU_CHUNK_BYTES,), np.uint8, name="encoded")
    except Exception:  # noqa: BLE001 - the first blocks pay these costs instead
        pass
