"""zstd frames of a chunk-major device buffer through nvCOMP (batched, RAW bitstream: standard
zstd frames that any CPU zstd reads). nvCOMP is optional (the GPU extra ``nvcomp``): without it
the caller moves the buffer to the host and uses backends/numpy/zstd.py.

Thread safety: one nvCOMP Codec per (device, I/O slot), or per (device, thread) without a slot;
each waits on the current cupy stream before reading the buffer.
"""

from __future__ import annotations

import threading

import numpy as np

_LOCAL = threading.local()


def available() -> bool:
    try:
        from nvidia import nvcomp  # noqa: F401
    except ImportError:
        return False
    return True


def _codec(slot=None):
    """The nvCOMP codec of this device for an I/O ``slot`` (one block at a time uses a slot, so
    its codec is never shared by two threads at once), else of this thread. Creating one costs
    ~0.1 s: per slot there are two per process, per thread there were eight."""
    import cupy
    from nvidia import nvcomp

    dev = cupy.cuda.runtime.getDevice()
    if slot is None:
        codecs = getattr(_LOCAL, "codecs", None)
        if codecs is None:
            codecs = _LOCAL.codecs = {}
        key = dev
    else:
        codecs, key = _BY_SLOT, (dev, slot)
    with _LOCK:
        if key not in codecs:
            codecs[key] = nvcomp.Codec(algorithm="Zstd", bitstream_kind=nvcomp.BitstreamKind.RAW,
                                       device_id=dev)
        return codecs[key]


_BY_SLOT: dict = {}
_LOCK = threading.Lock()


def encode_frames(block, frame_nbytes: int, slot=None) -> list:
    """``block`` (contiguous cupy) cut into frames of ``frame_nbytes``, compressed on the GPU in
    one batch, packed on the device and moved to pinned host memory (the I/O ``slot``'s
    staging buffer when given) in one copy; returns memoryviews of the frames in order, valid
    until that slot's next block."""
    import cupy
    from nvidia import nvcomp

    from .transfer import staging, to_host

    raw = cupy.ascontiguousarray(block).view(cupy.uint8).reshape(-1)
    offsets = list(range(0, raw.size, frame_nbytes))
    sizes = [min(frame_nbytes, raw.size - o) for o in offsets]
    stream = cupy.cuda.get_current_stream().ptr
    encoded = _codec(slot).encode(nvcomp.as_arrays(raw, offsets, sizes, cuda_stream=stream))
    views = [cupy.asarray(encoded[i]).view(cupy.uint8).reshape(-1) for i in range(len(offsets))]
    lengths = [v.size for v in views]
    packed = cupy.concatenate(views)
    out = None if slot is None else staging(slot, "encoded", packed.size)
    host = memoryview(to_host(packed, out).reshape(-1))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return [host[int(a):int(a) + n] for a, n in zip(starts, lengths)]


def decode_frames(frames: list, frame_nbytes: int, dtype, slot=None):
    """Host frames -> one contiguous device array of ``dtype``: the frames gathered into pinned
    memory (16-byte aligned), one upload, one batched decode straight into place."""
    import cupy
    from nvidia import nvcomp

    from .transfer import pinned_empty, staging

    sizes = [len(memoryview(f).cast("B")) for f in frames]
    aligned = np.zeros(len(frames), dtype=np.int64)
    pos = 0
    for i, n in enumerate(sizes):  # 16-byte aligned starts, as the decoder wants
        aligned[i] = pos
        pos += (n + 15) // 16 * 16
    host = pinned_empty(max(pos, 1), np.uint8) if slot is None else staging(slot, "frames", max(pos, 1))
    for f, a, n in zip(frames, aligned, sizes):
        host[a:a + n] = np.frombuffer(f, dtype=np.uint8)
    src = cupy.empty(host.size, dtype=cupy.uint8)
    src.set(host)
    out = cupy.empty(len(frames) * frame_nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    srcs = nvcomp.as_arrays(src, [int(a) for a in aligned], sizes, cuda_stream=stream)
    dsts = nvcomp.as_arrays(out, [i * frame_nbytes for i in range(len(frames))],
                            [frame_nbytes] * len(frames), cuda_stream=stream)
    res = _codec(slot).decode(srcs, out=dsts)
    res.buffer_sizes  # waits for the decode (see nvcomp.BatchArray)
    return out.view(dtype)
