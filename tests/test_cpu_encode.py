"""A host block's shards encoded from its chunk-major view, each frame gathered by the thread
that compresses it (shards.encode_block, backends/numpy/zstd.py): the same bytes as from the
copied block, for every layout (padded last shards, 1-D to 3-D, inner chunks of one row)."""

import numpy as np
import pytest

from distconv.backends.numpy import zstd
from distconv.engine import shards

LAYOUTS = [((64, 40), (16, 20), (8, 10)), ((50, 40), (16, 40), (4, 40)), ((64,), (32,), (8,)),
           ((12, 10, 6), (4, 10, 6), (2, 5, 3)), ((16, 8), (8, 8), (1, 8))]


@pytest.mark.parametrize("shape, shard, inner", LAYOUTS)
def test_frames_from_the_view_equal_those_of_the_copy(shape, shard, inner):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    layout = shards.Layout(shape, shard, inner, "<f4")
    view = shards.chunk_major(x, layout, copy=False)
    copied = shards.chunk_major(x, layout)
    assert copied.flags.c_contiguous and np.array_equal(np.asarray(view).reshape(-1), copied.reshape(-1))
    if shape[0] % shard[0] == 0:  # nothing to pad: a view of the block, no copy
        assert np.shares_memory(view, x)
    got = shards.encode_block(layout, x, zstd.encode_frames)
    want = zstd.encode_frames(copied, layout.frame_nbytes, shards.FRAME_ALIGN)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    flat = zstd.decode_frames(*got, layout.frame_nbytes, np.float32)
    np.testing.assert_array_equal(shards.from_chunk_major(flat, layout, shape[0]), x)
