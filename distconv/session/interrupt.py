"""What Ctrl-C inside a cluster's block does to the process around it, and where a command's
cluster logs.

A library leaves the process as it found it: after Ctrl-C the cluster's loggers are quiet
while the cluster closes, then as they were; the SIGINT handler is never touched (a notebook's
next Ctrl-C interrupts its next cell, as ever); filters distconv put on the cluster's loggers
come off with the cluster. Only the command line sets a policy for its process
(``cli_policy``): it ends with one line after Ctrl-C, so the cluster's logs stay quiet until
it exits and a second Ctrl-C while the cluster closes ends it at once with 130; and its
cluster's loggers (here and in its worker processes) write to the cluster log, a file, while
the terminal gets distconv's own lines.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import threading

INTERRUPTED = 130  # the exit code of a command ended by Ctrl-C

# inside cli_policy: what its Ctrl-C changed (the SIGINT handler, the loggers' levels), to give back
_cli = contextvars.ContextVar("distconv_cli_policy", default=None)


@contextlib.contextmanager
def cli_policy():
    """The command line's policy for Ctrl-C, for the clusters opened in the block: once
    interrupted, the cluster's logs in this process stay silent and a second Ctrl-C ends the
    process with exit code 130. What that changed is given back when the block ends (a
    command ends its process inside it). Entering it imports nothing."""
    import logging

    changed = {}
    token = _cli.set(changed)
    try:
        yield
    finally:
        _cli.reset(token)
        if "sigint" in changed:
            signal.signal(signal.SIGINT, changed["sigint"])
        for name, level in changed.get("levels", {}).items():
            logging.getLogger(name).setLevel(level)


# the loggers of a cluster's libraries that write to the terminal (distributed's own handlers)
LOG_NAMES = ("distributed", "distributed.client", "distributed.worker", "distributed.scheduler",
             "distributed.nanny", "dask_cuda", "tornado", "tornado.application", "asyncio", "bokeh")


LOG_KEEP_BYTES = 20 * 10**6  # a cluster log beyond this is set aside as the next command starts


def cluster_log():
    """The file a command's cluster logs to (beside the kept cluster's record and log)."""
    from .record import state_path

    return state_path().with_name("run.log")


def in_command() -> bool:
    """Inside cli_policy: a command that ends its process when its work ends."""
    return _cli.get() is not None


def current_log():
    """The file the cluster's logs go to in this command (cli_policy), or None (a library's
    caller keeps its loggers as they are)."""
    changed = _cli.get()
    return None if changed is None else changed.get("log")


LOG_LINES = 2000  # the most lines of the cluster log a run's --json carries (its last ones)


def log_offset() -> int | None:
    """Where this command's cluster log ends now (bytes; the next run's lines start there), or
    None outside a command."""
    path = current_log()
    if path is None:
        return None
    try:
        return os.path.getsize(path)
    except OSError:  # not written yet (the handler opens it on its first line)
        return 0


def log_since(offset: int | None) -> list[str]:
    """The cluster log's lines written since ``offset`` (log_offset: this process's and its
    workers'), the last LOG_LINES of them; [] outside a command."""
    path = current_log()
    if path is None or offset is None:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return text.splitlines()[-LOG_LINES:]


@contextlib.contextmanager
def command_logs():
    """Inside cli_policy (a command), the cluster's loggers in this process write to the cluster
    log (cluster_log) instead of the terminal for the block, distributed imported first (it puts
    its terminal handler on as it is imported); elsewhere nothing changes."""
    if not in_command():
        yield
        return
    import distributed  # noqa: F401

    with logs_to(cluster_log()):
        yield


