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


def encode_frames(block, frame_nbytes: int) -> list:
    """``block`` (contiguous cupy) cut into frames of ``frame_nbytes``, compressed on the GPU in
    one batch; returns host numpy byte arrays in order."""
    import cupy
    from nvidia import nvcomp

    raw = cupy.ascontiguousarray(block).view(cupy.uint8).reshape(-1)
    offsets = list(range(0, raw.size, frame_nbytes))
    sizes = [min(frame_nbytes, raw.size - o) for o in offsets]
    stream = cupy.cuda.get_current_stream().ptr
    batch = nvcomp.as_arrays(raw, offsets, sizes, cuda_stream=stream)
    encoded = _codec().encode(batch).cpu()
    return [np.array(encoded[i], copy=True) for i in range(len(offsets))]


def decode_frames(frames: list, frame_nbytes: int, dtype):
    """Host frames -> one contiguous device array of ``dtype``: one upload of all frames, one
    batched decode straight into place."""
    import cupy
    from nvidia import nvcomp

    sizes = [len(f) for f in frames]
    aligned = np.zeros(len(frames), dtype=np.int64)
    pos = 0
    for i, s in enumerate(sizes):  # 16-byte aligned starts, as the decoder wants
        aligned[i] = pos
        pos += (s + 15) // 16 * 16
    host = np.empty(max(pos, 1), dtype=np.uint8)
    for f, a, s in zip(frames, aligned, sizes):
        host[a:a + s] = np.frombuffer(f, dtype=np.uint8)
    src = cupy.asarray(host)
    out = cupy.empty(len(frames) * frame_nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    srcs = nvcomp.as_arrays(src, [int(a) for a in aligned], sizes, cuda_stream=stream)
    dsts = nvcomp.as_arrays(out, [i * frame_nbytes for i in range(len(frames))],
                            [frame_nbytes] * len(frames), cuda_stream=stream)
    res = _codec().decode(srcs, out=dsts)
    res.buffer_sizes  # waits for the decode (see nvcomp.BatchArray)
    return out.view(dtype)
