"""``dc.cluster()``: a dask Client on the configured cluster (config.py) — a local
LocalCUDACluster or LocalCluster started for it, the kept cluster of the same config joined
(record.py), or an existing scheduler's address — and the forkserver its local workers start
from. The client never touches a GPU."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading

from . import record
from .config import ClusterConfigError, load_config, resolve_type


def _security(cfg: dict):
    if not cfg["tls"]:
        return None
    from distributed.security import Security

    t = cfg["tls"]
    return Security(tls_ca_file=t.get("ca_file"), tls_client_cert=t.get("cert"),
                    tls_client_key=t.get("key"), require_encryption=True)


def workers_of(cfg: dict) -> tuple:
    """(kind, workers, threads per worker) of the local cluster ``cfg`` starts: 'cuda', one
    worker per visible GPU (or n_workers), 8 threads each; 'cpu', up to 4 workers sharing the
    cores."""
    kind = resolve_type(cfg)
    if kind == "cuda":
        from ..backends.devices import gpu_count

        return kind, cfg["n_workers"] or gpu_count(), cfg["threads_per_worker"] or 8
    cores = os.cpu_count() or 1
    n = cfg["n_workers"] or min(4, cores)
    return kind, n, cfg["threads_per_worker"] or max(1, cores // n)


def make_cluster(cfg: dict):
    kind, n, threads = workers_of(cfg)
    cfg = {**cfg, "dashboard_address": _free_dashboard(cfg["dashboard_address"])}
    common = {k: cfg[k] for k in ("dashboard_address", "local_directory", "memory_limit")
              if cfg[k] is not None}
    if kind == "cuda":
        from dask_cuda import LocalCUDACluster

        kw = {k: cfg[k] for k in ("device_memory_limit", "rmm_pool_size") if cfg[k] is not None}
        if cfg["n_workers"]:
            kw["n_workers"] = cfg["n_workers"]
        # each worker page-locks the engine's staging as it starts (engine/prewarm.py)
        return LocalCUDACluster(protocol=cfg["protocol"], host=cfg["host"], threads_per_worker=threads,
                                security=_security(cfg), preload=["distconv.engine.prewarm"], **kw, **common)
    from distributed import LocalCluster

    if cfg["processes"]:
        common["host"] = cfg["host"]  # in-process workers talk inproc://, no socket to bind
        # a CPU cluster asked for on a GPU node runs its blocks on the CPUs: its workers see no GPU
        common["env"] = {"CUDA_VISIBLE_DEVICES": ""}
    return LocalCluster(n_workers=n, threads_per_worker=threads, processes=cfg["processes"],
                        security=_security(cfg), **common)


# A local cluster's workers fork from a server process that has already imported what a
# worker imports, started by `distconv run` before it imports and checks the workflow, so those
# imports run beside the check instead of after it in each spawned worker (the way dask-cuda's
# own `--multiprocessing-method forkserver` works). Nothing in the server touches a GPU: CUDA is
# first used in a worker, after the fork. Measured: NOTES.md, "Start-up".
WORKER_IMPORTS = ("distributed", "zarr", "zarrs", "distconv.engine.job")
GPU_WORKER_IMPORTS = ("dask_cuda", "cupy", "distconv.backends.cuda.zstd", "distconv.backends.cuda.transfer")
CPU_WORKER_IMPORTS = ("distconv.backends.numpy.preload",)  # numba's kernels, loaded once
START_METHOD_KEY = "distributed.worker.multiprocessing-method"


def warm_workers(config=None) -> bool:
    """Start the process that this process's local cluster workers will fork from (see
    WORKER_IMPORTS; cluster() has dask use it); False for a running scheduler (whose workers'
    warm-up it asks for, in a thread), and, doing nothing, for in-process workers, a platform
    without fork, or a config that does not load (the cluster reports that itself when it
    starts)."""
    import multiprocessing

    try:
        cfg = load_config(config)
        kind = resolve_type(cfg)
    except (ClusterConfigError, OSError, ValueError):
        return False
    if kind == "address":
        # its workers were started by someone else: their warm-up is asked for now, beside the
        # check, so it runs before the first job instead of inside its blocks (prewarm.Warmup)
        threading.Thread(target=_register_warmup, args=(cfg,), name="distconv-warmup", daemon=True).start()
        return False
    if kind == "cpu" and not cfg["processes"]:
        return False
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    if record.joinable(cfg):  # a kept cluster of this config is up: no workers to start
        return False
    _start_server(kind)
    return True


def _register_warmup(cfg: dict, client=None):
    """Register the workers' warm-up and the job placement's plugin on the scheduler at
    ``cfg``'s address (through ``client``, else a client of its own for the moment it takes); a
    scheduler that cannot be reached or refuses them is reported by the run itself, or the first
    job pays them as before."""
    try:
        from distributed import Client

        from ..engine import placement, prewarm

        # hand-started workers import what distconv's own import before they fork; the
        # scheduler loads the job's placement plugin now (it imports distconv's engine for it),
        # not inside the first job
        imports = (WORKER_IMPORTS, GPU_WORKER_IMPORTS, CPU_WORKER_IMPORTS)
        if client is not None:
            prewarm.register(client, *imports)  # (first: the workers warm while the scheduler loads)
            return placement.register(client)
        with Client(cfg["address"], timeout=cfg["timeout"], security=_security(cfg)) as own:
            prewarm.register(own, *imports)
            placement.register(own)
    except Exception:  # noqa: BLE001 - a head start only
        pass


# The longest cluster() waits for a running scheduler's workers to end their warm-up: a fixed
# bound, not the config's `timeout` (10 s by default, for the connect), since a warm-up takes
# seconds (2 x H100: the first job's probe and first task came 7.5 s after the connect, NOTES.md)
# and a slow node should still get its head start; a warm-up stuck past it delays the run by
# this much at most (and 5 s for a worker that does not answer), and the job pays what is
# left, as it did before the wait.
WARMUP_WAIT_S = 30.0


def _wait_warmup(client):
    """Before the first job, wait for the workers' warm-up that _register_warmup asked for, so
    the job's probe and tasks do not arrive while it holds their GIL and event loop (where
    `distconv run` registered it beside its check, most of it is over by now)."""
    from ..engine import prewarm

    prewarm.wait(client, WARMUP_WAIT_S)


@functools.cache
def _start_server(kind: str):
    """Once per process (and kind): the forkserver, with the worker imports preloaded."""
    import multiprocessing
    from multiprocessing import forkserver

    import dask

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(WORKER_IMPORTS + (GPU_WORKER_IMPORTS if kind == "cuda" else CPU_WORKER_IMPORTS)))
    # what a nanny sets before it spawns a worker must be in the server's environment to reach
    # workers forked from it (distributed's pre-spawn-environ: malloc trim, one BLAS thread)
    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    if kind == "cuda":
        env["RAPIDS_NO_INITIALIZE"] = "True"  # as LocalCUDACluster sets it
    env = {k: str(v) for k, v in env.items() if v is not None and k not in os.environ}
    # The server starts with SIGINT ignored, which Python keeps and the server hands to every
    # worker: Ctrl-C at a terminal reaches the whole process group, and workers raising
    # KeyboardInterrupt printed tracebacks over `distconv run`'s one line; the process that
    # started the workers stops them. This process blocks SIGINT for those few milliseconds
    # too: alone on its thread a Ctrl-C then stays pending and reaches it after (with other
    # threads, such as a codec library's, the kernel may hand it to one of those, and it is lost).
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.environ.update(env)
        forkserver.ensure_running()
    finally:
        for k in env:
            del os.environ[k]
        if main:
            signal.signal(signal.SIGINT, old)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    return True


def _stop_server():
    """End the server once the workers it forked have closed, at once: it holds nothing to
    save (it never touched a GPU), and left to itself it outlived `distconv run` by finalizing
    an interpreter with cupy, dask and zarr imported, holding the run's stdout and stderr open
    meanwhile (a pipe reader saw the command end ~0.4-0.8 s after it exited; NOTES.md)."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None or not hasattr(server, "_stop"):
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)  # Python's default for it: end without finalizing
    server._stop()  # closes its pipe, reaps it, forgets it: a later cluster starts a new one
    _start_server.cache_clear()


