"""A GPU worker's one-time costs, paid as it starts instead of inside its first blocks.

A fresh worker's first blocks page-lock their staging buffers (each I/O slot's encoded frames,
~1 GiB; the batch reader's two file pieces) and make nvCOMP's first calls. On one H200 the first
two blocks of a cold 8 GiB job spent 1.0-1.5 s in their encode against 0.25 s for later ones,
and the first batch 0.6 s against 0.1 s in its upload (NOTES.md, 2026-11-24): page-locking
serializes with the job's own CUDA calls. A GPU worker of a cluster distconv starts
(cluster.make_cluster) runs ``warm`` in a thread from its start, beside its registration with
the scheduler and the client's submission of the job; the blocks then find the buffers in place
(transfer.staging hands one buffer per key, allocated once). dask config ``distconv.prewarm``:
False turns it off (a worker that will run no engine job holds ~2.5 GiB of pinned host memory
and up to 40 GiB of device memory in cupy's pool that it does not need).
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
        import cupy

        from ..backends.cuda import transfer, zstd
        from . import batches, config, shards
        from .plain_chunks import PIECE_BYTES
        from .storage import GPU_CHUNK_BYTES

        if not zstd.available():
            return
        # in the order a job's first block needs them: its batch's files go through the pieces
        # (a cold job's first batch waited ~1 s for them behind the rest of this warm-up), then
        # nvCOMP decodes, later the block encodes into its slot's buffer
        for k in range(2):  # a piece ends at the first file boundary past PIECE_BYTES
            transfer.staging((batches.PIECES, k), "pieces", PIECE_BYTES + PIECE_BYTES // 4)
        frame = shards.INNER_BYTES
        encoded = zstd.encode_frames(cupy.zeros(frame, cupy.uint8), frame, shards.FRAME_ALIGN)
        zstd.decode_frames(*encoded, frame, np.uint8)
        # the device memory of the batches in flight (each its files and its rows) and of the
        # blocks' device stages, taken from the driver and touched once (a fresh 4 GiB took
        # ~0.2 s at its first write on an H200), then kept by cupy's pool
        free, _ = cupy.cuda.runtime.memGetInfo()
        want = batches.READERS * 2 * config.batch_bytes() + 4 * config.io_slots(True) * GPU_CHUNK_BYTES
        reserve = cupy.empty(min(want, free // 2), dtype=cupy.uint8)
        reserve.fill(0)
        del reserve
        cupy.cuda.Device().synchronize()
        for slot in range(config.io_slots(True)):
            transfer.staging(slot, "encoded", GPU_CHUNK_BYTES)
    except Exception:  # noqa: BLE001 - the first blocks pay these costs instead
        pass
