"""Sharded Zarr v3 outputs written block by block, with the codec work wherever the block lives.

A block is a slab of whole shards (all of axes 1.. and a multiple of the shard rows). Its
inner chunks are laid out chunk-major (each inner chunk contiguous, shards in C order, inner
chunks in C order within a shard), compressed as a batch of zstd frames (nvCOMP on the GPU,
numcodecs threads on the CPU: backends/*/zstd.py) and each shard file is the frames followed
by the index zarr's sharding codec reads: (offset, nbytes) uint64 per inner chunk, then its
crc32c. Plain zarr-python reads the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

INNER_BYTES = 2**20  # ~1 MiB inner chunks: many frames per block for the GPU codec, and
                     # reads that do not decode a whole shard for a small region


def inner_shape(shard: tuple, itemsize: int, target: int | None = None) -> tuple:
    """Inner chunk shape dividing ``shard``: halve the longest even axis until <= target
    (INNER_BYTES by default)."""
    target = INNER_BYTES if target is None else target
    inner = list(shard)
    while math.prod(inner) * itemsize > target:
        even = [a for a in range(len(inner)) if inner[a] % 2 == 0]
        if not even:
            break
        a = max(even, key=lambda k: inner[k])
        inner[a] //= 2
    return tuple(inner)


@dataclass(frozen=True)
class Layout:
    shape: tuple        # the array
    shard: tuple        # shard shape
    inner: tuple        # inner chunk shape (divides shard)
    dtype: str

    @property
    def per_shard(self) -> tuple:
        return tuple(s // c for s, c in zip(self.shard, self.inner))

    @property
    def frame_nbytes(self) -> int:
        return math.prod(self.inner) * np.dtype(self.dtype).itemsize

    def shard_grid(self, rows: int) -> tuple:
        """Shards along each axis covering ``rows`` rows of axis 0 and every other axis."""
        return (-(-rows // self.shard[0]),) + tuple(-(-n // s) for n, s in zip(self.shape[1:], self.shard[1:]))


def chunk_major(block, layout: Layout):
    """``block`` (rows of the array starting at a shard boundary) padded with zeros to whole
    shards and reordered so each inner chunk is contiguous (numpy or cupy, same code)."""
    from ..core.arrays import array_module

    xp = array_module(block)
    grid = layout.shard_grid(block.shape[0])
    full = tuple(g * s for g, s in zip(grid, layout.shard))
    if full != block.shape:
        padded = xp.zeros(full, dtype=block.dtype)
        padded[tuple(slice(0, n) for n in block.shape)] = block
        block = padded
    nd = block.ndim
    split = []
    for g, k, c in zip(grid, layout.per_shard, layout.inner):
        split += [g, k, c]
    order = [3 * a for a in range(nd)] + [3 * a + 1 for a in range(nd)] + [3 * a + 2 for a in range(nd)]
    return xp.ascontiguousarray(block.reshape(split).transpose(order))


def from_chunk_major(flat, layout: Layout, rows: int):
    """Inverse of chunk_major: the first ``rows`` rows (and the array's extent) of the slab."""
    grid = layout.shard_grid(rows)
    nd = len(layout.shape)
    arr = flat.reshape(tuple(grid) + layout.per_shard + layout.inner)
    order = []
    for a in range(nd):
        order += [a, nd + a, 2 * nd + a]
    full = tuple(g * s for g, s in zip(grid, layout.shard))
    arr = arr.transpose(order).reshape(full)
    return arr[(slice(0, rows),) + tuple(slice(0, n) for n in layout.shape[1:])]


def shard_bytes(frames: list) -> list:
    """The pieces of one shard file: the frames, then the index and its crc32c."""
    import google_crc32c

    sizes = np.array([len(memoryview(f).cast("B")) for f in frames], dtype=np.uint64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.uint64)
    index = np.stack([offsets, sizes], axis=1).astype("<u8").tobytes()
    crc = np.uint32(google_crc32c.value(index)).astype("<u4").tobytes()
    return [*frames, index, crc]


def _pool(kind: str):
    """Threads for shard file reads or writes (the GIL is released in the system calls: one
    thread moved ~0.6 GB/s into tmpfs inside a job, NOTES.md). Reads and writes have a pool
    each, so one block's reads never queue behind another block's writes."""
    if kind not in _POOLS:
        from concurrent.futures import ThreadPoolExecutor

        _POOLS.setdefault(kind, ThreadPoolExecutor(FILE_THREADS, thread_name_prefix=f"distconv-{kind}"))
    return _POOLS[kind]


FILE_THREADS = 8
_POOLS: dict = {}


def write_block(path: str, layout: Layout, block, row0: int, encode, lap=None) -> int:
    """Encode ``block`` (rows row0.. of the array, row0 on a shard boundary) with ``encode``
    (backends' encode_frames) and write its shard files, several at once; returns bytes
    written. ``lap(stage)`` is called after the encode and after the writes."""
    frames = encode(chunk_major(block, layout), layout.frame_nbytes)
    if lap:
        lap("encode")
    grid = layout.shard_grid(block.shape[0])
    per = math.prod(layout.per_shard)
    first = row0 // layout.shard[0]
    keys = [Path(path, "c", str(first + idx[0]), *map(str, idx[1:])) for idx in np.ndindex(*grid)]
    for parent in dict.fromkeys(k.parent for k in keys):
        parent.mkdir(parents=True, exist_ok=True)

    def write(n: int) -> int:
        pieces = shard_bytes(frames[n * per:(n + 1) * per])
        with open(keys[n], "wb") as f:
            f.writelines(pieces)
        return sum(len(memoryview(p).cast("B")) for p in pieces)

    written = sum(_pool("write").map(write, range(len(keys))))
    if lap:
        lap("files")
    return written


def read_frames(path: str, layout: Layout, row0: int, rows: int) -> list:
    """The zstd frames of every inner chunk of the shards covering rows row0..row0+rows, in
    chunk-major order (an absent chunk or shard: None)."""
    grid = layout.shard_grid(rows)
    first = row0 // layout.shard[0]
    frames: list = []
    for idx in np.ndindex(*grid):
        frames += _shard_frames(path, layout, (first + idx[0],) + idx[1:])
    return frames


def read_rows(path: str, layout: Layout, lo: int, hi: int, decode, lap=None):
    """Rows lo..hi of a sharded array written in ``layout``, decoding only the inner-chunk rows
    that cover them, with ``decode`` (backends' decode_frames: on the GPU it returns cupy).
    None when an inner chunk is absent (zarr leaves chunks of fill values out): read through
    zarr then. Shard files are read several at once, each once; ``lap(stage)`` is called
    after the files are read and after the decode."""
    c0, per0 = layout.inner[0], layout.per_shard[0]
    k0, k1 = lo // c0, -(-hi // c0)
    # a virtual layout whose "shards" are one inner-chunk row high: frames come in its order
    rows = Layout(layout.shape, (c0,) + layout.shard[1:], layout.inner, layout.dtype)
    other = rows.shard_grid(1)[1:]
    per_other = math.prod(layout.per_shard[1:])
    wanted = [(k, (k // per0,) + idx) for k in range(k0, k1) for idx in np.ndindex(*other)]
    inner_rows: dict = {}  # per shard: the inner-chunk rows wanted (a halo wants one or two)
    for k, key in wanted:
        r = k % per0
        a, b = inner_rows.get(key, (r, r + 1))
        inner_rows[key] = (min(a, r), max(b, r + 1))
    shard = dict(zip(inner_rows, _pool("read").map(lambda kv: _shard_frames(path, layout, *kv), inner_rows.items())))
    frames = []
    for k, key in wanted:
        start = (k % per0) * per_other
        frames += shard[key][start:start + per_other]
    if lap:
        lap("files")
    if any(f is None for f in frames):
        return None
    flat = decode(frames, layout.frame_nbytes, np.dtype(layout.dtype))
    out = from_chunk_major(flat, rows, (k1 - k0) * c0)
    if lap:
        lap("decode")
    return out[lo - k0 * c0:hi - k0 * c0]


def _shard_frames(path: str, layout: Layout, key: tuple, inner_rows: tuple | None = None) -> list:
    """The frames of one shard file (None: an absent chunk). With ``inner_rows`` = (a, b) only
    the inner chunks of those rows are read (the index, then one byte range); the others are
    left None and must not be used."""
    per = math.prod(layout.per_shard)
    f = Path(path, "c", *map(str, key))
    if not f.exists():
        return [None] * per
    nidx = 16 * per + 4
    with open(f, "rb") as fh:
        if inner_rows is None or inner_rows == (0, layout.per_shard[0]):
            data, base, first, last = fh.read(), 0, 0, per
            index = np.frombuffer(data[-nidx:-4], dtype="<u8").reshape(per, 2)
        else:
            fh.seek(-nidx, 2)
            index = np.frombuffer(fh.read(nidx)[:-4], dtype="<u8").reshape(per, 2)
            per_row = per // layout.per_shard[0]
            first, last = inner_rows[0] * per_row, inner_rows[1] * per_row
            there = index[first:last][index[first:last, 0] != _ABSENT]
            base = int(there[:, 0].min()) if len(there) else 0
            end = int((there[:, 0] + there[:, 1]).max()) if len(there) else 0
            fh.seek(base)
            data = fh.read(end - base)
    mv = memoryview(data)
    frames: list = [None] * per
    for j in range(first, last):
        off, n = int(index[j, 0]), int(index[j, 1])
        if off != _ABSENT:
            frames[j] = mv[off - base:off - base + n]
    return frames


_ABSENT = 2**64 - 1  # the index entry of a chunk zarr left out (all fill value)


def layout_of(meta: dict, shape, dtype) -> Layout | None:
    """The Layout of a zarr array's metadata when this module can read it directly, else None."""
    codecs = meta.get("codecs", ())
    if len(codecs) != 1 or codecs[0].get("name") != "sharding_indexed":
        return None
    cfg = codecs[0]["configuration"]
    shard = meta.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
    layout = Layout(tuple(shape), tuple(shard), tuple(cfg["chunk_shape"]), np.dtype(dtype).str)
    return layout if matches(meta, layout) and np.dtype(dtype).byteorder in "<=|" else None


def matches(meta: dict, layout: Layout) -> bool:
    """True when a zarr array's metadata is the sharded zstd layout this module reads."""
    codecs = meta.get("codecs", ())
    if len(codecs) != 1 or codecs[0].get("name") != "sharding_indexed":
        return False
    cfg = codecs[0]["configuration"]
    inner = [c.get("name") for c in cfg.get("codecs", ())]
    index = [c.get("name") for c in cfg.get("index_codecs", ())]
    grid = meta.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
    return (tuple(cfg.get("chunk_shape", ())) == layout.inner and tuple(grid or ()) == layout.shard
            and inner[:1] == ["bytes"] and inner[1:] in (["zstd"],) and index == ["bytes", "crc32c"]
            and cfg.get("index_location", "end") == "end"
            and meta.get("chunk_key_encoding", {}).get("configuration", {}).get("separator", "/") == "/")
