"""What one process keeps between the engine blocks it runs, in one owner: a dask worker's
(it lives as long as the worker), or the caller's when blocks run on dask's local threads.
Its pieces are made on first use by the module that owns each (read.py: the decode batches
started ahead of their blocks and the halo rows handed between neighbours; carries.py: a
carried scan's held parts; shards.py: the file threads) and are kept until ``clear``."""

from __future__ import annotations

import threading


class ProcessState:
    """The pieces of state a process keeps for the blocks it runs, by name."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pieces: dict = {}

    def get(self, name: str, make):
        """The piece ``name``, made by ``make()`` on first use."""
        with self._lock:
            if name not in self._pieces:
                self._pieces[name] = make()
            return self._pieces[name]

    def clear(self):
        """Forget every piece (they are made again on next use)."""
        with self._lock:
            self._pieces.clear()


STATE = ProcessState()
