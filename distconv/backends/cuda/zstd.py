"""zstd frames of a chunk-major device buffer through nvCOMP's batched C API (libnvcomp.py;
RAW bitstream: standard zstd frames that any CPU zstd reads). nvCOMP is optional (the GPU
extra ``nvcomp``): without it the caller moves the buffer to the host and uses
backends/numpy/zstd.py.

Both directions enqueue on the current cupy stream and wait on it without the GIL, so other
threads of the process (file reads and writes of other blocks) run meanwhile. Thread safety:
nothing is shared between calls but the cached sizes.
"""

from __future__ import annotations

import functools

import numpy as np

from ...core.frames import aligned_up
from . import GRID_YZ, loader

# where frames start for the decoder to read them in place (nvCOMP's zstd wants 8; 16 is its
# bound for every format), in device buffers and in distconv's shard files (engine/shards.py
# reads it through backends.device.frame_align)
FRAME_ALIGN = loader.define("DC_FRAME_ALIGN")


_PACK = "distconv_pack_frames"
INSTANTIATIONS = [_PACK]


def available() -> bool:
    from . import libnvcomp

    return libnvcomp.available()


def encode_frames(block, frame_nbytes: int, align: int = 1, slot=None) -> tuple:
    """``block`` (contiguous cupy) cut into frames of ``frame_nbytes``, compressed on the GPU in
    one batch (compress), packed on the device and moved to pinned host memory (the I/O
    ``slot``'s staging buffer when given) in one copy. Returns (buf, starts, sizes): frame i is
    ``buf[starts[i]:starts[i] + sizes[i]]``, every start a multiple of FRAME_ALIGN (which
    ``align`` must divide) and the bytes between frames zero, so consecutive frames are one
    contiguous piece of a shard file. ``buf`` is valid until that slot's next block."""
    import cupy

    from .transfer import staging, to_host

    if FRAME_ALIGN % align:
        raise ValueError(f"align must divide {FRAME_ALIGN}, got {align}")
    places, cap, lengths = compress(block, frame_nbytes)
    n = lengths.size
    padded = aligned_up(lengths, FRAME_ALIGN)
    starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    packed = cupy.empty(max(int(padded.sum()), 1), dtype=cupy.uint8)
    _pack(places, np.arange(n, dtype=np.int64) * cap, packed, starts, lengths)
    out = None if slot is None else staging(slot, "encoded", packed.size)
    return to_host(packed, out).reshape(-1), starts, lengths


