"""A GPU worker's warm-up reserves device memory on the streams its blocks and batch readers allocate
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
