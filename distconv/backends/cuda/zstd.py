"""zstd frames of a chunk-major device buffer through nvCOMP (batched, RAW bitstream: standard
zstd frames that any CPU zstd reads). nvCOMP is optional (the GPU extra ``nvcomp``): without it
the caller moves the buffer to the host and uses backends/numpy/zstd.py.

Thread safety: one nvCOMP Codec per (device, thread); each binds its own CUDA stream and waits
on the current cupy stream before reading the buffer.
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


def _codec():
    import cupy
    from nvidia import nvcomp

    dev = cupy.cuda.runtime.getDevice()
    codecs = getattr(_LOCAL, "codecs", None)
    if codecs is None:
        codecs = _LOCAL.codecs = {}
    if dev not in codecs:
        codecs[dev] = nvcomp.Codec(algorithm="Zstd", bitstream_kind=nvcomp.BitstreamKind.RAW,
                                   device_id=dev)
    return codecs[dev]


def _bound(n: int) -> int:
    """zstd's worst-case compressed size of n bytes (ZSTD_COMPRESSBOUND), 16-byte rounded."""
    return (n + (n >> 8) + (((128 << 10) - n) >> 11 if n < (128 << 10) else 0) + 64 + 15) // 16 * 16


def encode_frames(block, frame_nbytes: int) -> list:
    """``block`` (contiguous cupy) cut into frames of ``frame_nbytes``, compressed on the GPU in
    one batch into one device buffer (a frame per fixed-size slot), moved to pinned host memory
    in one copy; returns memoryviews of the frames in order."""
    import cupy
    from nvidia import nvcomp

    from .transfer import to_host

    raw = cupy.ascontiguousarray(block).view(cupy.uint8).reshape(-1)
    offsets = list(range(0, raw.size, frame_nbytes))
    sizes = [min(frame_nbytes, raw.size - o) for o in offsets]
    slot = _bound(frame_nbytes)
    packed = cupy.empty(slot * len(offsets), dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    srcs = nvcomp.as_arrays(raw, offsets, sizes, cuda_stream=stream)
    dsts = nvcomp.as_arrays(packed, [i * slot for i in range(len(offsets))], [slot] * len(offsets),
                            cuda_stream=stream)
    encoded = _codec().encode(srcs, out=dsts)
    lengths = encoded.buffer_sizes  # waits for the encode
    used = max(i * slot + n for i, n in enumerate(lengths))
    host = memoryview(to_host(packed[:used]))
    return [host[i * slot:i * slot + n] for i, n in enumerate(lengths)]


def decode_frames(frames: list, frame_nbytes: int, dtype):
    """Host frames -> one contiguous device array of ``dtype``: the frames gathered into pinned
    memory (16-byte aligned), one upload, one batched decode straight into place."""
    import cupy
    from nvidia import nvcomp

    from .transfer import pinned_empty

    sizes = [len(memoryview(f).cast("B")) for f in frames]
    aligned = np.zeros(len(frames), dtype=np.int64)
    pos = 0
    for i, n in enumerate(sizes):  # 16-byte aligned starts, as the decoder wants
        aligned[i] = pos
        pos += (n + 15) // 16 * 16
    host = pinned_empty(max(pos, 1), np.uint8)
    for f, a, n in zip(frames, aligned, sizes):
        host[a:a + n] = np.frombuffer(f, dtype=np.uint8)
    src = cupy.empty(host.size, dtype=cupy.uint8)
    src.set(host)
    out = cupy.empty(len(frames) * frame_nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    srcs = nvcomp.as_arrays(src, [int(a) for a in aligned], sizes, cuda_stream=stream)
    dsts = nvcomp.as_arrays(out, [i * frame_nbytes for i in range(len(frames))],
                            [frame_nbytes] * len(frames), cuda_stream=stream)
    res = _codec().decode(srcs, out=dsts)
    res.buffer_sizes  # waits for the decode (see nvcomp.BatchArray)
    return out.view(dtype)