def _free_dashboard(address):
    """The configured dashboard address, or the same host on a free port when that port is
    taken (a second run at once): one line instead of distributed's four-line warning."""
    if not address or ":" not in str(address):
        return address
    import socket

    host, _, port = str(address).rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return address
    with socket.socket() as s:
        try:
            s.bind((host or "127.0.0.1", int(port)))
        except OSError:
            print(f"distconv: dashboard port {port} is in use; using a free port", flush=True)
            return f"{host}:0"
    return address


def dashboard_link(client, cfg: dict) -> str:
    """The dashboard's distconv page (engine/dashboard.py: the jobs, their blocks; it links to
    dask's /status) on the host it was bound to (dask reports the machine's IP instead)."""
    from ..engine.dashboard import page_url

    host = str(cfg.get("dashboard_address") or "").rpartition(":")[0]
    port = client.scheduler_info().get("services", {}).get("dashboard")
    if cfg["type"] == "address" or not host or not port:
        return page_url(client.dashboard_link)
    return page_url(f"http://{host}:{port}/status")


@contextlib.contextmanager
def cluster(config=None, *, quiet: bool = False):
    """A dask Client on the configured cluster, as a context manager.

    The config's ``type`` picks the cluster: 'auto' (default) starts a LocalCUDACluster with
    one worker per visible GPU where there are GPUs and the GPU extra is installed, else a
    LocalCluster of CPU workers; 'cuda' and 'cpu' ask for one of them; 'address' connects to
    a running scheduler (other nodes' workers included). A cluster kept running by
    ``distconv cluster start`` with the same config is joined instead of started. A cluster
    started here closes when the block ends; an existing one is left running. The client
    itself never touches a GPU.

    Parameters
    ----------
    config : str, os.PathLike, dict or None, optional
        A YAML file (its keys at the top or under ``cluster:``), a dict of the same keys, or
        None: ./cluster.yaml if present, else the defaults. Keys: type, address, n_workers,
        threads_per_worker, processes, memory_limit, device_memory_limit, rmm_pool_size,
        protocol, dashboard_address, host, local_directory, tls, timeout.
    quiet : bool, optional
        Print nothing (default False: the dashboard's address, or the kept cluster joined).

    Yields
    ------
    client : distributed.Client
        The client, also dask's default while the block runs: distconv's lazy results and
        ``dc.to_zarr`` compute on its cluster.

    Raises
    ------
    ClusterConfigError
        (a ValueError) An unknown key or a bad value in the config (every problem at once),
        a missing config file, 'cuda' without a GPU or the GPU extra, or a scheduler address
        that cannot be reached.

    See Also
    --------
    to_zarr : Writes through the engine on this cluster.

    Examples
    --------
    >>> config = {"type": "cpu", "processes": False, "n_workers": 1, "dashboard_address": None}
    >>> with dc.cluster(config, quiet=True) as client:
    ...     print(len(client.scheduler_info()["workers"]))
    1
    """
    from distributed import Client

    cfg = load_config(config)
    running = record.joinable(cfg) if cfg["type"] != "address" else None  # a kept one (kept.py)
    if cfg["type"] == "address":
        try:
            client = Client(cfg["address"], timeout=cfg["timeout"], security=_security(cfg))
        except (OSError, TimeoutError) as e:
            raise ClusterConfigError(f"cannot reach the scheduler at {cfg['address']!r}: {e}") from None
        owned = None
        try:
            _register_warmup(cfg, client)  # idempotent: done already if `distconv run` asked beside its check
            _wait_warmup(client)
        except BaseException:  # Ctrl-C while waiting: the client goes, the user's cluster stays
            client.close()
            raise
    elif running:
        client = Client(running, timeout=cfg["timeout"])
        owned = None
        if not quiet:
            print(f"distconv: joined the running cluster at {running} (distconv cluster stop ends it)",
                  flush=True)
    else:
        # workers fork from the warmed server (started here unless `distconv run` started it
        # beside its check): a Python script's first blocks then find cupy, nvCOMP and the block
        # code imported (one H200: the README snippet's job 7.1 s against distconv run's 5.2 s
        # without it). Scoped to the start: a restarted worker spawns afresh.
        import dask

        warm = warm_workers(cfg)
        with dask.config.set({START_METHOD_KEY: "forkserver"}) if warm else contextlib.nullcontext():
            owned = make_cluster(cfg)
        client = Client(owned)
    interrupted = False
    try:
        if not quiet:
            print(f"distconv: dashboard at {dashboard_link(client, cfg)}", flush=True)
        yield client
    except KeyboardInterrupt:
        interrupted = True
        _quiet_shutdown(client, workers=owned is not None)  # others' workers keep their logs
        raise
    finally:
        if owned is not None and not interrupted:  # after Ctrl-C its logs are silenced: no wait
            _let_feeds_end(client)
        client.close()
        if owned is not None:
            owned.close()
            if warm:
                _stop_server()


