"""nvCOMP's batched zstd through its C API (ctypes), for backends/cuda/zstd.py.

Why not nvidia-nvcomp's Python Codec: its encode held the GIL until the GPU had compressed the
whole batch, stalling every file read and write of the
process meanwhile. These calls only enqueue work on a stream, and ctypes lets go of the GIL
around each; the caller waits on the stream through cupy (which lets go of it too).

Signatures and structs: nvcomp/zstd.h of nvCOMP 6 (wheel nvidia-libnvcomp-cu13 / -cu12).
Every pointer argument named ``*_dev`` is a device address; sizes are bytes.
"""

from __future__ import annotations

import ctypes
import functools

_SIZE = ctypes.c_size_t
_PTR = ctypes.c_void_p
_SUCCESS = 0


class _CompressOpts(ctypes.Structure):
    """nvcompBatchedZstdCompressOpts_t: 64 reserved bytes, zero = defaults."""
    _fields_ = [("reserved", ctypes.c_char * 64)]


class _DecompressOpts(ctypes.Structure):
    """nvcompBatchedZstdDecompressOpts_t: the backend (0 = nvCOMP's default), 60 reserved bytes."""
    _fields_ = [("backend", ctypes.c_int), ("reserved", ctypes.c_char * 60)]


class _Alignments(ctypes.Structure):
    """nvcompAlignmentRequirements_t: bytes each input, output and temp buffer aligns to."""
    _fields_ = [("input", _SIZE), ("output", _SIZE), ("temp", _SIZE)]


_SIGNATURES = {
    "nvcompBatchedZstdCompressGetRequiredAlignments": (_CompressOpts, ctypes.POINTER(_Alignments)),
    "nvcompBatchedZstdDecompressGetRequiredAlignments": (_DecompressOpts, ctypes.POINTER(_Alignments)),
    "nvcompBatchedZstdCompressGetMaxOutputChunkSize": (_SIZE, _CompressOpts, ctypes.POINTER(_SIZE)),
    # (num_chunks, max_chunk_bytes, opts, *temp_bytes, max_total_bytes, stream)
    "nvcompBatchedZstdCompressGetTempSize": (_SIZE, _SIZE, _CompressOpts, ctypes.POINTER(_SIZE), _SIZE, _PTR),
    "nvcompBatchedZstdDecompressGetTempSize": (_SIZE, _SIZE, _DecompressOpts, ctypes.POINTER(_SIZE), _SIZE, _PTR),
    # (in_ptrs, in_bytes, max_in_bytes, n, temp, temp_bytes, out_ptrs, out_bytes, opts, statuses, stream)
    "nvcompBatchedZstdCompressAsync": (_PTR, _PTR, _SIZE, _SIZE, _PTR, _SIZE, _PTR, _PTR, _CompressOpts, _PTR, _PTR),
    # (in_ptrs, in_bytes, out_capacity, out_bytes, n, temp, temp_bytes, out_ptrs, opts, statuses, stream)
    "nvcompBatchedZstdDecompressAsync": (_PTR, _PTR, _PTR, _PTR, _SIZE, _PTR, _SIZE, _PTR, _DecompressOpts, _PTR, _PTR),
}


@functools.cache
def _lib():
    """libnvcomp, loaded once (from the nvidia-libnvcomp wheel, else the system's)."""
    import nvidia.libnvcomp

    lib = nvidia.libnvcomp.load_library()
    if lib is None:
        raise ImportError("nvidia-libnvcomp is installed but libnvcomp could not be loaded")
    for name, args in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = list(args), ctypes.c_int
    return lib


def available() -> bool:
    try:
        _lib()
    except (ImportError, OSError, AttributeError):
        return False
    return True


def _call(name: str, *args) -> None:
    status = getattr(_lib(), name)(*args)
    if status != _SUCCESS:
        raise RuntimeError(f"nvCOMP {name} returned status {status}")


def alignments(decode: bool) -> tuple:
    """(input, output, temp) alignment in bytes nvCOMP needs for zstd encode or decode."""
    out = _Alignments()
    if decode:
        _call("nvcompBatchedZstdDecompressGetRequiredAlignments", _DecompressOpts(), ctypes.byref(out))
    else:
        _call("nvcompBatchedZstdCompressGetRequiredAlignments", _CompressOpts(), ctypes.byref(out))
    return out.input, out.output, out.temp


@functools.cache
def max_compressed_bytes(chunk_bytes: int) -> int:
    """The most bytes one chunk of ``chunk_bytes`` can compress to."""
    out = _SIZE()
    _call("nvcompBatchedZstdCompressGetMaxOutputChunkSize", chunk_bytes, _CompressOpts(), ctypes.byref(out))
    return out.value


def temp_bytes(decode: bool, n: int, chunk_bytes: int) -> int:
    """Device scratch for a batch of ``n`` chunks of at most ``chunk_bytes`` (this device)."""
    out = _SIZE()
    if decode:
        _call("nvcompBatchedZstdDecompressGetTempSize", n, chunk_bytes, _DecompressOpts(),
              ctypes.byref(out), n * chunk_bytes, None)
    else:
        _call("nvcompBatchedZstdCompressGetTempSize", n, chunk_bytes, _CompressOpts(),
              ctypes.byref(out), n * chunk_bytes, None)
    return out.value


def compress_async(in_ptrs_dev, in_bytes_dev, chunk_bytes, n, temp_dev, temp_nbytes,
                   out_ptrs_dev, out_bytes_dev, statuses_dev, stream) -> None:
    """Enqueue the compression of ``n`` chunks on ``stream`` (a cudaStream_t as an int)."""
    _call("nvcompBatchedZstdCompressAsync", in_ptrs_dev, in_bytes_dev, chunk_bytes, n, temp_dev,
          temp_nbytes, out_ptrs_dev, out_bytes_dev, _CompressOpts(), statuses_dev, stream)


def decompress_async(in_ptrs_dev, in_bytes_dev, out_capacity_dev, out_bytes_dev, n, temp_dev,
                     temp_nbytes, out_ptrs_dev, statuses_dev, stream) -> None:
    """Enqueue the decompression of ``n`` frames on ``stream``; ``out_bytes_dev`` receives
    each frame's decoded size."""
    _call("nvcompBatchedZstdDecompressAsync", in_ptrs_dev, in_bytes_dev, out_capacity_dev,
          out_bytes_dev, n, temp_dev, temp_nbytes, out_ptrs_dev, _DecompressOpts(), statuses_dev, stream)
