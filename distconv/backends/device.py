"""The device a block's stages run on, as one object, so the engine (distconv/engine) reads the
same on CPUs and on a GPU instead of branching on the device at every stage, and reaches the
GPU only through it (no module of the engine imports cupy or backends.cuda):

- ``Host``: numpy blocks, zstd frames on the host's cores.
- ``Cuda``: cupy blocks, pinned staging buffers and a stream per I/O slot, blocks in their
  device stage synced for honest stage times, zstd frames through nvCOMP when it is installed
  (else on the host's cores, after a download).

Both offer every method; a ``Host`` method does on the host what ``Cuda``'s does on the GPU
(its staging is plain memory, its uploads hand the array back, its warm-up does nothing).
cupy is imported only when a ``Cuda`` method runs (on a GPU worker), never here; backends.cuda
is imported at import only for the frame alignment its kernels read (``frame_align``).
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from . import implementation


def frame_align() -> int:
    """Bytes every zstd frame starts on a multiple of, in device buffers and in distconv's shard
    files (kernels/zstd.cu's DC_FRAME_ALIGN, read once by backends/cuda/zstd.py): nvCOMP reads
    frames in place there. The same on every device."""
    from .cuda.zstd import FRAME_ALIGN

    return FRAME_ALIGN


class Host:
    gpu = False

    @property
    def frames(self) -> bool:
        """Do zstd frames decode and encode on this device (nvCOMP)?"""
        return False

    def staging(self, slot, shape: tuple, dtype, name: str = "read") -> np.ndarray:
        """A host array to read a block's rows into (``slot``: the I/O slot that owns it,
        ``name``: which of its buffers)."""
        return np.empty(shape, dtype)

    def frame_staging(self, slot):
        """alloc(nbytes) of a host buffer for compressed frames read from files."""
        return lambda nbytes: np.empty(nbytes, np.uint8)

    def upload(self, host, pinned: bool = True):
        """A block's host rows where its work runs (``pinned``: ``host`` is the slot's staging,
        page-locked; else it is copied through pinned memory on the way)."""
        return host

    def empty(self, shape: tuple, dtype):
        """An empty array of this device (the meta of a dask array of its blocks)."""
        return np.empty(shape, dtype)

    def zeros(self, shape: tuple, dtype):
        """An array of zeros where work runs."""
        return np.zeros(shape, dtype)

    def kernels_cached(self) -> int:
        """How many compiled kernels the node's kernel cache holds (CPUs build none)."""
        return 0

    def kernel_cache(self):
        """(folder, build id): where the node keeps compiled kernels and what they were built
        from (sources, compiler, architecture); None where nothing is compiled."""
        return None

    def upload_pieces(self, cuts, fill, name: str):
        """A uint8 buffer of ``cuts[-1]`` bytes where work runs, whose bytes cuts[k]..cuts[k+1]
        ``fill(k, host)`` writes (``name``: the staging pieces it goes through)."""
        out = np.empty(max(int(cuts[-1]), 1), dtype=np.uint8)
        for k in range(len(cuts) - 1):
            fill(k, out[int(cuts[k]):int(cuts[k + 1])])
        return out

    def turn(self, slot):
        """The context a block's device stage runs in."""
        return contextlib.nullcontext()

    def sync(self):
        """Wait for the work queued by this thread (before a stage's clock is read)."""

    def decode_frames(self, buf, starts, sizes, frame_nbytes: int, dtype):
        """Frames ``buf[starts[i]:starts[i] + sizes[i]]`` read into host memory, decoded into one
        contiguous 1-D array of ``dtype`` where work runs."""
        return implementation("zstd", "decode_frames", "numpy")(buf, starts, sizes, frame_nbytes, dtype)

    def decode_resident(self, src, starts, sizes, frame_nbytes: int, dtype):
        """decode_frames of frames already where work runs (``src`` from upload_pieces)."""
        return self.decode_frames(src, starts, sizes, frame_nbytes, dtype)

    def encoder(self, slot):
        """encode_frames(block, frame_nbytes, align) for blocks on this device, into the pinned
        buffer of I/O ``slot`` (None: a buffer of their own)."""
        return implementation("zstd", "encode_frames", "numpy")

    def warm_frames(self, frame_nbytes: int, align: int):
        """The codec's first calls, made ahead of the first block's (nothing to warm here)."""

    def warm_kernels(self):
        """The library kernels every block launches, loaded ahead of the first block (nothing
        to load here)."""

    def reserve(self, per_stream: dict):
        """Memory the blocks will take ({slot: bytes}), taken from the system ahead of them
        (nothing here)."""


