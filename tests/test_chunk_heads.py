"""Lower halos decoded from the heads of the chunks below (engine/chunk_heads.py): equal to
zarr's own decode on odd shapes, dtypes and head lengths, fill values for chunks never
written, a short prefix falls back to the whole frame, and anything but plain bytes + zstd
chunks is left to zarr."""

import numpy as np
import pytest
import zarr

from distconv.engine import chunk_heads, read


def _array(tmp_path, x, chunks, name="a.zarr", **kw):
    z = zarr.create_array(str(tmp_path / name), shape=x.shape, chunks=chunks, dtype=x.dtype, **kw)
    z[...] = x
    return z


@pytest.mark.parametrize("shape, chunks, dtype", [((53, 45), (8, 16), "f4"),
                                                   ((29, 13, 22), (6, 5, 8), "i2"),
                                                   ((40, 31), (10, 31), "u1"),
                                                   ((37, 9), (12, 4), "f8")])
@pytest.mark.parametrize("smooth", [True, False])
def test_heads_equal_zarr(tmp_path, rng, shape, chunks, dtype, smooth):
    x = rng.standard_normal(shape) * 50
    if smooth:  # compresses well; the other is near raw zstd blocks
        x = np.round(np.cumsum(x, axis=-1) / 40)
    x = x.astype(dtype)
    z = _array(tmp_path, x, chunks, compressors=zarr.codecs.ZstdCodec(level=3))
    assert chunk_heads.plain(z)
    c0 = chunks[0]
    for a in range(0, shape[0], c0):
        for n in sorted({min(k, shape[0] - a) for k in (1, 2, c0)}):
            dest = np.full((n,) + shape[1:], 99, dtype)  # poisoned
            assert chunk_heads.read(z, a, a + n, dest)
            np.testing.assert_array_equal(dest, x[a:a + n])


def test_chunks_never_written_read_as_the_fill_value(tmp_path, rng):
    z = zarr.create_array(str(tmp_path / "f.zarr"), shape=(30, 20), chunks=(10, 8), dtype="f4",
                          fill_value=7.5)
    x = np.full((30, 20), 7.5, np.float32)
    x[10:20, 8:16] = rng.standard_normal((10, 8))
    z[10:20, 8:16] = x[10:20, 8:16]  # one chunk stored, the rest never written
    for a in (0, 10, 20):
        dest = np.zeros((3, 20), np.float32)
        assert chunk_heads.read(z, a, a + 3, dest)
        np.testing.assert_array_equal(dest, x[a:a + 3])


def test_a_prefix_too_short_reads_the_whole_frame(tmp_path, rng, monkeypatch):
    x = rng.standard_normal((64, 300)).astype(np.float32)  # incompressible: raw zstd blocks
    z = _array(tmp_path, x, (32, 300), compressors=zarr.codecs.ZstdCodec(level=1))
    monkeypatch.setattr(chunk_heads, "PREFIX_SLACK", 0)
    dest = np.zeros((20, 300), np.float32)
    assert chunk_heads.read(z, 32, 52, dest)
    np.testing.assert_array_equal(dest, x[32:52])


@pytest.mark.parametrize("kw", [{"compressors": None},
                                {"compressors": zarr.codecs.GzipCodec()},
                                {"shards": (20, 16)},
                                {"serializer": zarr.codecs.BytesCodec(endian="big")}])
def test_other_layouts_are_left_to_zarr(tmp_path, rng, kw):
    x = rng.standard_normal((40, 32)).astype(np.float32)
    z = _array(tmp_path, x, (10, 16), **kw)
    dest = np.zeros((3, 32), np.float32)
    assert not chunk_heads.plain(z)
    assert not chunk_heads.read(z, 10, 13, dest) and not dest.any()


def test_rows_that_are_not_a_chunk_head_are_left_to_zarr(tmp_path, rng):
    x = rng.standard_normal((40, 32)).astype(np.float32)
    z = _array(tmp_path, x, (10, 16))
    for a, b in ((11, 13), (10, 21), (30, 41)):  # not at a chunk start; past one chunk; past the end
        assert not chunk_heads.read(z, a, b, np.zeros((b - a, 32), np.float32))


def test_blocks_decode_no_whole_chunk_for_a_lower_halo(tmp_path, rng, monkeypatch):
    """Blocks in any order: each decodes its own rows, lower halos come from chunk heads, an
    upper halo from the block above when it ran first, else from storage."""
    x = rng.standard_normal((60, 9)).astype(np.float32)
    z = _array(tmp_path, x, (10, 9))
    seen, real = [], read.decode_into
    monkeypatch.setattr(read, "decode_into", lambda s, a, b, d: (seen.append((a, b)), real(s, a, b, d)))
    edges, depth = read.EdgeRows(), (2, 3)
    for r0, r1 in ((20, 40), (0, 20), (40, 60)):
        lo, hi = max(0, r0 - depth[0]), min(60, r1 + depth[1])
        host = np.full((hi - lo, 9), np.nan, np.float32)
        edges.read("r", z, host, (lo, r0, r1, hi), depth)
        np.testing.assert_array_equal(host, x[lo:hi])
    # (18, 20): block 20..40 ran before the block above it; block 40..60 took its upper halo
    assert seen == [(20, 40), (18, 20), (0, 20), (40, 60)]