@contextlib.contextmanager
def logs_to(path):
    """The cluster's loggers in this process write to the file ``path`` instead of the terminal
    for the block (their handlers as before after it); where the file cannot be opened they are
    left as they are."""
    import logging

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path) and os.path.getsize(path) > LOG_KEEP_BYTES:
            os.replace(path, f"{path}.1")  # the previous commands' logs, one generation kept
        handler = logging.FileHandler(path, delay=True)
    except OSError:
        yield
        return
    before = _route(handler, "pid")
    changed = _cli.get()
    if changed is not None:
        changed["log"] = str(path)
    try:
        yield
    finally:
        for name, (handlers, propagate) in before.items():
            log = logging.getLogger(name)
            log.removeHandler(handler)
            for h in handlers:
                if h not in log.handlers:
                    log.addHandler(h)
            log.propagate = propagate
        handler.close()


def _terminal(handler) -> bool:
    import logging
    import sys

    return type(handler) is logging.StreamHandler and handler.stream in (sys.stderr, sys.stdout,
                                                                         sys.__stderr__, sys.__stdout__)


def worker_logs_to(path):
    """In a worker process of a command's cluster: its cluster loggers write to ``path`` (the
    process is ours and ends with the command)."""
    import logging

    _route(logging.FileHandler(path), "worker pid")


def worker_logs_plugin(path: str):
    """A worker plugin by which every worker process of a command's cluster, those a nanny
    starts again after one died included, logs to ``path`` (made here: distributed is imported
    only once a cluster starts)."""
    from distributed import WorkerPlugin

    class WorkerLogs(WorkerPlugin):
        name = "distconv-worker-logs"

        def __init__(self, path: str):
            self.path = path

        def setup(self, worker):
            worker_logs_to(self.path)

    return WorkerLogs(path)


def _route(handler, who: str) -> dict:
    """``handler`` in place of the cluster loggers' terminal handlers (and for the top ones that
    had none: asyncio's went to Python's last resort, the terminal); returns each logger's
    (handlers, propagate) before."""
    import logging

    handler.setFormatter(logging.Formatter(f"%(asctime)s [{who} {os.getpid()}] %(name)s - %(levelname)s - "
                                           "%(message)s"))
    before = {name: (list(logging.getLogger(name).handlers), logging.getLogger(name).propagate)
              for name in LOG_NAMES}
    for name, (handlers, propagate) in before.items():
        log = logging.getLogger(name)
        terminal = [h for h in handlers if _terminal(h)]
        for h in terminal:
            log.removeHandler(h)
        if terminal or (not handlers and propagate and "." not in name):
            log.addHandler(handler)
            log.propagate = False
    return before


@contextlib.contextmanager
def quiet_shutdown(client, workers: bool):
    """The block in which an interrupted cluster closes: workers were stopped mid-task, and
    distributed logs cancelled tasks, closed comms and workers it had to kill, here and
    (``workers``: processes of ours, about to close) in each worker, which say nothing the user
    needs."""
    import logging

    from ..engine.compute import CLUSTER_LOGGERS, quiet_logs, silence_logs

    changed = _cli.get()
    if changed is not None:
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, lambda *_: os._exit(INTERRUPTED))
            changed.setdefault("sigint", previous)
        changed.setdefault("levels", {name: logging.getLogger(name).level for name in CLUSTER_LOGGERS})
        silence_logs()  # for the rest of the command: it ends with one line
        quiet = contextlib.nullcontext()
    else:
        quiet = quiet_logs()
    with quiet:
        if workers:
            try:
                client.run(silence_logs, on_error="ignore")
            except Exception:  # noqa: BLE001 - a worker already gone: nothing of its to silence
                pass
        yield


@contextlib.contextmanager
def own_filters_removed():
    """Filters of distconv's put on the cluster's loggers while the block runs (the engine
    drops what a stopped job's abandoned gathers log when collected) taken off after it."""
    import gc
    import logging

    from ..engine.compute import CLUSTER_LOGGERS

    before = {name: list(logging.getLogger(name).filters) for name in CLUSTER_LOGGERS}
    try:
        yield
    finally:
        added = {name: [f for f in logging.getLogger(name).filters
                        if f not in old and type(f).__module__.startswith("distconv.")]
                 for name, old in before.items()}
        if any(added.values()):
            gc.collect()  # what they filter is logged as it is collected: now, while they are on
        for name, filters in added.items():
            for f in filters:
                logging.getLogger(name).removeFilter(f)
