"""What a cluster's workers import before their first job, paid beside the command's own start:
workers of a local cluster fork from a server that has imported it (forkserver.py), started
before the workflow is checked; workers someone started by hand are asked for the same warm-up
through a worker plugin (engine/prewarm.py), and the scheduler loads the job placement's
plugin, as the client connects."""

from __future__ import annotations

import contextlib
import threading

from . import forkserver, record
from .config import ClusterConfigError, load_config, resolve_type
from .security import of_config

# The one preload list: the workers' (the warm process's list, warm.PRELOAD, starts with it).
# Nothing in the server touches a GPU: CUDA is first used in a worker, after the fork.
WORKER_IMPORTS = ("distributed", "zarr", "zarrs", "distconv.engine.job")  # no dask.array: engine blocks do not need it
GPU_WORKER_IMPORTS = ("dask_cuda", "cupy", "distconv.backends.cuda.zstd", "distconv.backends.cuda.transfer")
CPU_WORKER_IMPORTS = ("distconv.backends.numpy.preload",)  # numba's kernels, loaded once
# what a client's first write imports (engine.output creates the array through zarr, its codec
# pipeline zarrs): imported while its local cluster starts, when the process mostly waits
CLIENT_IMPORTS = ("zarr", "zarrs", "fsspec")

# The longest a client waits for a running scheduler's workers to end their warm-up: a fixed
# bound, not the config's connect `timeout`, since a warm-up takes seconds; one stuck past it
# delays the first job by this much at most, and the job pays what is left.
WARMUP_WAIT_S = 30.0


def warm_workers(config=None) -> bool:
    """Start the server this process's local cluster workers will fork from, before the
    cluster starts (``local_server`` then uses it); False for a running scheduler (whose
    workers' warm-up it asks for, in a thread), and, doing nothing, for in-process workers, a
    kept cluster of this config, a platform without a forkserver, or a config that does not
    load (the cluster reports that itself when it starts)."""
    try:
        cfg = load_config(config)
        kind = resolve_type(cfg)
    except (ClusterConfigError, OSError, ValueError):
        return False
    if kind == "address":
        threading.Thread(target=register_warmup, args=(cfg,), name="distconv-warmup", daemon=True).start()
        return False
    if not _forks(cfg, kind) or record.joinable(cfg):  # a kept cluster of this config: no workers to start
        return False
    return forkserver.start(*_server_args(kind))


@contextlib.contextmanager
def local_server(cfg: dict):
    """The forkserver for the block in which ``cfg``'s local cluster starts and runs (True),
    or none (False: the workers spawn); started here unless ``warm_workers`` did, ended after."""
    kind = resolve_type(cfg)
    if not _forks(cfg, kind):
        yield False
        return
    with forkserver.serving(*_server_args(kind)) as started:
        yield started


def _forks(cfg: dict, kind: str) -> bool:
    return kind == "cuda" or (kind == "cpu" and cfg["processes"])


def _server_args(kind: str):
    """(the modules the server imports, what it keeps in its environment for the workers)."""
    import dask

    modules = WORKER_IMPORTS + (GPU_WORKER_IMPORTS if kind == "cuda" else CPU_WORKER_IMPORTS)
    # what a nanny sets before it spawns a worker must be in the server's environment to reach
    # workers forked from it (distributed's pre-spawn-environ: malloc trim, one BLAS thread)
    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    if kind == "cuda":
        env["RAPIDS_NO_INITIALIZE"] = "True"  # as LocalCUDACluster sets it
    return modules, env


def register_warmup(cfg: dict, client=None):
    """Register the workers' warm-up and the job placement's plugin on the scheduler at
    ``cfg``'s address (through ``client``, else a client of its own for the moment it takes); a
    scheduler that cannot be reached or refuses them is reported by the run itself, or the first
    job pays them as before."""
    try:
        from distributed import Client

        from ..engine import placement, prewarm

        imports = (WORKER_IMPORTS, GPU_WORKER_IMPORTS, CPU_WORKER_IMPORTS)
        if client is not None:
            prewarm.register(client, *imports)  # first: the workers warm while the scheduler loads
            return placement.register(client)
        # not dask's default client: this thread's client must not change the process's config
        with Client(cfg["address"], timeout=cfg["timeout"], security=of_config(cfg), set_as_default=False) as own:
            prewarm.register(own, *imports)
            placement.register(own)
    except Exception:  # noqa: BLE001 - a head start only
        pass


def wait_warmup(client):
    """Before the first job, wait for the workers' warm-up that ``register_warmup`` asked for,
    so the job's probe and tasks do not arrive while it holds their GIL and event loop."""
    from ..engine import prewarm

    prewarm.wait(client, WARMUP_WAIT_S)