class Cuda(Host):
    gpu = True

    @property
    def frames(self) -> bool:
        from .cuda import zstd

        return zstd.available()

    def staging(self, slot, shape: tuple, dtype, name: str = "read") -> np.ndarray:
        """The slot's pinned buffer (a pageable upload is many times slower), kept and
        reused (a warm-up may page-lock it ahead of the blocks)."""
        from .cuda import transfer

        dtype = np.dtype(dtype)
        return transfer.staging(slot, name, int(np.prod(shape)) * dtype.itemsize).view(dtype).reshape(shape)

    def frame_staging(self, slot):
        """alloc(nbytes) of the slot's pinned buffer for compressed frames read from files."""
        from .cuda import transfer

        return functools.partial(transfer.staging, slot, "frames")

    def upload(self, host, pinned: bool = True):
        from .cuda import transfer

        return transfer.to_device(host, pinned=pinned)

    def empty(self, shape: tuple, dtype):
        import cupy

        return cupy.empty(shape, dtype=dtype)

    def zeros(self, shape: tuple, dtype):
        import cupy

        return cupy.zeros(shape, dtype=dtype)

    def kernels_cached(self) -> int:
        """(CuPy's kernel cache: one file per compiled module, read by every process of the node.)"""
        from .cuda import loader

        return loader.cached_kernels()

    def kernel_cache(self):
        from .cuda import loader

        return loader.cache_dir(), loader.build_id()

    def upload_pieces(self, cuts, fill, name: str):
        """Uploaded on the current stream through two pinned staging buffers that take turns."""
        from .cuda import transfer

        return transfer.to_device_in_pieces(cuts, fill, name)

    def turn(self, slot):
        """The slot's own stream, so blocks of different slots overlap on the device."""
        from .cuda import transfer

        return transfer.slot_stream(slot)

    def sync(self):
        import cupy

        cupy.cuda.get_current_stream().synchronize()

    def decode_frames(self, buf, starts, sizes, frame_nbytes: int, dtype):
        """(``buf`` pinned for full speed: one upload, then nvCOMP.)"""
        from .cuda import zstd

        return zstd.decode_frames(buf, starts, sizes, frame_nbytes, dtype)

    def decode_resident(self, src, starts, sizes, frame_nbytes: int, dtype):
        from .cuda import zstd

        return zstd.decode_device(src, starts, sizes, frame_nbytes, dtype)

    def encoder(self, slot):
        from .cuda import transfer, zstd

        if zstd.available():
            return functools.partial(zstd.encode_frames, slot=slot)
        host = implementation("zstd", "encode_frames", "numpy")
        return lambda block, n, align: host(transfer.to_host(block), n, align)

    def warm_frames(self, frame_nbytes: int, align: int):
        """Frames of zeros, of noise and of a quantized smooth field (as measured data is)
        encoded and decoded by nvCOMP: each takes kernels of its own (runs, raw blocks,
        literals and matches with their entropy coding), loaded at their first launch, which
        inside a job waits for the busy device."""
        import cupy

        from .cuda import zstd

        i = cupy.arange(frame_nbytes // 4, dtype=cupy.uint32)
        field = cupy.round((cupy.sin(i / 977.0) + ((i * 2654435761) >> 28) / 64.0) * 256) / 256
        for data in (cupy.zeros(frame_nbytes // 4, cupy.uint32), i * 2654435761, field.astype(cupy.float32)):
            encoded = zstd.encode_frames(data.view(cupy.uint8), frame_nbytes, align)
            zstd.decode_frames(*encoded, frame_nbytes, np.uint8)

    def warm_kernels(self):
        """CuPy's own kernels of every block (backends.cuda.loader.warm_cupy)."""
        from .cuda import loader

        loader.warm_cupy()

    def reserve(self, per_stream: dict):
        """Device memory taken from the driver on each stream that will use it ({slot: bytes},
        the slots of ``turn``), touched once (a fresh allocation's first write is slow: paid
        here, before the blocks), then kept by cupy's pool, which hands a stream's freed memory
        to that stream's later allocations only. Up to half the free memory in all."""
        import cupy

        from .cuda import transfer

        free, _ = cupy.cuda.runtime.memGetInfo()
        scale = min(1.0, free / 2 / max(1, sum(per_stream.values())))
        for slot, nbytes in per_stream.items():
            with transfer.slot_stream(slot):
                reserve = cupy.empty(int(nbytes * scale), dtype=cupy.uint8)
                reserve.fill(0)
                del reserve
        cupy.cuda.Device().synchronize()


_DEVICES = {False: Host(), True: Cuda()}


def device(gpu: bool) -> Host:
    """The CPUs' device object, or the GPU's."""
    return _DEVICES[bool(gpu)]
