"""The first rows of a Zarr array's storage chunks, decoded from the head of each chunk's zstd
stream only.

A block's lower halo is the first few rows of the chunk row below it. Decoding them through
zarr decodes those whole chunks (64 MiB each as zarr and dask write by default: half a 1 GiB
block's decode work per halo); a zstd frame decodes in order, so the first rows need only the
frame's first blocks: a few hundred KiB read and decoded per chunk instead of the whole file.
Only for the plain layout (codecs bytes + zstd, no sharding, a regular grid); anything else is
read through zarr.
"""

from __future__ import annotations

import math

import numpy as np

# zstd stores at most 128 KiB of decoded data per block, so the compressed prefix that holds
# the first n decoded bytes is at most n plus one block plus headers
ZSTD_BLOCK = 128 * 1024
PREFIX_SLACK = 2 * ZSTD_BLOCK


def plain(src) -> bool:
    """Whether the zarr array ``src``'s chunks are single zstd frames of its C-order elements."""
    meta = src.metadata.to_dict()
    if meta.get("zarr_format") != 3 or meta.get("chunk_grid", {}).get("name") != "regular":
        return False
    codecs = [c if isinstance(c, dict) else {"name": c} for c in meta.get("codecs", ())]
    if [c.get("name") for c in codecs] != ["bytes", "zstd"]:
        return False
    endian = (codecs[0].get("configuration") or {}).get("endian", "little")
    return np.dtype(src.dtype).itemsize == 1 or endian == "little"


def read(src, a: int, b: int, dest: np.ndarray) -> bool:
    """Fill ``dest`` with rows a..b of the zarr array ``src`` from the heads of the chunks whose
    first row is ``a``; False (``dest`` untouched) when the rows are not such a head or the
    array is not plain."""
    chunks, shape = src.chunks, src.shape
    if not plain(src) or a % chunks[0] or not 0 < b - a <= chunks[0] or b > shape[0]:
        return False
    from zarr.core.buffer import default_buffer_prototype

    proto = default_buffer_prototype()
    grid = [range(math.ceil(n / c)) for n, c in zip(shape[1:], chunks[1:])]
    per_row = math.prod(chunks[1:]) * np.dtype(src.dtype).itemsize
    fill = src.metadata.fill_value
    for idx in np.ndindex(*(len(g) for g in grid)):
        where = tuple(slice(j * c, min((j + 1) * c, n)) for j, c, n in zip(idx, chunks[1:], shape[1:]))
        key = src.metadata.encode_chunk_key((a // chunks[0],) + idx)
        head = _head(src.store_path / key, (b - a) * per_row, proto)
        if head is None:  # a chunk never written holds the fill value
            dest[(slice(None),) + where] = fill
            continue
        piece = np.frombuffer(head, dtype=src.dtype).reshape((b - a,) + tuple(chunks[1:]))
        dest[(slice(None),) + where] = piece[(slice(None),) + tuple(slice(0, s.stop - s.start) for s in where)]
    return True


def _head(path, nbytes: int, proto) -> bytes | None:
    """The first ``nbytes`` decoded bytes of the zstd frame stored at ``path`` (a zarr
    StorePath), reading only a prefix of it; None when nothing is stored there."""
    from zarr.abc.store import RangeByteRequest
    from zarr.core.sync import sync

    buf = sync(path.get(prototype=proto, byte_range=RangeByteRequest(0, nbytes + PREFIX_SLACK)))
    if buf is None:
        return None
    out = _decoded_prefix(buf.to_bytes(), nbytes)
    if len(out) < nbytes:  # a prefix that short cannot happen for a valid frame; read it whole
        out = _decoded_prefix(sync(path.get(prototype=proto)).to_bytes(), nbytes)
    if len(out) < nbytes:
        raise ValueError(f"a stored chunk at {path} decodes to fewer than {nbytes} bytes")
    return out


def _decoded_prefix(frame: bytes, nbytes: int) -> bytes:
    """Up to ``nbytes`` bytes from the start of the zstd stream in ``frame``."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(frame, read_across_frames=False)
    parts, got = [], 0
    while got < nbytes:
        try:
            part = reader.read(nbytes - got)
        except zstandard.ZstdError:  # the frame was cut short (a prefix): stop here
            break
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)
