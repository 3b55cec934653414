"""What one process keeps between the engine blocks it runs, in one owner: a dask worker's
(it lives as long as the worker), or the caller's when blocks run on dask's local threads.
Its pieces are made on first use by the module that owns each (read.py: the decode batches
started ahead of their blocks and the halo rows handed between neighbours; carries.py: a
carried scan's held parts; shards.py: the file threads; source.py: the inputs opened, by the
view a job has of each) and are kept until ``clear``; a run's own part is dropped when the run
ends or is stopped (``release``)."""

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

    def end_run(self, run: str):
        """Drop what the pieces hold for the run ``run`` (it ended, or was stopped): each piece
        with a ``drop(run)`` (the decode batches, the halo rows, the held scans) drops its own."""
        with self._lock:
            pieces = list(self._pieces.values())
        for piece in pieces:
            drop = getattr(piece, "drop", None)
            if drop is not None:
                drop(run)

    def clear(self):
        """Forget every piece (they are made again on next use)."""
        with self._lock:
            self._pieces.clear()


STATE = ProcessState()


def end_run(run: str):
    """This process's state of the run ``run`` dropped (what ``release`` runs on each worker)."""
    STATE.end_run(run)


def release(client, run: str):
    """Drop what every process of the run's cluster (``client``'s workers; without one, this
    process) keeps of the run ``run``, once it ended or was stopped: a cancelled run's decoded
    batches (device memory) were otherwise held until later runs pushed them out."""
    end_run(run)  # blocks run here too: dask's threads, or a cluster of threads in this process
    if client is None:
        return
    try:
        client.run(end_run, run, on_error="ignore")
        # what its blocks keep on the scheduler (read.PeerEdges' halo rows), a dead worker's too
        client.run_on_scheduler(_forget_on_scheduler, str(run))
    except (OSError, TimeoutError):  # the scheduler is gone: its workers, and their state, with it
        pass


# the scheduler's metadata entry under which a run's blocks keep what they share, by run
SCHEDULER_ROOT = "distconv-runs"


def _forget_on_scheduler(run: str, dask_scheduler=None):
    dask_scheduler.task_metadata.get(SCHEDULER_ROOT, {}).pop(run, None)
