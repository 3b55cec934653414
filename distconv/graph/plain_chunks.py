"""Whole storage chunks of a plain zstd Zarr array (zarr's unsharded chunks: codecs bytes +
zstd) read as frames for the GPU's decoder.

Each chunk file is one standard zstd frame of the chunk's C-order elements (edge chunks are
stored whole), so a run of chunk rows is shards.Frames in a layout whose shards are the
chunks themselves: nvCOMP decodes them and shards.decode_rows puts them in place. nvCOMP
decodes each frame on one unit of the GPU (~0.11 GB/s per 64 MiB frame on an H200, any number
at once: NOTES.md, "End to end, round 6"), so the direct path hands it part of a block while
the CPU decodes the rest.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..backends.cuda.zstd import aligned_up
from . import chunk_heads, shards


def read_frames(src, path: str, a: int, b: int, alloc=None) -> shards.Frames | None:
    """Rows a..b of the plain zarr array ``src`` stored at the local ``path``, as the frames of
    the whole chunks that hold them, every chunk file read into one buffer from
    ``alloc(nbytes)`` (np.empty by default) at a FRAME_ALIGN start, files several at once.
    ``a`` must be the first row of a chunk. None when the array is not plain or a chunk is
    absent (zarr leaves out chunks of fill values): read through zarr then."""
    chunks, shape = tuple(src.chunks), tuple(src.shape)
    if not chunk_heads.plain(src) or a % chunks[0] or not a < b <= shape[0]:
        return None
    k0, k1 = a // chunks[0], -(-b // chunks[0])
    grid = [math.ceil(n / c) for n, c in zip(shape[1:], chunks[1:])]
    files = [Path(path, src.metadata.encode_chunk_key((k,) + idx)) for k in range(k0, k1) for idx in np.ndindex(*grid)]
    sizes = np.array(list(shards.file_pool("read").map(_size, files)), dtype=np.int64)
    if (sizes < 0).any():
        return None
    starts = np.concatenate([[0], np.cumsum(aligned_up(sizes))[:-1]]).astype(np.int64)
    buf = (alloc or (lambda n: np.empty(n, np.uint8)))(int(starts[-1] + sizes[-1]))
    list(shards.file_pool("read").map(lambda i: shards.read_range(files[i], 0, buf[starts[i]:starts[i] + sizes[i]]),
                                      range(len(files))))
    layout = shards.Layout(shape, chunks, chunks, np.dtype(src.dtype).str)
    return shards.Frames(buf, starts, sizes, k0 * chunks[0], (k1 - k0) * chunks[0], layout)


def _size(f: Path) -> int:
    """Bytes in file ``f``; -1 when it does not exist."""
    try:
        return os.stat(f).st_size
    except FileNotFoundError:
        return -1
