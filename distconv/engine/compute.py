"""Computing a write: the one place a face's graph of block writes meets the cluster, so that a
run owns its work to the end. On Ctrl-C or any failure the run is stopped before the caller
sees the error: the owner mark names no run (blocks not yet writing will not write), its tasks
are cancelled, and the writes already under way are waited for on every worker. A kept cluster
then holds nothing of it that could land in the output later (ownership.py)."""

from __future__ import annotations

from . import ownership
from .slots import local_blocks

STOP_WAIT_S = 30.0  # longest a stopped run waits for its blocks' writes under way (a shard write)


def compute(graph, client, claim: ownership.Claim | None, watch=None):
    """Compute ``graph`` on ``client`` (None: dask's local threads here) and return its results;
    ``watch(futures)``, when given, runs while they compute (a progress display)."""
    if client is None:
        import dask

        try:
            with local_blocks():
                return dask.compute(graph)[0]
        except BaseException:
            _stop(claim, None, None)
            raise
    futures = client.compute(graph)
    try:
        if watch is not None:
            watch(futures)
        return client.gather(futures)
    except BaseException:
        _stop(claim, client, futures)
        raise


def _stop(claim, client, futures):
    """Stop a run that failed or was interrupted: first the owner mark (so no block begins a
    write), then its tasks cancelled, then the writes under way waited for."""
    ownership.stop(claim)
    if client is None:
        if claim is not None:
            ownership.wait_writes(claim.run, STOP_WAIT_S)
        return
    _quiet_cancelled_gathers()
    try:
        client.cancel(futures, force=True)
        if claim is not None:
            client.run(ownership.wait_writes, claim.run, STOP_WAIT_S, on_error="ignore")
    except OSError:  # the scheduler is gone: its workers, and their writes, with it
        pass


def _quiet_cancelled_gathers():
    """The interrupted gather's own task ends with distributed's AllExit once its futures are
    cancelled, and asyncio logs it as "Task exception was never retrieved" when it is
    collected: a traceback that says nothing the user needs, under the run's one line."""
    import logging

    from distributed.client import AllExit

    log = logging.getLogger("asyncio")
    if not any(isinstance(f, _DropAllExit) for f in log.filters):
        log.addFilter(_DropAllExit(AllExit))


class _DropAllExit:
    def __init__(self, kind):
        self.kind = kind

    def filter(self, record) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], self.kind))
