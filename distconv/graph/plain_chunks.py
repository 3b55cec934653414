"""Whole storage chunks of a plain zstd Zarr array (zarr's unsharded chunks: codecs bytes +
zstd, as zarr and dask write by default) read as frames for the GPU's decoder.

Each chunk file is one standard zstd frame of the chunk's C-order elements (edge chunks are
stored whole), so a run of chunk rows is a run of frames in a shards.Layout whose shards are
the chunks themselves. nvCOMP decodes a frame on one unit of the GPU (~0.1 GB/s for a 64 MiB
frame) and a batch of up to ~190 of them in about the same 0.7-0.8 s (NOTES.md, "End to end,
round 7"), so the direct path decodes many blocks' chunks in one batch (storage_job).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..backends.cuda.zstd import aligned_up
from . import chunk_heads, shards

# bytes of chunk files read per piece on the way to the device (two pieces of pinned staging)
PIECE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Chunks:
    """The files of the whole chunk rows holding rows ``row0 .. row0 + rows`` of an array in
    ``layout``, in chunk-major order, each given a FRAME_ALIGN place ``starts[i]`` of one
    buffer of ``nbytes``; file i holds ``sizes[i]`` bytes."""
    files: tuple
    starts: np.ndarray
    sizes: np.ndarray
    row0: int
    rows: int
    layout: shards.Layout

    @property
    def nbytes(self) -> int:
        return int(self.starts[-1] + self.sizes[-1])

    def read(self, dest: np.ndarray, first: int = 0, last: int | None = None) -> None:
        """Files first..last (all by default) into ``dest``, which holds the buffer's bytes
        from starts[first] on; several files at once."""
        last = len(self.files) if last is None else last
        base = int(self.starts[first])

        def one(i: int):
            a = int(self.starts[i]) - base
            shards.read_range(self.files[i], 0, dest[a:a + int(self.sizes[i])])

        list(shards.file_pool("read").map(one, range(first, last)))

    def pieces(self, piece_bytes: int | None = None) -> tuple:
        """(cuts, fill): the buffer cut at file starts into pieces of about ``piece_bytes``
        (PIECE_BYTES by default), and fill(k, dest) reading piece k's files into ``dest``
        (transfer.to_device_in_pieces takes both)."""
        piece_bytes = PIECE_BYTES if piece_bytes is None else piece_bytes
        firsts = [0]
        for i in range(1, len(self.files)):
            if self.starts[i] - self.starts[firsts[-1]] >= piece_bytes:
                firsts.append(i)
        cuts = [int(self.starts[i]) for i in firsts] + [self.nbytes]
        ends = firsts[1:] + [len(self.files)]
        return cuts, lambda k, dest: self.read(dest, firsts[k], ends[k])

    def frames(self, buf: np.ndarray) -> shards.Frames:
        """The chunks as shards.Frames of ``buf`` (which holds them: read)."""
        return shards.Frames(buf, self.starts, self.sizes, self.row0, self.rows, self.layout)


def locate(src, path: str, a: int, b: int) -> Chunks | None:
    """The chunk files holding rows a..b of the plain zarr array ``src`` stored at the local
    ``path`` (whole chunk rows: from the row of ``a``'s chunk); None when the array is not
    plain, the rows are empty or out of range, or a chunk is absent (zarr leaves out chunks of
    fill values): read through zarr then."""
    chunks, shape = tuple(src.chunks), tuple(src.shape)
    if not chunk_heads.plain(src) or not 0 <= a < b <= shape[0]:
        return None
    k0, k1 = a // chunks[0], -(-b // chunks[0])
    grid = [math.ceil(n / c) for n, c in zip(shape[1:], chunks[1:])]
    files = tuple(Path(path, src.metadata.encode_chunk_key((k,) + idx))
                  for k in range(k0, k1) for idx in np.ndindex(*grid))
    sizes = np.array(list(shards.file_pool("read").map(_size, files)), dtype=np.int64)
    if (sizes < 0).any():
        return None
    starts = np.concatenate([[0], np.cumsum(aligned_up(sizes))[:-1]]).astype(np.int64)
    layout = shards.Layout(shape, chunks, chunks, np.dtype(src.dtype).str)
    return Chunks(files, starts, sizes, k0 * chunks[0], min(k1 * chunks[0], shape[0]) - k0 * chunks[0], layout)


def rows_of(flat, ch: Chunks, lo: int, hi: int):
    """Rows lo..hi (inside ch's rows) out of ch's decoded frames ``flat`` (chunk-major, numpy
    or cupy): a view of a new array made from the chunk rows that hold them only."""
    c0 = ch.layout.shard[0]
    per_row = math.prod(ch.layout.shard_grid(1)[1:])  # chunks (frames) per chunk row
    ka, kb = (lo - ch.row0) // c0, -(-(hi - ch.row0) // c0)
    elems = per_row * math.prod(ch.layout.inner)
    top = ch.row0 + ka * c0
    out = shards.from_chunk_major(flat[ka * elems:kb * elems], ch.layout, hi - top)
    return out[lo - top:]


def _size(f: Path) -> int:
    """Bytes in file ``f``; -1 when it does not exist."""
    try:
        return os.stat(f).st_size
    except FileNotFoundError:
        return -1
