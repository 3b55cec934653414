"""A GPU worker's one-time costs, paid as it starts instead of inside its first blocks.

A fresh worker's first blocks page-lock their staging buffers (each I/O slot's encoded frames,
~1 GiB; the batch reader's two file pieces), make nvCOMP's first calls and load CuPy's kernels
(NVRTC's version asked by an empty compile, then each from the cache), which made a cold
job's first blocks several times slower than later ones: page-locking serializes with the job's
own CUDA calls. A GPU worker of a cluster distconv starts (session.local.make_cluster preloads
this module) runs ``warm`` in a thread from its start, beside its registration with the
scheduler and the client's submission of the job; the blocks then find the buffers in place
(the device object's staging hands one buffer per key, allocated once). dask config
``distconv.prewarm``: False turns it off (a worker that will run no engine job holds ~2.5 GiB
of pinned host memory and up to 40 GiB of device memory in cupy's pool that it does not need).
Each worker process records when its warm-up has ended, so a client can wait for it (``wait``).
"""

from __future__ import annotations

import threading

import numpy as np
from distributed.diagnostics.plugin import WorkerPlugin

PLUGIN = "distconv-prewarm"  # the worker plugin's name: registered once a cluster
POLL_S = 0.02  # how often ``warmed`` looks whether the warm-up has ended

# this process's warm-up: None until dask_setup is asked for one, then set once it has ended
# (done, nothing to do, failed) or dask_setup decided not to start it (disabled, a bad config)
_ended: threading.Event | None = None


def dask_setup(worker, imports=(), gpu_imports=(), cpu_imports=()):
    """distributed's preload hook: start the warm-up beside the worker's own start, once a
    process (a worker with both the preload and the plugin warms up once); the modules to import
    first, for a worker that did not fork from distconv's server (warm)."""
    global _ended

    if _ended is not None:
        return
    _ended = ended = threading.Event()
    started = False
    try:
        from .settings import prewarm_enabled

        if prewarm_enabled():
            threading.Thread(target=_warm_then_set, args=(ended, imports, gpu_imports, cpu_imports),
                             name="distconv-prewarm", daemon=True).start()
            started = True
    finally:
        if not started:  # a waiting client must not wait for a warm-up that never runs
            ended.set()


def _warm_then_set(ended: threading.Event, *imports):
    try:
        warm(*imports)
    finally:
        ended.set()


async def warmed(timeout: float):
    """On a worker, through ``client.run``: return once this process's warm-up has ended (at
    once where none was asked for) or ``timeout`` seconds have passed; the seconds waited, None
    on the timeout. It polls, so the worker's event loop goes on serving meanwhile."""
    import asyncio
    import time

    ended, start = _ended, time.monotonic()
    while ended is not None and not ended.is_set():
        if time.monotonic() - start >= timeout:
            return None
        await asyncio.sleep(POLL_S)
    return time.monotonic() - start


def wait(client, timeout: float) -> dict:
    """Wait until every worker of ``client``'s cluster has ended its warm-up, at most about
    ``timeout`` seconds. A warm-up still running holds its worker's GIL and event loop: a job that
    arrived meanwhile paid it inside the job, which ran far slower than a second run. {worker:
    seconds waited, None where still warming}; a worker that errs or does not answer is left out
    (this is a head start only)."""
    try:
        # callback_timeout (Client.sync's): a worker that never answers does not hold the run
        return client.run(warmed, timeout, on_error="ignore", callback_timeout=timeout + 5)
    except Exception:  # noqa: BLE001 - the job pays what is left of the warm-up, as before
        return {}


class Warmup(WorkerPlugin):
    """The same warm-up for workers distconv did not start (a scheduler's address: `dask
    scheduler` and `dask cuda worker` started by hand, other nodes' workers), registered by the
    client as a worker plugin the moment it connects: each worker, and each that joins later,
    warms up once (the plugin is registered idempotent). Without it their first job paid it
    inside its blocks, far slower than a second run."""

    name = PLUGIN
    idempotent = True

    def __init__(self, imports=(), gpu_imports=(), cpu_imports=()):
        self.imports = (tuple(imports), tuple(gpu_imports), tuple(cpu_imports))

    def setup(self, worker):
        dask_setup(worker, *self.imports)


def register(client, imports=(), gpu_imports=(), cpu_imports=()):
    """Register the warm-up on ``client``'s cluster (once; a cluster that has it is left as it
    is), its workers to import ``imports`` and their device's modules first (warm)."""
    client.register_plugin(Warmup(imports, gpu_imports, cpu_imports), name=PLUGIN)  # idempotent: the class says so


def import_each(names):
    """Import each module of ``names``, in order, before the work that needs it: the one way
    every warm-up imports (a worker's, the warm process's). One that is not installed here, or
    fails, is left for the work to meet (this is only a head start)."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - not installed here: the blocks say so if they need it
            continue


def warm(imports=(), gpu_imports=(), cpu_imports=()):
    """Import what a block needs (``imports``, then ``gpu_imports`` on a worker with a GPU, else
    ``cpu_imports``: what distconv's own workers import before they fork,
    session.worker_imports); on a GPU page-lock the staging a block uses, make nvCOMP's first calls
    and reserve device memory on the streams the blocks and batch readers use, while a thread
    beside it loads CuPy's kernels that every block launches (NVRTC and the driver's loads let
    go of the GIL, page-locking too). Any failure is left for the first block to meet (this is
    only a head start)."""
    from ..backends.devices import gpu_count

    gpus = gpu_count()
    device_imports = (gpu_imports if gpus else cpu_imports) if gpu_imports or cpu_imports else ()
    import_each((*imports, *device_imports))
    kernels = None
    try:
        from ..backends.device import device
        from . import batches, job, settings, shards  # noqa: F401 - job: what the first task unpickles
        from .plain_chunks import PIECE_BYTES
        from .plan import GPU_CHUNK_BYTES

        if not gpus:
            return
        gpu = device(True)
        kernels = threading.Thread(target=_quietly, args=(gpu.warm_kernels,), name="distconv-prewarm-kernels",
                                   daemon=True)
        kernels.start()
        if not gpu.frames:
            return
        # in the order a job's first block needs them: its batch's files go through the pieces
        # (a cold job's first batch waited ~1 s for them behind the rest of this warm-up), then
        # nvCOMP decodes, later the block encodes into its slot's buffer
        for k in range(2):  # a piece ends at the first file boundary past PIECE_BYTES
            gpu.staging((batches.PIECES, k), (PIECE_BYTES + PIECE_BYTES // 4,), np.uint8, name="pieces")
        gpu.warm_frames(shards.INNER_BYTES, shards.FRAME_ALIGN)
        # the device memory of the batches in flight (each its files and its rows) and of the
        # blocks' device stages, on the streams they run on
        gpu.reserve({**{batches.reader_slot(k): 2 * settings.batch_bytes() for k in range(batches.READERS)},
                     **{slot: 4 * GPU_CHUNK_BYTES for slot in range(settings.io_slots(True))}})
        for slot in range(settings.io_slots(True)):
            gpu.staging(slot, (GPU_CHUNK_BYTES,), np.uint8, name="encoded")
    except Exception:  # noqa: BLE001 - the first blocks pay these costs instead
        pass
    finally:
        if kernels is not None:  # the warm-up has ended once both have
            kernels.join()


def _quietly(work):
    try:
        work()
    except Exception:  # noqa: BLE001 - the first blocks load what is left
        pass
