"""The one write pipeline every face runs (`distconv run`, ``dc.to_zarr``, the accessor's
``to_zarr``): a plan (chain.plan_write: the engine's job, else dask's writes) into an output a
claim made ours (ownership.claim): the array created, its blocks computed (each a fenced
write, fencing.py), the blocks checked and their marks dropped (fencing.settle); the caller
marks the output complete once all of it is written (a dataset's every variable, its
consolidated metadata).

Computing is the one place a face's graph of block writes meets the cluster, so that a
run owns its work to the end. On Ctrl-C or any failure the run is stopped before the caller
sees the error: the owner mark names no run (no block of it moves its files into place from
then on), its tasks are cancelled, and the writes already under way are waited for on every
worker. A worker that does not confirm its writes ended (it did not answer, or they outlast
the wait) is said on stderr and recorded in the owner mark, and the output stays incomplete."""

from __future__ import annotations

import contextlib
import dataclasses

import sys

from . import fencing, storage
from .chain import Plan
from .job import block_bytes
from .job import graph as job_graph
from .location import Location
from .marks import BLOCKS, Claim
from .placement import workers
from .process import release
from .progress import Progress
from .slots import local_blocks
from .output import create_output

STOP_WAIT_S = 30.0  # longest a stopped run waits for its blocks' writes under way (a shard write)
PREPARE_WAIT_S = 120.0  # longest a job waits for its workers' kernel builds and launches
PREPARE_PRIORITY = 10**9  # above every block's (job.graph: n - i), another job's queued ones too


def write(plan: Plan, dst: str, claim: Claim, client, attrs=None, dims=None, codec: str = "zstd",
          storage_chunks=None, progress=None, inner_chunks=None):
    """Write ``plan`` into the array at ``dst`` (inside the output ``claim`` made ours; a
    resumed claim keeps what is there and writes only the missing blocks): the engine's job as
    one task per block (its results: (each block's (histogram counts, stage seconds, when it
    ran: job.timeline reads them), the merged (histogram counts, stage seconds))), or dask's
    writes of the plan's data, chunk-aligned (``codec``, ``storage_chunks``, which are shards of
    ``inner_chunks`` when given; results: write flags). ``attrs``/``dims``: the array's attributes and
    dimension names; ``progress``: an engine.Progress shown while the blocks run. Returns the
    computed results."""
    if plan.job is not None and claim is not None:  # one id an attempt: the claim's names its caches and page
        plan = dataclasses.replace(plan, job=dataclasses.replace(plan.job, run=claim.run))
    progress = Progress(show=False) if progress is None else progress  # the dashboard's page hears of every job
    progress.begin(client)
    try:
        writes, sizes = _graph(plan, dst, claim, client, attrs, dims, codec, storage_chunks, inner_chunks)
        progress.expect(sizes, plan, dst, writes)
    except BaseException:
        fencing.stop(claim)  # nothing of it ran: the output is free for the next run at once
        raise
    try:
        results = compute(writes, client, claim, progress)  # stops the run itself when it fails
    except Exception as e:
        _note_block(e, plan, dst)
        raise
    finally:
        if plan.job is not None:  # its decode batches, halo rows and held scans go with it
            release(client, plan.job.run)
    try:
        fencing.settle(dst, claim)
    except BaseException:
        fencing.stop(claim)
        raise
    return results if plan.job is None else (results[:-1], results[-1])


def _graph(plan: Plan, dst: str, claim: Claim, client, attrs, dims, codec, storage_chunks, inner_chunks):
    """write's graph: (the block writes, each one's key -> its bytes), the output array created
    (or found, when resuming)."""
    if plan.job is None:
        stored = storage.store_into(plan.data, dst, claim, storage_chunks, codec, attrs, dims, inner_chunks)
        writes = list(stored.to_delayed().ravel())  # one future a block: progress sees each finish
        sizes = _general_sizes(plan.data, stored, storage_chunks)
    else:
        job = dataclasses.replace(plan.job, owner=claim, dst=dst)  # its blocks write while the claim owns it
        if not (claim.resuming and Location(dst).child("zarr.json").exists()):
            # an array's dimension names default to its input's (an engine job keeps every axis)
            create_output(dst, job.layout.shape, job.layout.dtype, job.layout, attrs or {},
                          dims if dims is not None or job.source is None else job.source.dims)
        # the block marks' folder, also for a run resumed after the last one dropped it (it was
        # interrupted between finishing the blocks and marking the output complete)
        Location(dst).child(BLOCKS).make_dir()
        placed = workers(client)
        if job.gpu and placed:
            built = [r for r in prepare_workers(client, job) if r and r["built"]]
            if built:  # the first job of these steps on a node: said once, as `distconv run` says it
                print(f"distconv: built {sum(r['built'] for r in built)} GPU kernels for these steps on "
                      f"{len(built)} node(s) in {max(r['seconds'] for r in built):.1f} s, before the blocks "
                      f"(cached there: later runs skip this)", flush=True)
        blocks, merged = job_graph(job, job.name, placed)
        # the blocks flat, one future each (a nested list is one future of dask's list on a
        # cluster, and progress saw no block finish)
        writes = [*blocks, merged]
        sizes = _block_sizes(job, blocks)
    return writes, sizes


