"""A GPU worker's warm-up (engine/prewarm.py): it reserves device memory on the streams its blocks
and batch readers allocate on (cupy's pool gives a stream's freed memory to that stream's later
allocations only), and loads CuPy's kernels that every block launches."""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu


def test_memory_reserved_on_a_slot_serves_that_slots_allocations():
    import cupy

    from distconv.backends.cuda import transfer
    from distconv.backends.device import device
    from distconv.engine import batches

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    slots = {"reserve-test": 2**26, batches.reader_slot(0): 2**25}
    device(True).reserve(slots)
    taken = pool.total_bytes()
    assert taken >= 2**26 + 2**25
    for slot, nbytes in slots.items():
        with transfer.slot_stream(slot):
            a = cupy.ones(nbytes // 2, dtype=cupy.uint8)
            assert int(a.sum()) == nbytes // 2
            del a
    assert pool.total_bytes() == taken  # nothing new from the driver
    with cupy.cuda.Stream(non_blocking=True):  # another stream's allocation: from the driver
        b = cupy.empty(2**24, dtype=cupy.uint8)
        assert pool.total_bytes() > taken
        del b
    pool.free_all_blocks()


# A fresh process cuts block rows out of decoded 2-D and 3-D chunks (plain_chunks.gather, with
# rows that start and end inside chunk rows), trims them and runs the finite check, counting what
# CuPy does for those kernels beyond a load from its cache: NVRTC's version check (an empty
# compile, once a process and set of options) and compiles. "warm": the warm-up's loads first.
_LOADS = textwrap.dedent("""
    import sys
    import cupy, cupy.cuda.compiler as cc
    import numpy as np
    from distconv.backends.cuda import convolve, loader
    from distconv.core.tile import Tile
    from distconv.engine import plain_chunks, shards

    if sys.argv[1] == "warm":
        loader.warm_cupy()
    calls = {"version checks": 0, "compiles": 0}
    nvrtc = [n for n in ("_compile_using_nvrtc_no_warning", "_compile_using_nvrtc") if hasattr(cc, n)]
    assert hasattr(cc, "_preprocess") and nvrtc, "CuPy's compiler moved: update this test"

    def counted(what, real):
        def call(*a, **k):
            calls[what] += 1
            return real(*a, **k)
        return call

    cases = []  # (decoded chunks, their Chunks, rows a..b), made before the count starts
    for shape, chunks in (((300, 700), (64, 128)), ((40, 30, 50), (8, 16, 32))):
        layout = shards.Layout(shape, chunks, chunks, "<f4")
        grid = layout.shard_grid(1)[1:]
        k1 = -(-shape[0] // chunks[0])
        flat = cupy.zeros(k1 * int(np.prod(grid)) * int(np.prod(chunks)), dtype=cupy.float32)
        ch = plain_chunks.Chunks((), np.zeros(0, np.int64), np.zeros(0, np.int64), 0, shape[0], layout)
        cases.append((flat, ch, 3, shape[0] - 5))
    big = cupy.zeros((2100, 2100), cupy.float32)  # a block's size: CUB's all in blocks of 512
    cc._preprocess = counted("version checks", cc._preprocess)
    setattr(cc, nvrtc[0], counted("compiles", getattr(cc, nvrtc[0])))
    for flat, ch, a, b in cases:
        rows = plain_chunks.gather([(flat, ch, a, b)], a, b)
        trimmed = cupy.ascontiguousarray(rows[2:-2, 1:-1])
        assert convolve.finite(Tile.extended(trimmed, ((0, 0),) * trimmed.ndim))
    assert convolve.finite(Tile.extended(big, ((0, 0), (0, 0))))
    cupy.cuda.get_current_stream().synchronize()
    print(calls["version checks"], calls["compiles"])
""")


def _calls(mode: str, env: dict) -> tuple:
    res = subprocess.run([sys.executable, "-c", _LOADS, mode], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return tuple(int(x) for x in res.stdout.split()[-2:])


def test_the_warm_up_loads_the_cupy_kernels_a_block_launches(tmp_path):
    import os

    env = {**os.environ, "CUPY_CACHE_DIR": str(tmp_path / "cache")}  # empty: the warm-up builds its kernels
    assert _calls("warm", env) == (0, 0)  # the block's kernels were the warm-up's, its version check done
    assert _calls("cold", env)[0] > 0  # the count sees a process without the warm-up


# In a fresh process (nothing loaded yet), rows cut from chunk rows at the end of a batch over
# 2 GiB, after the same rows cut from a batch of their own size; prints how many kernels the
# second cut loaded, and whether both cuts equal the rows put together by hand.
_BIG = textwrap.dedent("""
    import cupy, cupy.cuda.compiler as cc
    import numpy as np
    from distconv.engine import plain_chunks, shards

    shape, chunks = (96, 700), (32, 128)
    layout = shards.Layout(shape, chunks, chunks, "<f4")
    grid = layout.shard_grid(1)[1:]
    elems = int(np.prod(grid)) * int(np.prod(chunks))  # a chunk row
    small = cupy.arange(3 * elems, dtype=cupy.float32)
    big = cupy.zeros(2**31 // 4 + 3 * elems, dtype=cupy.float32)  # the same chunk rows at its end
    big[-3 * elems:] = small
    ch = plain_chunks.Chunks((), np.zeros(0, np.int64), np.zeros(0, np.int64), 0, shape[0], layout)
    expect = plain_chunks.gather([(small, ch, 5, 90)], 5, 90)
    loads = []
    real = cc._compile_with_cache_cuda
    cc._compile_with_cache_cuda = lambda *a, **k: loads.append(1) or real(*a, **k)
    got = plain_chunks.gather([(big[-3 * elems:], ch, 5, 90)], 5, 90)
    flat = cupy.asnumpy(small).reshape(3, *grid, *chunks)  # chunk (k, j): rows k*32.., columns j*128..
    whole = np.concatenate([np.concatenate(list(flat[k]), axis=1) for k in range(3)], axis=0)[:, :700]
    print(len(loads), bool((cupy.asnumpy(got) == whole[5:90]).all() and (cupy.asnumpy(expect) == whole[5:90]).all()))
""")


def test_rows_cut_from_a_batch_over_2_gib_run_the_kernels_of_a_small_one():
    """A batch's decoded chunks over 2 GiB: its rows are copied by the same (32-bit indexed)
    kernels as rows of a block-sized array, those the rehearsal loaded (no load of a kernel of
    their own inside a job, where a load waits for the device), and the rows are right."""
    res = subprocess.run([sys.executable, "-c", _BIG], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split()[-2:] == ["0", "True"], res.stdout
