"""Whole storage chunks of a plain zstd Zarr array (zarr's unsharded chunks: codecs bytes +
zstd, as zarr and dask write by default) read as frames for the GPU's decoder.

Each chunk file is one standard zstd frame of the chunk's C-order elements (edge chunks are
stored whole), so a run of chunk rows is a run of frames in a shards.Layout whose shards are
the chunks themselves. nvCOMP decodes a frame on one unit of the GPU, and a batch of up to ~190
of them in about the time of one, so the direct path decodes many blocks' chunks in one batch
(engine/batches.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.arrays import array_module, own_slice
from ..core.frames import aligned_up
from . import chunk_heads, shards
from .location import join, read_into, size

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
            read_into(self.files[i], 0, dest[a:a + int(self.sizes[i])])

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
    """The chunk files holding rows a..b of the plain zarr array ``src`` stored at ``path`` (a
    folder or a URL; whole chunk rows: from the row of ``a``'s chunk); None when the array is not
    plain, the rows are empty or out of range, or a chunk is absent (zarr leaves out chunks of
    fill values): read through zarr then."""
    chunks, shape = tuple(src.chunks), tuple(src.shape)
    if not chunk_heads.plain(src) or not 0 <= a < b <= shape[0]:
        return None
    k0, k1 = a // chunks[0], -(-b // chunks[0])
    grid = [math.ceil(n / c) for n, c in zip(shape[1:], chunks[1:])]
    files = tuple(join(path, src.metadata.encode_chunk_key((k,) + idx))
                  for k in range(k0, k1) for idx in np.ndindex(*grid))
    sizes = np.array(list(shards.file_pool("read").map(size, files)), dtype=np.int64)
    if (sizes < 0).any():
        return None
    starts = np.concatenate([[0], np.cumsum(aligned_up(sizes, shards.FRAME_ALIGN))[:-1]]).astype(np.int64)
    layout = shards.Layout(shape, chunks, chunks, np.dtype(src.dtype).str)
    return Chunks(files, starts, sizes, k0 * chunks[0], min(k1 * chunks[0], shape[0]) - k0 * chunks[0], layout)


def gather(parts, lo: int, hi: int):
    """Rows lo..hi of the array from decoded chunks: ``parts`` = [(flat, chunks, a, b), ...],
    rows a..b (in row order, covering lo..hi) from the frames ``flat`` (chunk-major, numpy or
    cupy) of ``chunks``. Each row is copied once, from the chunk rows holding it, into one new
    array padded to whole chunks on the other axes; returns the view of its real extent."""
    flat0, ch0 = parts[0][:2]
    layout = ch0.layout
    grid, inner = layout.shard_grid(1)[1:], layout.inner  # chunks along axes 1..; chunk shape
    full = array_module(flat0).empty((hi - lo,) + tuple(g * c for g, c in zip(grid, inner[1:])), flat0.dtype)
    for flat, ch, a, b in parts:
        _copy_rows(flat, ch, a, b, full[a - lo:b - lo])
    return full[(slice(None),) + tuple(slice(0, n) for n in layout.shape[1:])]


def _copy_rows(flat, ch: Chunks, a: int, b: int, dest) -> None:
    """Rows a..b of ch's decoded frames ``flat`` into ``dest`` (b - a rows, padded to whole
    chunks): one strided copy per chunk row."""
    nd, c0 = len(ch.layout.shape), ch.layout.inner[0]
    grid, inner = ch.layout.shard_grid(1)[1:], ch.layout.inner
    elems = math.prod(grid) * math.prod(inner)  # per chunk row
    # a chunk row's frames (g1.., c0, c1..) seen as (c0, g1, c1, g2, c2, ...): C order of its rows
    order = [nd - 1] + [x for ax in range(nd - 1) for x in (ax, nd + ax)]
    pairs = tuple(x for g, c in zip(grid, inner[1:]) for x in (g, c))
    for k in range((a - ch.row0) // c0, -(-(b - ch.row0) // c0)):
        top = ch.row0 + k * c0
        r0, r1 = max(a, top), min(b, top + c0)
        rows = own_slice(flat, k * elems, (k + 1) * elems).reshape(tuple(grid) + tuple(inner)).transpose(order)
        dest[r0 - a:r1 - a].reshape((r1 - r0,) + pairs)[...] = rows[r0 - top:r1 - top]