def _note_block(exc: Exception, plan: Plan, dst: str):
    """Put on ``exc`` (as ``distconv_block``) what the user's message names: the input, the
    output, and of the engine's block that failed its index, rows and bytes of input."""

    index = getattr(exc, "distconv_failed", None)
    note = {"input": plan.job.src if plan.job is not None else None, "output": dst}
    if plan.job is not None and index is not None and index < len(plan.job.row_blocks):
        note.update(index=index, rows=plan.job.row_blocks[index], bytes=block_bytes(plan.job)[index])
    elif plan.job is not None:  # a block of unknown index: its size is still the memory it takes
        note["bytes"] = max(block_bytes(plan.job), default=None)
    try:
        exc.distconv_block = note
    except AttributeError:  # an exception type that takes no attributes: nothing to note
        return
    if "index" in note:  # the Python face's traceback says where too
        exc.add_note(f"distconv: in block {note['index']} (input rows {note['rows'][0]}:{note['rows'][1]}) of "
                     f"{note['input']!r} -> {dst!r}")


def prepare_workers(client, job) -> list:
    """Before a job's blocks, on every worker (rehearsal.prepare): its kernels built by one worker
    of each host (left to the blocks, every worker of a fresh node compiled them at once; a host
    that built them for `distconv run` beside its cluster's start, or for an earlier job, only
    looks them up), then launched once in each worker process before its blocks. The tasks go
    ahead of other jobs' queued blocks (a kept cluster), may run elsewhere if their worker
    leaves, and are waited for PREPARE_WAIT_S at most. Returns each worker's {"built",
    "seconds", "skipped"} (None where it failed or was not waited for: its blocks build and
    load what they need)."""
    from distributed import wait

    from ..backends.devices import cluster_workers

    builders: dict = {}
    infos = cluster_workers(client)
    for address, info in infos.items():
        builders.setdefault(info.get("host", address), address)
    futures = [client.submit(_prepared, job, address in builders.values(), key=f"distconv-kernels-{job.run}-{k}",
                             workers=[address], allow_other_workers=True, priority=PREPARE_PRIORITY, pure=False)
               for k, address in enumerate(infos)]
    try:
        wait(futures, timeout=PREPARE_WAIT_S)
    except TimeoutError:  # the blocks go without what is left of it
        client.cancel([f for f in futures if not f.done()], force=True)
    except BaseException:  # Ctrl-C: nothing of this run stays on a kept cluster
        client.cancel(futures, force=True)
        raise
    return [f.result() if f.status == "finished" else None for f in futures]


def _prepared(job, build: bool):
    from .rehearsal import prepare

    try:
        return prepare(job, build)
    except Exception:  # noqa: BLE001 - a head start only
        return None


def _block_sizes(job, blocks) -> dict:
    """Each block task's key -> the bytes of input its rows are."""
    return {t.key: nbytes for t, nbytes in zip(blocks, block_bytes(job))}


def _general_sizes(data, stored, storage_chunks) -> dict:
    """Each of dask's chunk-aligned writes' key -> the bytes of its block."""
    import itertools
    import math

    aligned = storage.write_chunks(data, storage_chunks)
    keys = stored.__dask_keys__()
    out = {}
    for idx in itertools.product(*(range(len(c)) for c in aligned)):
        key = keys
        for i in idx:
            key = key[i]
        out[key] = math.prod(c[i] for c, i in zip(aligned, idx)) * data.dtype.itemsize
    return out


