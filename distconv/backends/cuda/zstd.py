"""zstd frames of a chunk-major device buffer through nvCOMP (batched, RAW bitstream: standard
zstd frames that any CPU zstd reads). nvCOMP is optional (the GPU extra ``nvcomp``): without it
the caller moves the buffer to the host and uses backends/numpy/zstd.py.

Thread safety: one nvCOMP Codec per (device, I/O slot), or per (device, thread) without a slot;
each waits on the current cupy stream before reading the buffer.
"""

from __future__ import annotations

import threading

import numpy as np

from . import loader

_LOCAL = threading.local()
# where frames start for the decoder to read them in place (nvCOMP's zstd wants 8; 16 is its
# bound for every format), in device buffers and in distconv's shard files
FRAME_ALIGN = loader.define("DC_FRAME_ALIGN")


def aligned_up(n):
    """``n`` bytes (an int or an array of them) rounded up to FRAME_ALIGN."""
    return -(-n // FRAME_ALIGN) * FRAME_ALIGN


_PACK = "distconv_pack_frames"
INSTANTIATIONS = [_PACK]


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
    one batch into fixed-capacity places of one buffer, packed on the device (each frame on a
    FRAME_ALIGN boundary) and moved to pinned host memory (the I/O ``slot``'s staging buffer
    when given) in one copy; returns memoryviews of the frames in order, valid until that
    slot's next block."""
    import cupy
    from nvidia import nvcomp

    from .transfer import staging, to_host

    codec = _codec(slot)
    raw = cupy.ascontiguousarray(block).view(cupy.uint8).reshape(-1)
    n = -(-raw.size // frame_nbytes)
    sizes = [min(frame_nbytes, raw.size - i * frame_nbytes) for i in range(n)]
    cap = _capacity(codec, frame_nbytes)
    places = cupy.empty(n * cap, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream()
    srcs = nvcomp.as_arrays(raw, [i * frame_nbytes for i in range(n)], sizes, cuda_stream=stream.ptr)
    outs = nvcomp.as_arrays(places, [i * cap for i in range(n)], [cap] * n, cuda_stream=stream.ptr)
    encoded = codec.encode(srcs, out=outs)
    stream.synchronize()  # here, without the GIL: reading the sizes would wait holding it
    lengths = np.asarray(encoded.buffer_sizes, dtype=np.int64)
    padded = aligned_up(lengths)
    starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    packed = cupy.empty(max(int(padded.sum()), 1), dtype=cupy.uint8)
    _pack(places, np.arange(n, dtype=np.int64) * cap, packed, starts, lengths)
    out = None if slot is None else staging(slot, "encoded", packed.size)
    host = memoryview(to_host(packed, out).reshape(-1))
    return [host[a:a + m] for a, m in zip(starts.tolist(), lengths.tolist())]


def _capacity(codec, frame_nbytes: int) -> int:
    """Bytes set aside per compressed frame: nvCOMP's bound, rounded up to FRAME_ALIGN."""
    import cupy
    from nvidia import nvcomp

    key = (id(codec), frame_nbytes)
    if key not in _CAPACITY:
        probe = cupy.empty(frame_nbytes, dtype=cupy.uint8)
        bound = codec.get_max_comp_buffer_size(nvcomp.as_array(probe))
        _CAPACITY[key] = aligned_up(int(bound))
    return _CAPACITY[key]


_CAPACITY: dict = {}


def _pack(src, src_off, dst, dst_off, nbytes) -> None:
    """Frames moved between FRAME_ALIGN-aligned places on the device (kernels/zstd.cu); every
    offset is a multiple of FRAME_ALIGN by construction of the callers' layouts."""
    import cupy

    nframes = len(nbytes)
    if not nframes:
        return
    args = (src, cupy.asarray(src_off), dst, cupy.asarray(dst_off), cupy.asarray(nbytes), np.int64(nframes))
    threads = loader.define("DC_PACK_THREADS")
    loader.function("zstd", _PACK)((min(nframes, 65535),), (threads,), args)


def decode_frames(buf, starts, sizes, frame_nbytes: int, dtype, slot=None):
    """Frames ``buf[starts[i]:starts[i] + sizes[i]]`` (host; pinned for full speed) -> one
    contiguous device array of ``dtype``: one upload of the whole buffer and one batched decode
    reading the frames in place. Frames that do not start where the decoder reads them (shards
    not written by distconv) are first copied to aligned places on the device."""
    import cupy
    from nvidia import nvcomp

    codec = _codec(slot)
    src = cupy.empty(max(buf.size, 1), dtype=cupy.uint8)
    src[:buf.size].set(buf)
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if (starts % FRAME_ALIGN).any():
        padded = aligned_up(sizes)
        moved = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
        dense = cupy.empty(max(int(padded.sum()), 1), dtype=cupy.uint8)
        for a, b, n in zip(starts.tolist(), moved.tolist(), sizes.tolist()):
            dense[b:b + n] = src[a:a + n]
        src, starts = dense, moved
    out = cupy.empty(len(starts) * frame_nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    srcs = nvcomp.as_arrays(src, starts.tolist(), sizes.tolist(), cuda_stream=stream)
    dsts = nvcomp.as_arrays(out, [i * frame_nbytes for i in range(len(starts))],
                            [frame_nbytes] * len(starts), cuda_stream=stream)
    res = codec.decode(srcs, out=dsts)
    res.buffer_sizes  # waits for the decode (see nvcomp.BatchArray)
    return out.view(dtype)
