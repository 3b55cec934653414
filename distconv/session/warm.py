"""The process kept warm beside a kept cluster (kept.py starts it), which runs the `distconv run`s
handed to it (handoff.py, the caller's side): it imports what a run imports once, then forks a
child per request that becomes the `distconv run` that asked (its working directory, environment
and terminal) and runs the command's body (command.py) with the caller's start time.

Requests come over a Unix socket of the user's own (mode 0600, peer credentials checked).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

from . import command
from .interrupt import cli_policy
from .worker_imports import WORKER_IMPORTS

# what a run imports, imported once by the server before it forks children: a worker's
# imports (one list, worker_imports.py) and the client's own
PRELOAD = WORKER_IMPORTS + ("distconv.session.command", "distconv.batch", "distconv.ops.registry",
                            "distconv.ops.stores", "dask.array", "xarray", "psutil", "yaml")
MAX_REQUEST = 1 << 20  # the arguments, working directory and environment, as JSON


def serve(path: str):
    """The warm server: import what a run imports, then fork a child per request, until the
    process that started it (the kept cluster's) ends."""
    import selectors
    import warnings

    from ..engine.prewarm import import_each

    import_each(PRELOAD)
    # numpy's BLAS threads count as threads for fork's warning; the children run no BLAS
    warnings.filterwarnings("ignore", message=r".*multi-threaded.*fork", category=DeprecationWarning)
    old = os.umask(0o177)
    try:
        _remove_socket(path)  # a stale one of an earlier server
        server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server.bind(path)
    finally:
        os.umask(old)
    server.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    children = {}  # connection -> child pid
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the cluster's stop: clean up below
    try:
        while os.getppid() == parent:
            for key, _ in sel.select(timeout=0.2):
                if key.fileobj is server:
                    conn, _ = server.accept()
                    sel.register(conn, selectors.EVENT_READ)
                elif key.fileobj not in children:
                    pid = _start(key.fileobj, sel, server)
                    if pid is None:
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
                    else:
                        children[key.fileobj] = pid
                else:
                    _signal(key.fileobj, children[key.fileobj], sel)
            _reap(children, sel)
    finally:
        for pid in children.values():
            _kill(pid, signal.SIGINT)
        server.close()
        _remove_socket(path)


def _remove_socket(path: str):
    """Remove ``path`` if it is a socket (a server's); anything else there is left alone and the
    bind fails, so no run is handed over."""
    import stat

    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass


def _start(conn, sel, server) -> int | None:
    """Read a request from ``conn`` and fork its child; the child's pid, or None."""
    import struct

    try:
        data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        request = json.loads(data)
    except (OSError, ValueError):
        return None
    if uid != os.getuid() or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid == 0:
        _child(request, fds, [key.fileobj for key in sel.get_map().values()] + [server])
    for fd in fds:
        os.close(fd)
    try:
        conn.send(json.dumps({"pid": pid}).encode())
    except OSError:
        _kill(pid, signal.SIGINT)
    return pid


def _child(request: dict, fds: list, sockets: list):
    """In the forked child: become the `distconv run` that asked, run it, exit with its code."""
    code = 1
    try:
        for s in sockets:
            s.close()
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        # the client's terminal (or files) as this process's streams, line by line as a terminal's
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own, for its life
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import dask

        dask.config.refresh()  # the caller's DASK_* (and ZARR_*) settings, not the server's
        if "zarr" in sys.modules:
            sys.modules["zarr"].config.refresh()
        params = {**request["params"], "workflow_paths": tuple(request["params"]["workflow_paths"])}
        try:
            # the command's own body, as the CLI calls it (its Ctrl-C policy too); handed over,
            # it is not handed on
            with cli_policy():
                code = command.run(params, handed_start=float(request["started"]))
        except SystemExit as e:
            code = command.exit_code(e)
        except Exception:  # noqa: BLE001 - the run's own handler missed it: show it, exit 1
            import traceback

            traceback.print_exc()
    finally:
        command.end_process(code)


def _signal(conn, pid: int, sel):
    """A message from a waiting client: INT (Ctrl-C) or its end; either interrupts the run."""
    try:
        data = conn.recv(64)
    except OSError:
        data = b""
    if not data:
        sel.unregister(conn)
    _kill(pid, signal.SIGINT)


def _reap(children: dict, sel):
    """Tell each client whose child has ended its exit code."""
    for conn, pid in list(children.items()):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 1 << 8
        if not done:
            continue
        del children[conn]
        code = os.waitstatus_to_exitcode(status)
        try:
            conn.send(json.dumps({"exit": code if code >= 0 else 128 - code}).encode())
        except OSError:
            pass
        if _registered(sel, conn):
            sel.unregister(conn)
        conn.close()


def _registered(sel, conn) -> bool:
    try:
        sel.get_key(conn)
    except KeyError:
        return False
    return True


def _kill(pid: int, sig: int):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


if __name__ == "__main__":
    serve(sys.argv[1])
