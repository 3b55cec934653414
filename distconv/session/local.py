"""The local cluster a cluster config starts: its kind (config.py), its workers, the
credentials its scheduler takes (security.py), its dashboard's port; and the process's
environment given back as found once it has closed."""

from __future__ import annotations

import contextlib
import os
import sys

from . import security as tls
from .config import memory_limit_bytes, resolve_type
from .forkserver import START_METHOD_KEY


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


def make_cluster(cfg: dict, security=None):
    """Start ``cfg``'s LocalCUDACluster or LocalCluster; with ``security`` (security.py) its
    scheduler and workers speak TLS and take only clients that hold its credentials."""
    kind, n, threads = workers_of(cfg)
    cfg = {**cfg, "dashboard_address": _free_dashboard(cfg["dashboard_address"])}
    common = {k: cfg[k] for k in ("local_directory", "memory_limit") if cfg[k] is not None}
    if "memory_limit" in common:
        common["memory_limit"] = _within_machine(cfg["memory_limit"])
    # None is no dashboard (distributed's default instead listened on every interface)
    common["dashboard_address"] = cfg["dashboard_address"]
    from ..engine.dashboard import scheduler_kwargs

    # distconv's page from the scheduler's start, kept; dask's pages once it runs
    common["scheduler_kwargs"] = scheduler_kwargs(dashboard=bool(cfg["dashboard_address"]))
    protocol = tls.protocol(cfg, security)
    if kind == "cuda":
        kw = {k: cfg[k] for k in ("device_memory_limit", "rmm_pool_size") if cfg[k] is not None}
        if cfg["n_workers"]:
            kw["n_workers"] = cfg["n_workers"]
        # each worker page-locks the engine's staging as it starts (engine/prewarm.py)
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(protocol=protocol, host=cfg["host"], threads_per_worker=threads,
                                security=security, preload=["distconv.engine.prewarm"], **kw, **common)
    from distributed import LocalCluster

    if cfg["processes"]:
        common["host"] = cfg["host"]  # in-process workers talk inproc://, no socket to bind
        common["protocol"] = protocol
        # a CPU cluster asked for on a GPU node runs its blocks on the CPUs: its workers see no GPU
        common["env"] = {"CUDA_VISIBLE_DEVICES": ""}
    return LocalCluster(n_workers=n, threads_per_worker=threads, processes=cfg["processes"],
                        security=security, **common)


def refuse_unguarded_script():
    """A script that starts a local cluster of worker processes at its top level, outside
    ``if __name__ == "__main__":``, is stopped with one line saying what to add: each worker
    process imports the script again (spawn and forkserver do), which starts a cluster there,
    and multiprocessing fails in every worker with a page of tracebacks."""
    import dask

    if dask.config.get(START_METHOD_KEY, "spawn") == "fork":
        return
    line = _unguarded_line()
    if line is not None:
        path, n = line
        raise SystemExit(f"distconv: error: {path}:{n} starts a local cluster at the top level of the script; "
                         f"its worker processes import the script again and would start one each. Put the "
                         f"script's work under `if __name__ == \"__main__\":` (or use processes: false)")


def _unguarded_line():
    """(the script, the line) of the running script's top-level statement, not under an ``if``
    on ``__name__``, that led here; None where this is no script run from a file (a notebook,
    ``python -c``) or the statement is guarded."""
    import ast
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and main is not None
                                     and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None or not path or not str(path).endswith(".py"):
        return None
    try:
        with open(path) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return None
    line = frame.f_lineno
    for node in tree.body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            guarded = isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                                       for n in ast.walk(node.test))
            return None if guarded else (path, line)
    return None


def _within_machine(value):
    """``memory_limit`` as given, or this machine's memory where it asks for more: said once
    here (distributed says it once per worker)."""
    from distributed.system import MEMORY_LIMIT

    asked = memory_limit_bytes(value)
    if asked is None or asked <= MEMORY_LIMIT:
        return value
    print(f"distconv: memory_limit {value!r} is more than this machine's memory ({MEMORY_LIMIT / 1e9:.3g} GB); "
          "each worker is limited to that", flush=True)
    return MEMORY_LIMIT


@contextlib.contextmanager
def running(cfg: dict, security=None, fork: bool = False, close_timeout: float | None = None):
    """``cfg``'s local cluster for the block, closed after it (within ``close_timeout`` seconds
    when given); ``fork``: its workers fork from the server that forkserver.py started (for
    this start only: a restarted worker spawns).
    What the start put in this process's environment (LocalCUDACluster sets a variable there)
    and the top-level keys it added to dask's config (dask_cuda adds its UCX settings) are
    given back once the cluster has closed, where the block left them as the start set them."""
    import dask

    before, config_before = dict(os.environ), set(dask.config.config)
    try:
        with dask.config.set({START_METHOD_KEY: "forkserver"}) if fork else contextlib.nullcontext(), \
                _port_taken_said(cfg["dashboard_address"]):
            owned = make_cluster(cfg, security)
    except BaseException:
        _give_back(before, dict(os.environ))
        raise
    started = dict(os.environ)
    added = {k: dask.config.config[k] for k in set(dask.config.config) - config_before}
    try:
        yield owned
    finally:
        try:
            owned.close(timeout=close_timeout)
        except TimeoutError:  # workers that do not stop (a restart loop) do not hold the process
            if close_timeout is None:
                raise
            print(f"distconv: the cluster did not close within {close_timeout:.0f} s (workers restarting? "
                  "see the cluster's log); its worker processes were ended", file=sys.stderr, flush=True)
            _end_workers(owned)
        finally:
            _give_back(before, started)
            for key, value in added.items():
                if dask.config.config.get(key, object()) is value:
                    del dask.config.config[key]


def _end_workers(owned):
    """End the worker processes of ``owned`` whose close did not finish (their nannies are
    closing: none is started again)."""
    import signal

    for nanny in list(getattr(owned, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _give_back(before: dict, started: dict):
    """Undo the environment variables that the start changed from ``before`` to ``started``
    (each one only where it still holds the start's value)."""
    for key in set(before) | set(started):
        if before.get(key) == started.get(key) or os.environ.get(key) != started.get(key):
            continue
        if key in before:
            os.environ[key] = before[key]
        else:
            os.environ.pop(key, None)


@contextlib.contextmanager
def _port_taken_said(address):
    """distributed's warning that a port was taken between _free_dashboard's look and the bind
    (another run starting at once) said in distconv's line, or not at all where no dashboard
    was asked for (its HTTP server's default port taken: nothing the user asked for)."""
    import re
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        taken = re.match(r"Port (\d+) is already in use.*on port (\d+) instead", str(w.message), re.S)
        if taken is None:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif address:
            print(f"distconv: dashboard port {taken[1]} is in use; using port {taken[2]}", flush=True)


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
