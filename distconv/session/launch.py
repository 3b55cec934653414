"""The cluster a `distconv run` starts for itself, started in a process of its own at the
command's first instant, so that its start (the scheduler, the workers' server and its imports,
the workers) runs while the command imports and checks the workflows; the command joins it as
it would join a kept cluster.

The cluster's process lives exactly as long as the command: it reads its standard input until
the command closes it (the command ends, or dies: the pipe closes with it) and then stops its
workers. It runs in a session of its own, so a Ctrl-C at the terminal reaches the command
alone, which cancels its tasks and then closes the pipe. Its logs (the scheduler's, the
workers') go to a log file, not to the user's terminal; the file is removed when the cluster
ended cleanly.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

STOP_WAIT_S = 15.0  # longest the command waits for its cluster to stop before killing it
WARMUP_WAIT_S = 30.0  # longest the cluster waits for its workers' warm-up before it says it is up


class Launch:
    """A cluster starting in its own process: ``joined()`` waits for it and yields a client."""

    def __init__(self, process: subprocess.Popen, log: str, started: float):
        self.process, self.log, self.started = process, log, started
        self.doc: dict | None = None

    @classmethod
    def start(cls, cluster_config) -> Launch | None:
        """Start the configured cluster in its own process now; None where the command must
        not start one this way (a scheduler's address, a kept cluster of the same config to
        join, in-process workers, or a config with problems, which the check reports)."""
        from . import record
        from .config import ClusterConfigError, load_config

        try:
            cfg = load_config(cluster_config)
        except (ClusterConfigError, OSError, ValueError):
            return None
        if os.environ.get("DCX_OLD") or cfg["type"] == "address" or not cfg["processes"] or record.joinable(cfg):
            return None
        fd, log = tempfile.mkstemp(prefix=f"distconv-cluster-{os.getpid()}-", suffix=".log")
        with os.fdopen(fd, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", __name__, json.dumps(record.comparable(cfg)), log],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                    start_new_session=True)
        return cls(proc, log, time.time())

    def wait(self) -> dict:
        """The cluster's record once it is up: address, dashboard, kind, and what it said
        while starting. Raises ClusterConfigError when it could not start."""
        from .config import ClusterConfigError

        if self.doc is None:
            line = self.process.stdout.readline()
            try:
                self.doc = json.loads(line)
            except ValueError:
                self.process.wait()
                raise ClusterConfigError(f"the cluster did not start:{_last_lines(self.log)} "
                                         f"(its log: {self.log})") from None
            if "error" in self.doc:
                self.stop()
                raise ClusterConfigError(self.doc["error"])
        return self.doc

    @property
    def phases(self) -> dict:
        """When the cluster's process was started and each part of its start ended (epoch s)."""
        return {"cluster_started": self.started, **((self.doc or {}).get("phases") or {})}

    def client(self):
        """A client of the started cluster (the default client while it is open)."""
        from distributed import Client

        doc = self.wait()
        return Client(doc["address"], timeout="30s")

    @contextlib.contextmanager
    def joined(self):
        """A client of the started cluster, as ``cluster()`` gives one: the dashboard's line
        printed; at the end the client closed and the cluster stopped. After Ctrl-C the
        command's own logs are silenced while it stops (the cluster's go to its log)."""
        from .cluster import _let_feeds_end, _quiet_shutdown

        doc = self.wait()
        if doc.get("said"):
            print(doc["said"], end="", flush=True)
        client = self.client()
        interrupted = False
        try:
            print(f"distconv: dashboard at {doc['dashboard']}", flush=True)
            yield client
        except KeyboardInterrupt:
            interrupted = True
            _quiet_shutdown(client, workers=False)
            raise
        finally:
            if not interrupted:
                _let_feeds_end(client)
            client.close()
            self.stop()

    def stop(self, wait: bool = True):
        """Let the cluster stop (close its pipe); ``wait``: until it has, killing its process
        group past STOP_WAIT_S."""
        proc = self.process
        if proc.stdin and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
        if not wait:
            return
        try:
            proc.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            import signal

            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()


def _last_lines(path: str, n: int = 3) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [ln.rstrip() for ln in f if ln.strip()]
    except OSError:
        return ""
    return "".join("\n  " + ln for ln in lines[-n:])


def serve(cfg: dict, log: str):
    """The cluster's process: start the cluster, say where it is on stdout (one JSON line),
    run until stdin closes, stop it; a command that is gone before the cluster is up (its
    check failed, it was killed) stops it as soon as it is. Everything else it prints goes to
    stderr, the ``log`` file, removed when the cluster stopped cleanly."""
    import contextlib
    import io
    import threading

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints and the workers' output go to the log, not the command's pipe
    ended = threading.Event()  # the command closed the pipe, or died
    threading.Thread(target=lambda: (sys.stdin.read(), ended.set()), daemon=True).start()
    said = io.StringIO()
    phases = {}  # when each part of the start ended (epoch seconds): the command's timeline shows them

    from .cluster import START_METHOD_KEY, _stop_server, dashboard_link, make_cluster, warm_workers
    from .config import ClusterConfigError, resolve_type

    try:
        kind = resolve_type(cfg)
    except ClusterConfigError as e:
        _say(out, {"error": str(e)})
        return
    if ended.is_set():
        return
    with contextlib.redirect_stdout(said):  # e.g. "dashboard port in use": the command prints it
        # first the server the workers fork from: its imports (cupy, the engine) run while this
        # process imports distributed and starts the scheduler
        warm = warm_workers(cfg)
        phases["workers_server"] = time.time()
        import dask
        from distributed import Client

        with dask.config.set({START_METHOD_KEY: "forkserver"}) if warm else contextlib.nullcontext():
            owned = make_cluster(cfg)
        phases["workers_up"] = time.time()
    try:
        if not ended.is_set():
            with Client(owned) as client:
                from ..engine import placement, prewarm

                placement.register(client)  # loaded by this scheduler now, not inside the first job
                # the workers' one-time costs (page-locked staging, codec handles) end before the
                # command's first block arrives, as on a kept cluster
                prewarm.wait(client, WARMUP_WAIT_S)
                phases["workers_warm"] = time.time()
                doc = {"address": owned.scheduler_address, "dashboard": dashboard_link(client, cfg),
                       "kind": kind, "said": said.getvalue(), "pid": os.getpid(), "phases": phases}
            _say(out, doc)
            ended.wait()
    finally:
        owned.close(timeout=10)
        if warm:
            _stop_server()
    os.unlink(log)


def _say(out, doc: dict):
    with contextlib.suppress(OSError):  # a command already gone reads nothing
        out.write(json.dumps(doc) + "\n")
        out.flush()


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]), sys.argv[2])
