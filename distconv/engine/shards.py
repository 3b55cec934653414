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

import numpy as np

from ..backends.device import frame_align
from ..core.arrays import array_module
from ..core.frames import aligned_up
from .location import Location, join, read_into, read_tail, write_pieces
from .process import STATE

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


def chunk_major(block, layout: Layout, copy: bool = True):
    """``block`` (rows of the array starting at a shard boundary) padded with zeros to whole
    shards and reordered so each inner chunk is contiguous (numpy or cupy, same code); without
    ``copy``, where no padding is needed, the reordered view (its trailing axes an inner chunk)."""
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
    view = block.reshape(split).transpose(order)
    return xp.ascontiguousarray(view) if copy else view


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


# The format's frame alignment: every frame of distconv's shard files (and of the device
# buffers nvCOMP reads them from) starts on a multiple of it. Its one home is kernels/zstd.cu,
# whose packing kernel moves frames in words of this size.
FRAME_ALIGN = frame_align()


# Every frame of our shard files starts on a multiple of FRAME_ALIGN bytes (zero padding between
# frames; zarr reads by the index), and read buffers keep a file's offsets modulo FRAME_ALIGN:
# nvCOMP then decodes the frames where the file read put them, with no per-frame copy. The
# encoders lay frames out the same way, so a shard's frames are written as one piece.


def shard_index(offsets, sizes) -> list:
    """The tail of a shard file: its index (offset, nbytes per inner chunk) and the crc32c."""
    import google_crc32c

    index = np.stack([np.asarray(offsets), np.asarray(sizes)], axis=1).astype("<u8").tobytes()
    return [index, np.uint32(google_crc32c.value(index)).astype("<u4").tobytes()]


def file_pool(kind: str):
    """Threads for shard file reads or writes (the GIL is released in the system calls, and one
    thread alone moves too few bytes to keep the blocks fed). Reads and writes have a pool each,
    so one block's reads never queue behind another block's writes."""
    from concurrent.futures import ThreadPoolExecutor

    return STATE.get(f"file {kind}s", lambda: ThreadPoolExecutor(FILE_THREADS, thread_name_prefix=f"distconv-{kind}"))


FILE_THREADS = 8


def encode_block(layout: Layout, block, encode) -> tuple:
    """``block``'s inner chunks in chunk-major order compressed by ``encode`` (backends'
    encode_frames, asked for frames on FRAME_ALIGN boundaries): (buf, starts, sizes)."""
    # the frames are cut by the layout's itemsize: a block of another dtype would be written
    # as reinterpreted bytes (same itemsize) or as too few frames
    if block.dtype != np.dtype(layout.dtype):
        raise RuntimeError(f"a block of dtype {block.dtype} for an output of dtype "
                           f"{np.dtype(layout.dtype)}: the chain's result is not the dtype it planned")
    # host blocks go to the CPU codec as the reordered view: its threads gather each frame
    host = array_module(block) is np
    return encode(chunk_major(block, layout, copy=not host), layout.frame_nbytes, FRAME_ALIGN)


def write_encoded(path: str, layout: Layout, encoded: tuple, rows: int, row0: int, into=None) -> int:
    """The shard files of an encoded block of ``rows`` rows from row0, several at once, each
    written as its frames (one piece: the encoders lay them end to end) and its index, at
    ``into(path of the file)`` where given (a fenced write's name aside); returns bytes written."""
    buf, starts, sizes = encoded
    grid = layout.shard_grid(rows)
    per = math.prod(layout.per_shard)
    first = row0 // layout.shard[0]
    names = [("c", str(first + idx[0]), *map(str, idx[1:])) for idx in np.ndindex(*grid)]
    keys = [join(path, *n) for n in names]
    if into is not None:
        keys = [into(k) for k in keys]
    for folder in dict.fromkeys(join(path, *n[:-1]) for n in names):
        Location(folder).make_dir()

    def write(n: int) -> int:  # three writes per file: few GIL re-acquires per block
        a, b = n * per, (n + 1) * per
        return write_pieces(keys[n], [buf[starts[a]:starts[b - 1] + aligned_up(sizes[b - 1], FRAME_ALIGN)],
                                      *shard_index(starts[a:b] - starts[a], sizes[a:b])])

    return sum(file_pool("write").map(write, range(len(keys))))


