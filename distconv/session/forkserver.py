"""The server a local cluster's workers fork from, preloaded with what a worker imports, and
the process left as found around it.

multiprocessing keeps one forkserver per process, with one preload list, and distributed
starts workers through it by name (``distributed.worker.multiprocessing-method``). So the
server is only used when no one else's runs; its preload list is ours for the moment the server
starts (the list counts only then) and given back after; it ends once the clusters that use it
have closed (``serving``), which gives back the preload list as it was, and distributed's mark that
it set its own (it sets it when it first forks: left set, distributed would not set its list again
for a server started later). multiprocessing has no public way to ask whether its server runs or to
end it: the few private attributes that tell are read here only, and where a Python lacks them
no server is started (the workers spawn as dask starts them by default).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

START_METHOD_KEY = "distributed.worker.multiprocessing-method"

_lock = threading.Lock()
_ours: dict | None = None  # while a server of ours runs: {"previous": preload list before, "holders": n}


def _server():
    """multiprocessing's forkserver object, or None where it lacks what ``start``/``_stop``
    read."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    needed = ("_forkserver_pid", "_preload_modules", "_stop", "ensure_running", "set_forkserver_preload")
    return server if server is not None and all(hasattr(server, a) for a in needed) else None


def start(modules, env: dict) -> bool:
    """Start the server with ``modules`` imported and ``env`` in its environment (kept by the
    workers it forks); True when one of ours runs (started now or before), False when none can
    be: another's server runs, or this Python's multiprocessing is not the one read here."""
    global _ours
    with _lock:
        if _ours is not None:
            return True
        server = _server()
        if server is None or server._forkserver_pid is not None:
            return False
        previous = list(server._preload_modules)
        env = {k: str(v) for k, v in env.items() if v is not None and k not in os.environ}
        # The server starts with SIGINT ignored, which Python keeps and the server hands to every
        # worker: Ctrl-C at a terminal reaches the whole process group, and workers raising
        # KeyboardInterrupt printed tracebacks over the command's own line; the process that
        # started the workers stops them. SIGINT is blocked in this thread meanwhile: a Ctrl-C
        # then stays pending and arrives after, instead of being lost to the ignored handler.
        main = threading.current_thread() is threading.main_thread()
        if main:
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            server.set_forkserver_preload(list(modules))
            os.environ.update(env)
            server.ensure_running()
        finally:
            for k in env:
                os.environ.pop(k, None)
            server.set_forkserver_preload(previous)  # read only as a server starts
            if main:
                signal.signal(signal.SIGINT, handler)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _ours = {"previous": previous, "holders": 0}  # distributed's mark: read once a cluster uses it
        return True


@contextlib.contextmanager
def serving(modules, env: dict):
    """The server of ``start`` for the block (True), or none (False); it ends when the last
    block that holds it ends, its preload list as it was before."""
    started = start(modules, env)
    if started:
        with _lock:
            _ours["holders"] += 1
            if "flag" not in _ours:
                _ours["flag"] = _preload_flag()
                if _ours["flag"] is not None:
                    # our server runs: distributed setting its own list as it first forks would
                    # import its optional packages (pandas among them) in this process for
                    # nothing, on the way to the first worker
                    import distributed.utils

                    distributed.utils._forkserver_preload_set = True
    try:
        yield started
    finally:
        if started:
            with _lock:
                _ours["holders"] -= 1
                if _ours["holders"] == 0:
                    _stop()


def release_unheld():
    """End our server if no cluster holds it: one started ahead for a cluster that never
    started (a command whose check failed, or had nothing to run)."""
    with _lock:
        if _ours is not None and _ours["holders"] == 0:
            _stop()


def _stop():
    """End our server at once (it holds nothing to save: it never touched a GPU; left to
    itself it outlived the command, finalizing its imports with the command's stdout and
    stderr open) and give back the preload list as it was before it started."""
    global _ours
    server = _server()
    if server is not None:
        pid = server._forkserver_pid
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)  # Python's default for it: end without finalizing
            server._stop()  # closes its pipe, reaps it, forgets it: a later cluster starts a new one
        server.set_forkserver_preload(_ours["previous"])
    if _ours.get("flag") is not None:  # distributed sets its own preload list again when it next forks
        import distributed.utils

        distributed.utils._forkserver_preload_set = _ours["flag"]
    _ours = None


def _preload_flag():
    """distributed's mark that it has set the forkserver's preload list (set as it first starts
    workers, also through our server), or None where this distributed has none."""
    import distributed.utils

    return getattr(distributed.utils, "_forkserver_preload_set", None)