def compress(block, frame_nbytes: int) -> tuple:
    """nvCOMP's part of encode_frames: ``block`` cut into frames of ``frame_nbytes`` and
    compressed in one batch into fixed-capacity places of one device buffer. Returns (places,
    their capacity in bytes, the frames' compressed lengths as numpy int64)."""
    import cupy

    from . import libnvcomp

    raw = cupy.ascontiguousarray(block).view(cupy.uint8).reshape(-1)
    n = -(-raw.size // frame_nbytes)
    sizes = np.full(n, frame_nbytes, dtype=np.uint64)
    sizes[-1] = raw.size - (n - 1) * frame_nbytes
    stride = _stride(frame_nbytes, decode=False)
    src = raw if stride == frame_nbytes else _spread(raw, frame_nbytes, stride, n)
    cap = _capacity(frame_nbytes)
    places = cupy.empty(n * cap, dtype=cupy.uint8)
    lengths = cupy.empty(n, dtype=cupy.uint64)
    statuses = cupy.empty(n, dtype=cupy.int32)
    temp = _temp(False, n, frame_nbytes)
    # every device array nvCOMP reads stays referenced until the stream is waited on
    frame_at = np.arange(n, dtype=np.uint64)
    in_ptrs, in_sizes, out_ptrs = _table(src.data.ptr + frame_at * stride, sizes,
                                         places.data.ptr + frame_at * cap)
    stream = cupy.cuda.get_current_stream()
    libnvcomp.compress_async(in_ptrs.data.ptr, in_sizes.data.ptr, frame_nbytes, n, temp.data.ptr,
                             temp.size, out_ptrs.data.ptr, lengths.data.ptr, statuses.data.ptr, stream.ptr)
    _check(stream, statuses, "encode")
    return places, cap, lengths.get().astype(np.int64)


def _table(*columns, dtype=np.uint64) -> list:
    """Per-frame columns (addresses, sizes, offsets) as device arrays, built on the host and
    uploaded in one copy: no device kernel to compile in a fresh worker process."""
    import cupy

    table = cupy.asarray(np.stack([np.asarray(c, dtype=dtype) for c in columns]))
    return [table[k] for k in range(len(columns))]


def _stride(frame_nbytes: int, decode: bool) -> int:
    """Bytes between the starts of uncompressed frames on the device: ``frame_nbytes``, rounded
    up where nvCOMP needs the frames (its encode input, its decode output) more aligned."""
    need = _raw_alignment(decode)
    return -(-frame_nbytes // need) * need


@functools.cache
def _raw_alignment(decode: bool) -> int:
    """nvCOMP's alignment of uncompressed frames; also checks that the compressed frames'
    places (FRAME_ALIGN) satisfy it."""
    from . import libnvcomp

    inp, out, _ = libnvcomp.alignments(decode)
    compressed, raw = (inp, out) if decode else (out, inp)
    if FRAME_ALIGN % compressed:
        raise RuntimeError(f"nvCOMP zstd needs {compressed}-byte alignment; frames align to {FRAME_ALIGN}")
    return raw


def _spread(raw, frame_nbytes: int, stride: int, n: int):
    """``raw`` cut into ``n`` frames placed ``stride`` bytes apart (one copy; only for frame
    sizes nvCOMP cannot read in place)."""
    import cupy

    spread = cupy.empty((n, stride), dtype=cupy.uint8)
    whole = raw.size // frame_nbytes
    spread[:whole, :frame_nbytes] = raw[:whole * frame_nbytes].reshape(whole, frame_nbytes)
    if whole < n:
        spread[whole, :raw.size - whole * frame_nbytes] = raw[whole * frame_nbytes:]
    return spread.reshape(-1)


def _check(stream, statuses, what: str) -> None:
    """Wait for ``stream`` (without the GIL) and raise if any frame's status is not success."""
    stream.synchronize()
    bad = np.flatnonzero(statuses.get())
    if bad.size:
        raise ValueError(f"nvCOMP zstd {what} failed for {bad.size} frame(s), first: frame {bad[0]}")


@functools.cache
def _capacity(frame_nbytes: int) -> int:
    """Bytes set aside per compressed frame: nvCOMP's bound, rounded up to FRAME_ALIGN."""
    from . import libnvcomp

    return aligned_up(libnvcomp.max_compressed_bytes(frame_nbytes), FRAME_ALIGN)


def _temp(decode: bool, n: int, frame_nbytes: int):
    """nvCOMP's device scratch for a batch of ``n`` frames."""
    import cupy

    nbytes = _temp_bytes(cupy.cuda.runtime.getDevice(), decode, n, frame_nbytes)
    return cupy.empty(max(nbytes, 1), dtype=cupy.uint8)


@functools.lru_cache(maxsize=64)
def _temp_bytes(device: int, decode: bool, n: int, frame_nbytes: int) -> int:
    """(``device`` keys the cache: the sizes are architecture-specific.)"""
    from . import libnvcomp

    return libnvcomp.temp_bytes(decode, n, frame_nbytes)


def _pack(src, src_off, dst, dst_off, nbytes) -> None:
    """Frames moved between FRAME_ALIGN-aligned places on the device (kernels/zstd.cu); every
    offset is a multiple of FRAME_ALIGN by construction of the callers' layouts."""
    nframes = len(nbytes)
    if not nframes:
        return
    src_off, dst_off, nbytes = _table(src_off, dst_off, nbytes, dtype=np.int64)
    args = (src, src_off, dst, dst_off, nbytes, np.int64(nframes))
    threads = loader.define("DC_PACK_THREADS")
    loader.function("zstd", _PACK)((min(nframes, GRID_YZ),), (threads,), args)


def decode_frames(buf, starts, sizes, frame_nbytes: int, dtype):
    """Frames ``buf[starts[i]:starts[i] + sizes[i]]`` (host; pinned for full speed) -> one
    contiguous device array of ``dtype``, each frame decoding to ``frame_nbytes``: one upload
    of the whole buffer and one batched decode reading the frames in place. Frames that do
    not start where the decoder reads them (shards not written by distconv) are first packed
    to aligned places on the device."""
    import cupy

    src = cupy.empty(max(buf.size, 1), dtype=cupy.uint8)
    src[:buf.size].set(buf, stream=cupy.cuda.get_current_stream())
    return decode_device(src, starts, sizes, frame_nbytes, dtype)


def decode_device(src, starts, sizes, frame_nbytes: int, dtype):
    """decode_frames of frames already on the device (``src``: a cupy uint8 buffer)."""
    import cupy

    from . import libnvcomp

    stream = cupy.cuda.get_current_stream()
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if (starts % FRAME_ALIGN).any():
        src, starts = _gather(src, starts, sizes)
    n = len(starts)
    stride = _stride(frame_nbytes, decode=True)
    out = cupy.empty((n, stride), dtype=cupy.uint8)
    decoded = cupy.empty(n, dtype=cupy.uint64)
    statuses = cupy.empty(n, dtype=cupy.int32)
    temp = _temp(True, n, frame_nbytes)
    in_ptrs, in_sizes, capacity, out_ptrs = _table(
        src.data.ptr + starts.astype(np.uint64), sizes, np.full(n, frame_nbytes),
        out.data.ptr + np.arange(n, dtype=np.uint64) * stride)
    libnvcomp.decompress_async(in_ptrs.data.ptr, in_sizes.data.ptr, capacity.data.ptr, decoded.data.ptr,
                               n, temp.data.ptr, temp.size, out_ptrs.data.ptr, statuses.data.ptr, stream.ptr)
    _check(stream, statuses, "decode")
    short = np.flatnonzero(decoded.get() != frame_nbytes)
    if short.size:
        raise ValueError(f"{short.size} zstd frame(s) did not decode to {frame_nbytes} bytes, first: frame {short[0]}")
    if stride != frame_nbytes:  # frames decoded apart (nvCOMP's output alignment): close the gaps
        out = cupy.ascontiguousarray(out[:, :frame_nbytes])
    return out.reshape(-1).view(dtype)


def _gather(src, starts, sizes):
    """Frames of ``src`` at unaligned ``starts`` copied to FRAME_ALIGN places of a new buffer:
    (buffer, new starts)."""
    import cupy

    padded = aligned_up(sizes, FRAME_ALIGN)
    moved = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
    dense = cupy.empty(max(int(padded.sum()), 1), dtype=cupy.uint8)
    for a, b, n in zip(starts.tolist(), moved.tolist(), sizes.tolist()):
        dense[b:b + n] = src[a:a + n]
    return dense, moved