@dataclass(frozen=True)
class Frames:
    """zstd frames read from shard files into one host buffer: frame i is
    ``buf[starts[i]:starts[i] + sizes[i]]``; they cover rows ``row0 .. row0 + rows`` in the
    chunk-major order of ``layout`` (shards one inner-chunk row high)."""
    buf: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    row0: int
    rows: int
    layout: Layout


def read_frames(path: str, layout: Layout, lo: int, hi: int, alloc=None) -> Frames | None:
    """The frames of every inner chunk covering rows lo..hi, each shard file's byte range read
    straight into one buffer from ``alloc(nbytes)`` (np.empty by default; pinned memory on
    the GPU path: no per-frame copies), shard files several at once. None when an inner chunk
    is absent (zarr leaves chunks of fill values out): read through zarr then."""
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
    spans = dict(zip(inner_rows, file_pool("read").map(lambda kv: _span(path, layout, *kv), inner_rows.items())))
    if any(sp is None for sp in spans.values()):
        return None
    pos, at = 0, {}
    for key, (_, _, base, end) in spans.items():  # keep each range's offsets modulo FRAME_ALIGN
        at[key] = aligned_up(pos, FRAME_ALIGN) + base % FRAME_ALIGN
        pos = at[key] + end - base
    buf = (alloc or (lambda n: np.empty(n, np.uint8)))(pos)
    list(file_pool("read").map(lambda key: read_into(spans[key][0], spans[key][2],
                                                   buf[at[key]:at[key] + spans[key][3] - spans[key][2]]), spans))
    starts, sizes = [], []
    for k, key in wanted:
        _, index, base, _ = spans[key]
        j = (k % per0 - inner_rows[key][0]) * per_other
        part = index[j:j + per_other]
        starts.append(part[:, 0].astype(np.int64) - base + at[key])
        sizes.append(part[:, 1].astype(np.int64))
    return Frames(buf, np.concatenate(starts), np.concatenate(sizes), k0 * c0, (k1 - k0) * c0, rows)


def decode_rows(fr: Frames, lo: int, hi: int, decode):
    """Rows lo..hi out of the frames read for them, decoded by ``decode`` (backends'
    decode_frames: on the GPU it returns cupy)."""
    flat = decode(fr.buf, fr.starts, fr.sizes, fr.layout.frame_nbytes, np.dtype(fr.layout.dtype))
    out = from_chunk_major(flat, fr.layout, fr.rows)
    return out[lo - fr.row0:hi - fr.row0]


def _span(path: str, layout: Layout, key: tuple, inner_rows: tuple):
    """(file, index entries of inner-chunk rows inner_rows = (a, b), first byte, end byte) of
    one shard file: the byte range holding those chunks; None when the file or one of those
    chunks is absent (checked before any byte range is read)."""
    per = math.prod(layout.per_shard)
    f = join(path, "c", *map(str, key))
    nidx = 16 * per + 4
    tail = read_tail(f, nidx)
    if tail is None:
        return None
    index = np.frombuffer(tail[:-4], dtype="<u8").reshape(per, 2)
    per_row = per // layout.per_shard[0]
    part = index[inner_rows[0] * per_row:inner_rows[1] * per_row]
    if (part[:, 0] == _ABSENT).any():
        return None
    return f, part, int(part[:, 0].min()), int((part[:, 0] + part[:, 1]).max())


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
    # the frames hold little-endian elements (a big-endian array is read through zarr)
    endian = ((cfg.get("codecs") or [{}])[0].get("configuration") or {}).get("endian", "little")
    little = endian == "little" or np.dtype(layout.dtype).itemsize == 1
    return (tuple(cfg.get("chunk_shape", ())) == layout.inner and tuple(grid or ()) == layout.shard
            and inner[:1] == ["bytes"] and little and inner[1:] in (["zstd"],) and index == ["bytes", "crc32c"]
            and cfg.get("index_location", "end") == "end"
            and meta.get("chunk_key_encoding", {}).get("configuration", {}).get("separator", "/") == "/")
