"""CUDA plumbing: kernel sources, compilation, constant-memory slots, launch structs.

Nothing here imports cupy at import time; it is imported on the worker when a cupy block runs.
"""

from __future__ import annotations

import functools

import numpy as np

# CUDA's most blocks of a grid along y or z: the grid-stride launchers stop their grids there
# (and along x, where CUDA allows 2^31 - 1, at a multiple of it)
GRID_YZ = 65535


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


@functools.lru_cache(maxsize=128)
def _on_device(device: int, data: bytes, dtype: str, shape: tuple):
    import cupy

    return cupy.asarray(np.frombuffer(data, dtype=dtype).reshape(shape))


def device_constant(host: np.ndarray):
    """A small read-only host array (mask, edges) on the current device, uploaded once per
    device and content: a fresh upload per chunk would be a synchronous copy that waits for
    every kernel queued before it."""
    host = np.ascontiguousarray(host)
    return device_constant_of(host.tobytes(), host.dtype.str, host.shape)


def device_constant_of(data: bytes, dtype: str, shape: tuple):
    """device_constant of an array given as its bytes (a caller that holds them already)."""
    import cupy

    return _on_device(cupy.cuda.runtime.getDevice(), data, dtype, shape)


@functools.lru_cache(maxsize=64)
def _attribute(device: int, attr: int) -> int:
    import cupy

    return cupy.cuda.runtime.deviceGetAttribute(attr, device)


def device_attribute(name: str) -> int:
    """``cudaDevAttr<name>`` of the current device, cached per device: launchers size grids
    and pick kernels from these on every call."""
    import cupy

    runtime = cupy.cuda.runtime
    return _attribute(runtime.getDevice(), getattr(runtime, f"cudaDevAttr{name}"))


def sm_count() -> int:
    """Multiprocessors of the current device."""
    return device_attribute("MultiProcessorCount")


@functools.lru_cache(maxsize=16)
def _capability(device: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device).compute_capability)


def compute_capability() -> int:
    """The current device's compute capability as one number (90 for sm_90), cached per device
    (cupy's runtime module names no attribute for it)."""
    import cupy

    return _capability(cupy.cuda.runtime.getDevice())


def resident_blocks(fn, block: int, shared_bytes: int = 0) -> int:
    """Blocks of ``fn`` that run at once on the whole device: a grid-stride kernel's grid, so
    that no second, partial wave of blocks doubles the time of the last one."""
    import cupy

    per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, block, shared_bytes)
    return sm_count() * max(1, per_sm)


def target(out, shape, dtype):
    """Where a kernel writes its result: ``out`` when it fits as it is (shape, dtype, C order,
    16-byte aligned), else a new array. The kernels store rows as 16-byte vectors (common.cuh
    dc_store4) where the row length allows; an ``out`` that is a slice of a larger block at
    another offset (graph/groups.py writes a run of chunks into row slices of one block)
    would fault there."""
    import cupy

    if out is not None and out.shape == tuple(shape) and out.dtype == dtype and out.flags.c_contiguous \
            and out.data.ptr % 16 == 0:
        return out
    return cupy.empty(tuple(shape), dtype=dtype)


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
