"""A local cluster kept running between jobs: `distconv cluster start` starts one (the same
cluster `distconv run` would, from the same cluster config) in a process of its own, and every
`distconv run` or `dc.cluster()` whose cluster config is the same joins it instead of paying
the start-up again; `distconv cluster stop` ends it, `status` shows it.

The running cluster is recorded in a small state file (record.py): its scheduler address,
dashboard, process id and the resolved config it was started from. Its scheduler takes only
clients holding the TLS credentials made for it, in files of the user's own beside the record
(security.py). Beside it runs the warm process that `distconv run`s are handed to (warm.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import handoff, local, security
from .cluster import dashboard_link
from .config import ClusterConfigError, load_config
from .record import comparable, credentials_dir, recorded, state_path
from .worker_imports import local_server


def start(config=None, timeout: float = 120.0) -> dict:
    """Start the cluster of ``config`` in a new process (its own session: a terminal's Ctrl-C
    does not reach it) and wait for its record. A running one of the same config is kept."""
    cfg = load_config(config)
    if cfg["type"] == "address":
        raise ClusterConfigError("cluster type 'address' joins a scheduler someone else runs: "
                                 "there is nothing to start")
    doc = recorded()
    if doc is not None:
        if doc.get("config") != comparable(cfg):
            raise ClusterConfigError(f"a distconv cluster of another config is running at {doc['address']}; "
                                     "stop it first (distconv cluster stop)")
        return {**doc, "started": False}
    p = state_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    log = open(p.with_suffix(".log"), "ab")
    proc = subprocess.Popen([sys.executable, "-m", "distconv.session.kept", json.dumps(comparable(cfg)), str(p)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.time() + timeout
    while time.time() < deadline:
        doc = recorded()
        if doc is not None and doc.get("pid") == proc.pid:
            return {**doc, "started": True}
        if proc.poll() is not None:
            raise ClusterConfigError(f"the cluster did not start (exit {proc.returncode}); its log: "
                                     f"{p.with_suffix('.log')}")
        time.sleep(0.1)
    proc.terminate()
    raise ClusterConfigError(f"the cluster did not start within {timeout:.0f} s; its log: {p.with_suffix('.log')}")


def stop(timeout: float = 30.0) -> dict | None:
    """End the running cluster (its workers with it); returns its record, or None."""
    doc = recorded()
    if doc is None:
        return None
    pid = int(doc["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
    state_path().unlink(missing_ok=True)
    security.remove(credentials_dir())
    return doc


def status() -> dict | None:
    """The running cluster's record with its workers (name -> threads, memory, GPU), or None."""
    doc = recorded()
    if doc is None:
        return None
    from distributed import Client

    from ..backends.devices import cluster_workers
    from ..engine.dashboard import page_url

    with Client(doc["address"], timeout="5s", security=security.of_record(doc, doc["config"])) as client:
        info = cluster_workers(client)
    # the page's address, also for a cluster a version before it recorded dask's /status
    return {**doc, "dashboard": page_url(doc["dashboard"]), "workers": {w.get("name", a): {"threads": w.get("nthreads"), "memory": w.get("memory_limit"),
                                                   "gpu": (w.get("gpu") or {}).get("name")}
                               for a, w in info.items()}}


def serve(cfg: dict, path: str):
    """The kept cluster's process: start it, record it, run until SIGTERM, then close it."""
    import threading

    from distributed import Client  # its config loaded before a key of it is set and unset below

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    server = _start_warm(path)  # its imports run while the cluster starts
    sec = security.for_cluster(cfg)
    made = sec is not None and security.of_config(cfg) is None  # made for this cluster: joiners read the files
    folder = credentials_dir(path)
    try:
        if made:
            security.write(sec, folder)
        with local_server(cfg) as warm, local.running(cfg, sec, fork=warm, close_timeout=10) as owned:
            with Client(owned) as client:
                doc = {"address": owned.scheduler_address, "dashboard": dashboard_link(client, cfg),
                       "pid": os.getpid(), "config": cfg, "started_at": time.time(),
                       "tls": str(folder) if made else None, **_listening(server)}
            tmp = Path(path).with_suffix(".tmp")
            tmp.write_text(json.dumps(doc))
            tmp.replace(path)  # whole or absent: start() reads it
            while not stopping.wait(0.5):
                pass
            if server:
                server[0].terminate()
    finally:
        Path(path).unlink(missing_ok=True)
        if made:
            security.remove(folder)


def _listening(server, timeout: float = 60.0) -> dict:
    """What the record says of the warm process once it listens (it imports while the cluster
    starts, so the first run after `distconv cluster start` is handed over too); nothing when
    there is none or it ended."""
    if not server:
        return {}
    proc, record = server
    deadline = time.time() + timeout
    while proc.poll() is None and not os.path.exists(record["handoff"]) and time.time() < deadline:
        time.sleep(0.05)
    return record if proc.poll() is None and os.path.exists(record["handoff"]) else {}


def _start_warm(path: str):
    """The warm process that runs `distconv run`s handed to this cluster (warm.py):
    (its process, what the record says of it), or None where runs cannot be handed over."""
    import tempfile

    if not handoff.supported():
        return None
    sock = str(Path(path).with_suffix(".sock"))
    if len(sock.encode()) > 100:  # a Unix socket's path is limited to 107 bytes
        sock = os.path.join(tempfile.gettempdir(), f"distconv-{os.getuid()}-{os.getpid()}.sock")
    # one thread per math library: the server forks its children, which run no math
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "distconv.session.warm", sock], stdin=subprocess.DEVNULL, env=env)
    return proc, {"handoff": sock, "handoff_identity": handoff.identity()}


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]), sys.argv[2])
