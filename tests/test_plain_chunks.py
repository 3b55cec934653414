"""Whole chunks of a plain zstd array read as frames (graph/plain_chunks.py): decoded they equal
zarr's read on odd shapes and dtypes, every frame starts where the GPU decoder reads it, and an
absent chunk, a start off a chunk boundary or any other layout is left to zarr (None)."""

import numpy as np
import pytest
import zarr

from distconv.backends.cuda.zstd import FRAME_ALIGN
from distconv.backends.numpy import zstd as cpu_zstd
from distconv.graph import plain_chunks, shards


def _array(tmp_path, x, chunks, **kw):
    p = str(tmp_path / "a.zarr")
    z = zarr.create_array(p, shape=x.shape, chunks=chunks, dtype=x.dtype, **kw)
    z[...] = x
    return z, p


@pytest.mark.parametrize("shape, chunks, dtype", [((53, 45), (8, 16), "f4"), ((29, 13, 22), (6, 5, 8), "i2"),
                                                   ((37, 9), (12, 4), "f8"), ((40, 31), (10, 31), "u1")])
def test_frames_decode_to_zarrs_rows(tmp_path, rng, shape, chunks, dtype):
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    z, p = _array(tmp_path, x, chunks, compressors=zarr.codecs.ZstdCodec(level=3))
    c0 = chunks[0]
    for a in range(0, shape[0], c0):
        for b in sorted({min(shape[0], a + k) for k in (1, c0 - 1, c0, 2 * c0 + 1, shape[0])} - {a}):
            fr = plain_chunks.read_frames(z, p, a, b, alloc=lambda n: np.full(n, 0xAB, np.uint8))  # poisoned
            assert not (fr.starts % FRAME_ALIGN).any()
            np.testing.assert_array_equal(shards.decode_rows(fr, a, b, cpu_zstd.decode_frames), x[a:b])


def test_what_is_left_to_zarr(tmp_path, rng):
    x = rng.standard_normal((40, 32)).astype(np.float32)
    z, p = _array(tmp_path, x, (10, 16))
    for a, b in ((11, 20), (10, 10), (30, 41)):  # off a chunk start; no rows; past the end
        assert plain_chunks.read_frames(z, p, a, b) is None
    z[10:20, 16:] = 0  # zarr drops a chunk of fill values
    assert plain_chunks.read_frames(z, p, 0, 20) is None and plain_chunks.read_frames(z, p, 20, 40) is not None
    g, gp = _array(tmp_path / "g", x, (10, 16), compressors=zarr.codecs.GzipCodec())
    assert plain_chunks.read_frames(g, gp, 0, 10) is None
