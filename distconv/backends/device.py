"""The device a block's stages run on, as one object, so the engine (distconv/engine) reads the
same on CPUs and on a GPU instead of branching on the device at every stage:

- ``Host``: numpy blocks, zstd frames on the host's cores.
- ``Cuda``: cupy blocks, pinned staging buffers and a stream per I/O slot, blocks in their
  device stage synced for honest stage times, zstd frames through nvCOMP when it is installed
  (else on the host's cores, after a download).

backends.cuda is imported only when a ``Cuda`` method runs (on a GPU worker), never here.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from . import implementation


class Host:
    gpu = False

    @property
    def frames(self) -> bool:
        """Do zstd frames decode and encode on this device (nvCOMP)?"""
        return False

    def staging(self, slot, shape: tuple, dtype) -> np.ndarray:
        """A host array to read a block's rows into (``slot``: the I/O slot that owns it)."""
        return np.empty(shape, dtype)

    def upload(self, host):
        """A block's host rows where its work runs."""
        return host

    def turn(self, slot):
        """The context a block's device stage runs in."""
        return contextlib.nullcontext()

    def sync(self):
        """Wait for the work queued by this thread (before a stage's clock is read)."""

    def encoder(self, slot):
        """encode_frames(block, frame_nbytes, align) for blocks on this device."""
        return implementation("zstd", "encode_frames", "numpy")


class Cuda(Host):
    gpu = True

    @property
    def frames(self) -> bool:
        from .cuda import zstd

        return zstd.available()

    def staging(self, slot, shape: tuple, dtype) -> np.ndarray:
        """The slot's pinned buffer (a pageable upload runs at ~1 GB/s on the H200s)."""
        from .cuda import transfer

        dtype = np.dtype(dtype)
        return transfer.staging(slot, "read", int(np.prod(shape)) * dtype.itemsize).view(dtype).reshape(shape)

    def frame_staging(self, slot):
        """alloc(nbytes) of the slot's pinned buffer for compressed frames read from files."""
        from .cuda import transfer

        return functools.partial(transfer.staging, slot, "frames")

    def upload(self, host):
        from .cuda import transfer

        return transfer.to_device(host, pinned=True)

    def turn(self, slot):
        """The slot's own stream, so blocks of different slots overlap on the device."""
        from .cuda import transfer

        return transfer.slot_stream(slot)

    def sync(self):
        import cupy

        cupy.cuda.get_current_stream().synchronize()

    def decode_frames(self, *args, **kwargs):
        from .cuda import zstd

        return zstd.decode_frames(*args, **kwargs)

    def encoder(self, slot):
        from .cuda import transfer, zstd

        if zstd.available():
            return functools.partial(zstd.encode_frames, slot=slot)
        host = implementation("zstd", "encode_frames", "numpy")
        return lambda block, n, align: host(transfer.to_host(block), n, align)


_DEVICES = {False: Host(), True: Cuda()}


def device(gpu: bool) -> Host:
    """The CPUs' device object, or the GPU's."""
    return _DEVICES[bool(gpu)]