def compute(graph, client, claim: Claim | None, progress=None):
    """Compute ``graph`` on ``client`` (None: dask's local threads here) and return its results;
    ``progress`` (an engine.Progress), when given, shows its blocks finishing."""
    if client is None:
        import dask

        try:
            with local_blocks(), progress.local() if progress is not None else contextlib.nullcontext():
                return dask.compute(graph)[0]
        except BaseException:
            _stop(claim, None, None)
            raise
    futures = []
    try:
        futures = client.compute(graph)  # (interrupted while submitting: what went is cancelled)
        if progress is not None:
            progress.watch(futures)
        return client.gather(futures)
    except BaseException as e:
        _note_failed(e, futures)
        # after Ctrl-C the cluster's own logs of what the stop cancels say nothing the user
        # needs (a failure's may): quiet while it stops, as the face is once it closes
        with quiet_logs() if isinstance(e, KeyboardInterrupt) else contextlib.nullcontext(), \
                _cancelled_gathers_dropped():
            _stop(claim, client, futures)
        raise


def _note_failed(exc: BaseException, futures):
    """Put on ``exc`` (as ``distconv_failed``) the index of the first future that failed (the
    block, where they are a job's), before the stop cancels them."""
    try:
        failed = [i for i, f in enumerate(futures if isinstance(futures, list) else [futures])
                  if getattr(f, "status", None) == "error"]
        if failed:
            exc.distconv_failed = failed[0]
    except Exception:  # noqa: BLE001 - a note only
        pass


def _stop(claim, client, futures) -> list:
    """Stop a run that failed or was interrupted: first the owner mark (so no block moves its
    files into place), then its tasks cancelled, then the writes under way waited for. Returns
    where they were not confirmed to have ended (said on stderr and recorded in the owner
    mark: a write there may still land)."""
    try:
        fencing.stop(claim)
    except Exception as e:  # noqa: BLE001 - the store did not answer: the tasks are still cancelled
        print(f"distconv: could not mark the run stopped in {claim.output!r} ({e}); its tasks are "
              "cancelled", file=sys.stderr, flush=True)
    if client is None:
        if claim is None:
            return []
        unconfirmed = [] if fencing.wait_writes(claim.run, STOP_WAIT_S) else ["this process"]
    else:
        try:
            # only this run's futures, the last (the merge the others feed) first: a cancel reaching
            # a block's unwanted dependents (the merges below it) trips the scheduler's who_wants assert
            futures = futures if isinstance(futures, list) else [futures]  # one graph: one future
            client.cancel(futures[-1:])
            client.cancel(futures[:-1])
            if claim is None:
                return []
            answers = client.run(fencing.wait_writes, claim.run, STOP_WAIT_S, on_error="return")
            unconfirmed = [str(w) for w, ended in answers.items() if ended is not True]
        except OSError:  # the scheduler did not answer: its workers could not be asked
            unconfirmed = ["the cluster's workers (the scheduler did not answer)"]
    if unconfirmed:
        try:
            line = fencing.unsettled(claim, unconfirmed)
        except Exception as e:  # noqa: BLE001 - the stop's own error must not hide the run's
            line = f"distconv: could not confirm that the writes of the stopped run ended ({e})"
        print(line, file=sys.stderr, flush=True)
    return unconfirmed


CLUSTER_LOGGERS = ("distributed", "dask_cuda", "tornado", "asyncio")


@contextlib.contextmanager
def quiet_logs(loggers=CLUSTER_LOGGERS):
    """The cluster's loggers in this process silenced for the block (their levels restored
    after; silence_logs keeps them so)."""
    import logging

    levels = {name: logging.getLogger(name).level for name in loggers}
    silence_logs(loggers)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def silence_logs(loggers=CLUSTER_LOGGERS):
    """The cluster's loggers in this process silenced (a run that is stopping and closing)."""
    import logging

    for name in loggers:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def _cancelled_gathers_dropped():
    """The interrupted gather's own task ends with distributed's AllExit once its futures are
    cancelled, and asyncio logs it as "Task exception was never retrieved" when it is
    collected: a traceback that says nothing the user needs, under the run's one line. Dropped
    while the run stops (and the task collected before the block ends); the user's loggers are
    left as they were."""
    import gc
    import logging

    from distributed.client import AllExit

    log = logging.getLogger("asyncio")
    drop = None if any(isinstance(f, _DropAllExit) for f in log.filters) else _DropAllExit(AllExit)
    if drop is not None:
        log.addFilter(drop)
    try:
        yield
    finally:
        if drop is not None:
            gc.collect()  # what it filters is logged as it is collected: now, while it is on
            log.removeFilter(drop)


class _DropAllExit:
    def __init__(self, kind):
        self.kind = kind

    def filter(self, record) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], self.kind))
