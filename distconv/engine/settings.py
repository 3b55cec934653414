"""The engine's settings: its dask config keys (declared with their defaults in core/keys.py)
read where a block runs (so a worker reads its own config), and zarr's settings for the arrays
the engine opens. Each key's value is checked when read: a bad one raises naming the key."""

from __future__ import annotations

import functools

from ..core import keys

# Blocks in flight per worker process on a GPU (keys.IO_SLOTS): a block's task is three stages,
# read (shard files, or zarr decoding on the CPU, into the slot's pinned staging), device (upload
# or nvCOMP decode, the stencil, nvCOMP encode, download; keys.DEVICE_BLOCKS at a time, each on
# its slot's stream) and write (shard files), so the stages of different blocks overlap. Each slot
# owns its pinned staging buffers and stream. Read once per process, at its first block.
IO_SLOTS = keys.IO_SLOTS.fallback(gpu=True)
# A carried scan's blocks held between their two tasks (engine/carries.py).
HOLD_KEY = keys.SCAN_HOLD_BYTES.name
# The GIL switch interval of a process running blocks. A thread back from a blocking call
# (a stream wait, a copy, a file read) waits until the thread holding the GIL lets go, up to
# one interval; the device stage makes ~30 such calls per block, so beside a busy Python thread
# Python's default 5 ms slows it markedly, while 0.2 ms runs it as fast as alone.
SWITCH_INTERVAL_S = 2e-4


def io_slots(gpu: bool = True) -> int:
    """Blocks in flight per process: IO_SLOTS on a GPU, one per thread of the process on CPUs
    (there every stage of a block runs on its own thread: fewer slots leave cores idle)."""
    return keys.positive(keys.IO_SLOTS, IO_SLOTS if gpu else _threads())


def device_blocks() -> int:
    """Blocks in their device stage at once per process."""
    return keys.positive(keys.DEVICE_BLOCKS)


def batch_bytes() -> int:
    """Most bytes of rows decoded in one nvCOMP batch."""
    return keys.positive(keys.DECODE_BATCH_BYTES)


def held_bytes(gpu: bool = False) -> int:
    """Bytes of blocks' scans a process holds between their two parts (8 GiB of device memory
    on a GPU, 1 GiB on a CPU)."""
    return keys.positive(keys.SCAN_HOLD_BYTES, gpu=gpu)


def prewarm_enabled() -> bool:
    """Does a GPU worker of distconv's local cluster warm up as it starts (default True)?"""
    return keys.flag(keys.PREWARM)


def _threads() -> int:
    """Threads of this dask worker, or the cores of this process's machine."""
    import os

    try:
        from distributed import get_worker

        return get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        return os.cpu_count() or 1


@functools.cache
def zarr_settings() -> dict:
    """zarr config for the arrays the engine opens: the zarrs Rust codec pipeline (much
    faster reads than zarr-python's) when it imports (engine/source.py picks it per input)."""
    try:
        import zarrs  # noqa: F401
    except ImportError:
        return {}
    return {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}
