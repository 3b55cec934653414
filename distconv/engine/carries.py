"""A carried scan's pieces (a scan along axis 0): each block's own scan held in its worker
between the block's two tasks, and the carry from one block to the next."""

from __future__ import annotations

import collections
import threading

from .process import STATE


class Held:
    """Blocks' own scans (a carried scan's local parts) held in this process until their write
    part seeds and writes them, at most ``limit`` bytes: beyond it the oldest is dropped, and
    its write part computes it again (so does one that dask ran in another process)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held = collections.OrderedDict()

    def put(self, key, arr, limit: int):
        """Hold ``arr`` under ``key`` = (run, block); another run's blocks are dropped first (a
        failed run's would otherwise stay in a worker that outlives it)."""
        with self._lock:
            for k in [k for k in self._held if k[0] != key[0]]:
                del self._held[k]
            self._held[key] = arr
            while sum(a.nbytes for a in self._held.values()) > limit and len(self._held) > 1:
                self._held.popitem(last=False)

    def drop(self, run: str):
        """Forget the held parts of ``run`` (it ended, or was stopped)."""
        with self._lock:
            for k in [k for k in self._held if k[0] == run]:
                del self._held[k]

    def pop(self, key):
        with self._lock:
            return self._held.pop(key, None)


def held() -> Held:
    """This process's held parts (engine.process.STATE owns them)."""
    return STATE.get("held scans", Held)


def carry(scan, carry, local):
    """The carry into the next block: this one's (``carry``) combined with its total."""
    return scan.combine(carry, local[0])
