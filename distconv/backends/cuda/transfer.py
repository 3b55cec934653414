"""Host <-> device copies through pinned (page-locked) host memory.

cupy.asarray of a pageable array is tens of times slower than the same bytes from pinned memory.
So every bulk transfer of the I/O path stages through pinned buffers (the I/O slots' kept ones
from huge pages registered with CUDA, temporaries from cupy's pinned pool), and readers decode
straight into them where they can.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

HUGE_PAGE = 2 << 20  # the kept buffers' alignment and the transparent huge page size of x86-64 Linux


def pinned_empty(shape, dtype) -> np.ndarray:
    """A numpy array on pinned host memory (cupy's pinned pool keeps it for reuse once freed)."""
    import cupy

    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    mem = cupy.cuda.alloc_pinned_memory(max(n * dtype.itemsize, 1))
    return np.frombuffer(mem, dtype=dtype, count=n).reshape(shape)


def kept_pinned(nbytes: int) -> np.ndarray:
    """A uint8 array of ``nbytes`` on page-locked host memory, for a buffer kept and reused:
    anonymous memory asked for in huge pages, first written by several threads at once (the
    kernel zeroes each page as it is first touched), then registered with CUDA: about twice as
    fast to set up as cudaHostAlloc (cupy's pinned pool), which touches one page at a time on one
    thread, and copies as fast. Unregistered and unmapped once no view of it is left; cupy's
    pinned pool where the registration fails."""
    import ctypes
    import mmap

    import cupy

    n = max(int(nbytes), 1)
    mem = mmap.mmap(-1, n + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    probe = ctypes.c_char.from_buffer(mem)
    start = ctypes.addressof(probe)
    del probe  # a live export would keep the map from closing
    ptr = start + (-start) % HUGE_PAGE
    if hasattr(mmap, "MADV_HUGEPAGE"):
        mem.madvise(mmap.MADV_HUGEPAGE, ptr - start, n)
    _first_touch(ptr, n)
    try:
        cupy.cuda.runtime.hostRegister(ptr, n, 0)
    except cupy.cuda.runtime.CUDARuntimeError:
        mem.close()
        return pinned_empty(n, np.uint8)
    view = (ctypes.c_char * n).from_address(ptr)
    view._pages = _Pages()  # the last view of the array gone: the pages unregistered, then unmapped
    weakref.finalize(view._pages, _release, ptr, mem).atexit = False
    return np.frombuffer(view, np.uint8)


class _Pages:
    """Lives as long as some view of a kept_pinned buffer does."""


def _release(ptr: int, mem):
    import cupy

    try:
        cupy.cuda.runtime.hostUnregister(ptr)
    finally:
        mem.close()


def _first_touch(ptr: int, n: int):
    """Write every page of ptr..ptr+n once, from up to 8 threads (ctypes' memset lets go of
    the GIL): the page faults, each zeroing a page, then run on as many cores."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor

    parts = max(1, min(8, os.cpu_count() or 1, n // HUGE_PAGE))
    cuts = [ptr + n * k // parts // HUGE_PAGE * HUGE_PAGE for k in range(parts)] + [ptr + n]
    with ThreadPoolExecutor(parts) as pool:
        list(pool.map(lambda k: ctypes.memset(cuts[k], 0, cuts[k + 1] - cuts[k]), range(parts)))


_STAGING: dict = {}
_STAGING_LOCKS: dict = {}
_LOCK = threading.Lock()


def staging(slot, name: str, nbytes: int) -> np.ndarray:
    """A pinned uint8 buffer of at least ``nbytes`` owned by (slot, name), kept and reused:
    allocating page-locked memory is slow and serializes with other CUDA calls, so the I/O
    path allocates it once per in-flight block slot (or a worker's warm-up does, in its own
    thread: engine/prewarm.py; a key's allocation is made once, under the key's lock). The
    caller owns it until its block ends."""
    key = (slot, name)
    with _LOCK:
        lock = _STAGING_LOCKS.setdefault(key, threading.Lock())
    with lock:
        buf = _STAGING.get(key)
        if buf is None or buf.size < nbytes:
            _STAGING.pop(key, None)
            # rounded up by up to 1/8: blocks whose compressed size varies a little reuse one buffer
            step = 1 << max(0, int(nbytes).bit_length() - 3)
            buf = _STAGING[key] = kept_pinned(-(-nbytes // step) * step)
    return buf[:nbytes]


_STREAMS: dict = {}


def slot_stream(slot):
    """A non-blocking CUDA stream of this device for an I/O ``slot`` (use it as a context):
    the slots' copies, decodes, kernels and encodes may overlap on the GPU, and none waits
    for work on the legacy default stream."""
    import cupy

    key = (cupy.cuda.runtime.getDevice(), slot)
    if key not in _STREAMS:
        _STREAMS.setdefault(key, cupy.cuda.Stream(non_blocking=True))
    return _STREAMS[key]


def to_device(host: np.ndarray, pinned: bool = False):
    """``host`` on the current device; a pageable array is staged through pinned memory."""
    import cupy

    if not pinned:
        stage = pinned_empty(host.shape, host.dtype)
        np.copyto(stage, host)
        host = stage
    out = cupy.empty(host.shape, dtype=host.dtype)
    out.set(host)
    return out


def to_host(device, out: np.ndarray | None = None) -> np.ndarray:
    """A device array copied into pinned host memory (``out``, or a new buffer); synchronous."""
    import cupy

    if out is None:
        out = pinned_empty(device.shape, device.dtype)
    out = out.view(device.dtype).reshape(device.shape)
    cupy.ascontiguousarray(device).get(out=out)
    return out


def to_device_in_pieces(cuts, fill, name: str):
    """A device uint8 buffer of ``cuts[-1]`` bytes whose bytes cuts[k]..cuts[k+1] ``fill(k,
    host)`` writes into a pinned staging buffer, uploaded on the current stream. Two staging
    buffers (owned by ``name``) take turns, so the upload of one piece overlaps the fill of
    the next and the pinned memory stays the size of two pieces, not of the whole buffer
    (page-locking GBs costs more than the copies)."""
    import cupy

    out = cupy.empty(max(int(cuts[-1]), 1), dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream()
    uploaded = [None, None]
    for k in range(len(cuts) - 1):
        a, b = int(cuts[k]), int(cuts[k + 1])
        if uploaded[k % 2] is not None:
            uploaded[k % 2].synchronize()  # this staging buffer's previous upload is done
        host = staging((name, k % 2), "pieces", b - a)
        fill(k, host)
        out[a:b].set(host, stream=stream)
        uploaded[k % 2] = stream.record()
    stream.synchronize()
    return out
