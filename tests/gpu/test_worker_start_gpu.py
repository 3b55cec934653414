"""A GPU worker's start: its CUDA context made by distconv's warm-up beside its registration, not
before it; the warm-up reserves device memory on the streams its blocks and batch readers allocate
on (cupy's pool gives a stream's freed memory to that stream's later allocations only)."""

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


def _sum_on_gpu():
    import cupy

    return int(cupy.arange(5).sum()), cupy.cuda.runtime.getDevice()


def test_workers_register_before_their_cuda_context_and_use_the_gpu():
    import distconv as dc
    from distconv.engine import prewarm

    with dc.cluster({"type": "cuda", "n_workers": 1, "dashboard_address": None}, quiet=True) as client:
        assert client.cluster.new_spec["options"]["preload_argv"][-1] == "--no-create-cuda-context"
        prewarm.wait(client, 60)  # the warm-up made the context
        assert list(client.run(_sum_on_gpu).values()) == [(10, 0)]
