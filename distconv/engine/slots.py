"""Who runs when inside one worker process: I/O slots (blocks in flight, lowest block first),
the device gate (blocks in their device stage at once), the GIL switch interval while blocks
run, and the clock that times a block's stages."""

from __future__ import annotations

import contextlib
import functools
import heapq
import itertools
import threading
import time

from ..backends.device import device
from . import settings


class Slots:
    """I/O slots handed out lowest block first, so a block's upper neighbour in this process
    holds a slot (and has promised its edge rows, read.EdgeRows) before the block itself does:
    in FIFO order, blocks that reached the queue first took the slots, and many upper halos
    were decoded again from whole chunks."""

    def __init__(self, n: int):
        self._free = list(range(n))
        self._waiting: list = []  # heap of (block, arrival)
        self._arrivals = itertools.count()
        self._cv = threading.Condition()

    def get(self, block: int) -> int:
        me = (block, next(self._arrivals))
        with self._cv:
            heapq.heappush(self._waiting, me)
            self._cv.wait_for(lambda: self._free and self._waiting[0] == me)
            heapq.heappop(self._waiting)
            self._cv.notify_all()  # the next in line may take another free slot
            return self._free.pop()

    def put(self, slot: int):
        with self._cv:
            self._free.append(slot)
            self._cv.notify_all()


@functools.cache
def slots(gpu: bool) -> Slots:
    """The process's I/O slots, made at its first block (which, in a dask worker, also sets the
    switch interval: local_blocks() scopes it where blocks run in a user's own process)."""
    import sys

    try:
        from distributed import get_worker

        get_worker()
        sys.setswitchinterval(min(sys.getswitchinterval(), settings.SWITCH_INTERVAL_S))
    except (ImportError, ValueError):
        pass
    return Slots(settings.io_slots(gpu))


@contextlib.contextmanager
def local_blocks():
    """Around blocks run on dask's local threads in this process: the engine's switch interval
    while they run, the process's own after."""
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, settings.SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@contextlib.contextmanager
def device_turn(gpu: bool, slot: int, clock: Clock):
    """This block's turn on its device (on a GPU: one of device_blocks() at a time, on its
    slot's stream), so the device stage of some blocks runs while other slots read and write
    files."""
    if not gpu:
        yield
        return
    with _device_gate(), device(gpu).turn(slot):
        clock.lap("device wait")
        yield


@functools.cache
def _device_gate() -> threading.Semaphore:
    return threading.Semaphore(settings.device_blocks())


class Clock:
    """Seconds per stage of one block (``laps``), the device synced before each reading."""

    def __init__(self, gpu: bool):
        self._device, self.laps = device(gpu), {}
        self._t = time.perf_counter()

    def lap(self, stage: str):
        self._device.sync()
        t = time.perf_counter()
        self.laps[stage] = self.laps.get(stage, 0.0) + t - self._t
        self._t = t

    def count(self, what: str, n):
        """A number reported beside the stages, summed over blocks (a count, or seconds spent
        off this block's path)."""
        self.laps[what] = self.laps.get(what, 0) + n