FEED_WAIT_S = 1.0  # longest a closing cluster waits for a finished progress bar's stream to end


def _let_feeds_end(client, timeout: float = FEED_WAIT_S):
    """Before our scheduler closes, let the streams that progress bars opened on it end.
    A bar (distributed.progress on a terminal) closes its stream when its tasks finish, but
    the scheduler's end of it (its 'feed' handler) sleeps out its interval (100 ms) before it
    sees that; a scheduler closed meanwhile cancels it, and distributed logs
    ``distributed.scheduler - ERROR ... CancelledError`` after a run that succeeded."""
    async def feeds_ended(dask_scheduler, timeout):
        import asyncio
        import time

        comms = getattr(dask_scheduler, "_comms", {})  # incoming comm -> the op it is handling
        deadline = time.monotonic() + timeout
        while any(op == "feed" for op in comms.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    try:
        client.run_on_scheduler(feeds_ended, timeout=timeout)
    except Exception:  # noqa: BLE001 - a scheduler already gone has no stream left to end
        pass


def _quiet_shutdown(client, workers: bool = True):
    """After Ctrl-C the workers are stopped mid-task: distributed then logs cancelled tasks,
    closed comms and workers it had to kill, here and (``workers``: ours, about to close) in
    every worker, which say nothing the user needs. Silence them for the shutdown; a second
    Ctrl-C meanwhile exits at once."""
    from ..engine.compute import silence_logs

    signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    silence_logs()
    if not workers:
        return
    try:
        client.run(silence_logs, on_error="ignore")
    except Exception:  # noqa: BLE001 - a worker already gone: nothing of its to silence
        pass
