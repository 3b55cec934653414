"""``dc.cluster()``: a dask Client on the configured cluster (config.py) — a local
LocalCUDACluster or LocalCluster started for it (local.py), the kept cluster of the same config
joined (record.py), or an existing scheduler's address — closed with the block, the process
left as found (interrupt.py). The client never touches a GPU."""

from __future__ import annotations

import contextlib
import threading

from . import interrupt, local, record, security
from .config import ClusterConfigError, load_config, resolve_type
from .worker_imports import CLIENT_IMPORTS, local_server, register_warmup, wait_warmup
from .local import workers_of  # noqa: F401  (info.py reads it here)
from .worker_imports import warm_workers  # noqa: F401  (command.py starts the server ahead through it)


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
    itself never touches a GPU. A cluster started here, or kept, takes only clients that hold
    the TLS credentials made for it (or the config's own ``tls:``).

    The process is left as it was found, whether the block ends, raises, or is interrupted:
    Ctrl-C inside it closes a cluster started here quietly and raises KeyboardInterrupt, with
    the SIGINT handler, the loggers, the environment and multiprocessing's state as before.

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
    cfg = load_config(config)
    with contextlib.ExitStack() as stack:
        stack.enter_context(interrupt.command_logs())  # a command's cluster logs to its file
        stack.enter_context(interrupt.own_filters_removed())  # the last to end
        client, owned = _open(cfg, quiet, stack)
        if owned is not None and interrupt.in_command():
            stack.enter_context(_workers_watched(client, owned))  # ends before the cluster closes
        log = interrupt.current_log()
        if log is not None and owned is not None and _worker_processes(cfg):
            client.register_plugin(interrupt.worker_logs_plugin(log))
        interrupted = False
        try:
            if not quiet:
                print(f"distconv: dashboard at {dashboard_link(client, cfg)}", flush=True)
            yield client
        except KeyboardInterrupt:
            interrupted = True
            # our workers' logs quieted (others' keep theirs); all of it closed while quiet
            with interrupt.quiet_shutdown(client, workers=owned is not None and _worker_processes(cfg)):
                stack.close()
            raise
        finally:
            if owned is not None and not interrupted:
                _let_feeds_end(client)


CLIENT_IMPORTS_THREAD = "distconv-client-imports"


def _open(cfg: dict, quiet: bool, stack: contextlib.ExitStack):
    """(client, the cluster started for it or None) for ``cfg``, each closed by ``stack``."""
    from distributed import Client

    from ..engine.prewarm import import_each

    if cfg["type"] == "address":
        try:
            client = Client(cfg["address"], timeout=cfg["timeout"], security=security.of_config(cfg))
        except (OSError, TimeoutError) as e:
            raise ClusterConfigError(f"cannot reach the scheduler at {cfg['address']!r}: {e}") from None
        stack.callback(client.close)  # on Ctrl-C while waiting too: the client goes, the user's cluster stays
        register_warmup(cfg, client)  # idempotent: done already if `distconv run` asked beside its check
        wait_warmup(client)
        return client, None
    doc = record.joined(cfg)  # a kept one (kept.py)
    if doc is not None:
        client = Client(doc["address"], timeout=cfg["timeout"], security=security.of_record(doc, cfg))
        stack.callback(client.close)
        if not quiet:
            print(f"distconv: joined the running cluster at {doc['address']} (distconv cluster stop ends it)",
                  flush=True)
        return client, None
    if _worker_processes(cfg):
        local.refuse_unguarded_script()
    # workers fork from the warmed server (started here unless `distconv run` started it beside
    # its check): a script's first blocks then find the block code imported
    warm = stack.enter_context(local_server(cfg))  # ends after the cluster has closed
    # the first write's imports beside the workers' start, not between the job's submission and
    # its blocks (0.2 s on two cores, 0.5 s on a 4-GPU node, the scheduler sharing the GIL)
    threading.Thread(target=import_each, args=(CLIENT_IMPORTS,), name=CLIENT_IMPORTS_THREAD, daemon=True).start()
    # a command's cluster closes within a bound: workers in a restart loop do not outlive its work
    owned = stack.enter_context(local.running(cfg, security.for_cluster(cfg), fork=warm,
                                              close_timeout=CLOSE_WAIT_S if interrupt.in_command() else None))
    client = Client(owned)
    stack.callback(client.close)
    return client, owned


@contextlib.contextmanager
def _workers_watched(client, owned, every: float = 1.0):
    """A command's local cluster whose workers all died and were not started again (a nanny
    gives up on a worker killed for memory again and again) would leave its tasks waiting for
    ever: once it has had no worker for NO_WORKERS_S, the client's tasks are cancelled, saying
    so (failures.WORKERS_GONE), and the command ends with its line."""
    import threading
    import time

    from distributed import Future

    from .failures import WORKERS_GONE

    stop = threading.Event()

    def watch():
        since = None
        while not stop.wait(every):
            if owned.workers:
                since = None
                continue
            since = since or time.monotonic()
            if time.monotonic() - since >= NO_WORKERS_S:
                try:
                    client.cancel([Future(k, client) for k in list(client.futures)], force=True, msg=WORKERS_GONE)
                except Exception:  # noqa: BLE001 - a client closing meanwhile: nothing left to wait for
                    pass
                return

    thread = threading.Thread(target=watch, name="distconv-workers-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


def _worker_processes(cfg: dict) -> bool:
    """Whether a local cluster of ``cfg`` runs its workers in processes of their own (else
    they are threads of this one, whose loggers the shutdown quiets already)."""
    return cfg["processes"] or resolve_type(cfg) == "cuda"


CLOSE_WAIT_S = 30.0  # longest a command waits for its cluster to close
NO_WORKERS_S = 10.0  # a command's local cluster without any worker this long has lost them for good
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
