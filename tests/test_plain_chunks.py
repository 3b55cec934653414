"""Whole chunks of a plain zstd array read as frames (engine/plain_chunks.py): decoded they equal
zarr's read on odd shapes and dtypes, every frame starts where the GPU decoder reads it, a
buffer filled piece by piece holds the same bytes, rows cut from decoded chunks equal zarr's,
and an absent chunk or any other layout is left to zarr (None)."""

import numpy as np
import pytest
import zarr

from distconv.engine.shards import FRAME_ALIGN
from distconv.backends.numpy import zstd as cpu_zstd
from distconv.engine import plain_chunks


def _array(tmp_path, x, chunks, **kw):
    p = str(tmp_path / "a.zarr")
    z = zarr.create_array(p, shape=x.shape, chunks=chunks, dtype=x.dtype, **kw)
    z[...] = x
    return z, p


def _read(ch):
    buf = np.full(ch.nbytes, 0xAB, np.uint8)  # poisoned: bytes between frames are never read
    ch.read(buf)
    return buf


@pytest.mark.parametrize("shape, chunks, dtype", [((53, 45), (8, 16), "f4"), ((29, 13, 22), (6, 5, 8), "i2"),
                                                   ((37, 9), (12, 4), "f8"), ((40, 31), (10, 31), "u1")])
def test_rows_cut_from_decoded_chunks_equal_zarrs(tmp_path, rng, shape, chunks, dtype):
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    z, p = _array(tmp_path, x, chunks, compressors=zarr.codecs.ZstdCodec(level=3))
    c0 = chunks[0]
    for a in range(0, shape[0], 5):
        for b in sorted({min(shape[0], a + k) for k in (1, c0 - 1, c0, 2 * c0 + 1, shape[0])} - {a}):
            ch = plain_chunks.locate(z, p, a, b)
            assert not (ch.starts % FRAME_ALIGN).any() and ch.row0 <= a and b <= ch.row0 + ch.rows
            assert ch.row0 % c0 == 0 and ch.row0 + ch.rows - b < c0
            fr = ch.frames(_read(ch))
            flat = cpu_zstd.decode_frames(fr.buf, fr.starts, fr.sizes, ch.layout.frame_nbytes, np.dtype(dtype))
            for lo, hi in {(a, b), (b - 1, b), (a, a + 1)}:
                np.testing.assert_array_equal(plain_chunks.gather([(flat, ch, lo, hi)], lo, hi), x[lo:hi])


@pytest.mark.parametrize("piece", [1, 900, 5000, 10**9])
def test_pieces_fill_the_same_buffer(tmp_path, rng, piece):
    x = rng.standard_normal((61, 47)).astype(np.float32)
    z, p = _array(tmp_path, x, (8, 16))
    ch = plain_chunks.locate(z, p, 3, 61)
    whole = _read(ch)
    cuts, fill = ch.pieces(piece)
    assert cuts[0] == 0 and cuts[-1] == ch.nbytes and all(c % FRAME_ALIGN == 0 for c in cuts[:-1])
    assert sorted(set(cuts)) == cuts and (len(cuts) == 2) == (piece >= ch.nbytes)
    pieced = np.full(ch.nbytes, 0xAB, np.uint8)
    for k in range(len(cuts) - 1):
        dest = np.full(cuts[k + 1] - cuts[k], 0xCD, np.uint8)
        fill(k, dest)
        pieced[cuts[k]:cuts[k + 1]] = dest
    for a, n in zip(ch.starts, ch.sizes):
        np.testing.assert_array_equal(pieced[a:a + n], whole[a:a + n])


def test_what_is_left_to_zarr(tmp_path, rng):
    x = rng.standard_normal((40, 32)).astype(np.float32)
    z, p = _array(tmp_path, x, (10, 16))
    for a, b in ((10, 10), (30, 41), (-1, 5)):  # no rows; past the end; before the start
        assert plain_chunks.locate(z, p, a, b) is None
    z[10:20, 16:] = 0  # zarr drops a chunk of fill values
    assert plain_chunks.locate(z, p, 0, 20) is None and plain_chunks.locate(z, p, 20, 40) is not None
    g, gp = _array(tmp_path / "g", x, (10, 16), compressors=zarr.codecs.GzipCodec())
    assert plain_chunks.locate(g, gp, 0, 10) is None
