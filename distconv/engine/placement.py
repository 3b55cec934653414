"""Where a job's blocks run: each worker of the cluster one contiguous range of blocks (job.graph
annotates them ``workers=[...]``, ``allow_other_workers``), and a scheduler plugin that keeps
that a preference.

distributed leaves a task whose restricted workers are all gone in ``no-worker`` until a worker
of that address returns, ``allow_other_workers`` or not (dask/distributed#7346: a worker joining
is offered only the tasks it satisfies). A restarted worker has a new address, so a one-GPU
cluster whose worker was killed mid-job waited forever. ``LooseRestrictions`` drops, when a
worker joins, the worker restrictions of loose tasks that no live worker satisfies; the
scheduler then offers them to the new worker as it does any unrestricted task.
"""

from __future__ import annotations

import logging

from . import dashboard

try:
    from distributed.diagnostics.plugin import SchedulerPlugin
except ImportError:  # dask's local scheduler: no workers, no plugin
    SchedulerPlugin = object


class LooseRestrictions(SchedulerPlugin):
    name = "distconv-loose-restrictions"
    idempotent = True

    def add_worker(self, scheduler=None, worker=None):
        for ts in list(scheduler.unrunnable):
            if ts.loose_restrictions and ts.worker_restrictions and \
                    not any(w in scheduler.workers for w in ts.worker_restrictions):
                ts.worker_restrictions = set()


def register(client):
    """LooseRestrictions and the dashboard's job page (dashboard.JobBoard) registered on
    ``client``'s scheduler (idempotent: once a scheduler). A
    scheduler started by hand imports distconv's engine to load it (seconds where dask.array
    imports slowly): session.worker_imports asks for it as it connects, beside
    `distconv run`'s check, instead of inside the first job. A scheduler that cannot load
    distconv (a cluster it did not start) keeps distributed's own behaviour."""
    try:
        client.register_plugin(LooseRestrictions())
    except Exception as e:  # noqa: BLE001 - the placement still works; only the rescue is missing
        logging.getLogger(__name__).warning("the scheduler did not take distconv's LooseRestrictions (%s): a "
                                            "block whose worker dies waits for a worker of its address", e)
    dashboard.register(client)


def workers(client) -> list | None:
    """The addresses among which a job's blocks are placed (None: no cluster), with
    LooseRestrictions registered on the scheduler."""
    if client is None:
        return None
    from ..backends.devices import cluster_workers

    register(client)
    return sorted(cluster_workers(client))
