"""A `distconv run` handed to the process kept warm beside a kept cluster: the caller's side.

Most of a run's start-up on a kept cluster is this process importing what a run imports (dask.array
with xarray, pandas, scipy and cupy; distributed; zarr). `distconv cluster start` therefore also
starts a warm process (warm.py) that has imported all of it once; `distconv run` (``forward``), when
the kept cluster is the one its cluster config would join, passes it its arguments, working
directory, environment and its terminal's stdin, stdout and stderr, and waits. The warm process
forks a child per run that takes those over and runs the same command body a fresh process would
(command.py: the workflow checked first, the same messages, exit codes and progress on the same
terminal); Ctrl-C is passed on to the child. Anything that does not fit (no warm process, another
Python or package, not Linux) runs in this process as before.

Requests come over a Unix socket of the user's own (mode 0600, peer credentials checked).
"""

from __future__ import annotations

import json
import os
import socket
import sys

from .config import ClusterConfigError, load_config
from .record import joinable, recorded


def supported() -> bool:
    return sys.platform == "linux" and hasattr(socket, "send_fds") and hasattr(socket, "SOCK_SEQPACKET")


def identity() -> dict:
    """What a warm process and a caller must share: the same interpreter and the same package."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # distconv/, above session/
    return {"python": sys.executable, "package": package}


def forward(params: dict, cluster_config, started: float) -> int | None:
    """Run `distconv run` with ``params`` (its parsed arguments) in the kept cluster's warm
    process; returns the run's exit code, or None when there is none for this cluster config
    (run it here)."""
    if not supported():
        return None
    try:
        cfg = load_config(cluster_config)
    except (ClusterConfigError, OSError, ValueError):
        return None  # the run here reports it
    doc = recorded()
    path = (doc or {}).get("handoff")
    if not path or joinable(cfg) is None or doc.get("handoff_identity") != identity():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        request = {"params": params, "cwd": os.getcwd(), "env": dict(os.environ), "started": started}
        socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
    except OSError:
        sock.close()
        return None  # not listening (yet, or any more): nothing was started
    running_child = False
    with sock:
        while True:
            try:
                reply = sock.recv(4096)
                if not reply and not running_child:
                    return None  # the request was refused before a child started: run it here
                if not reply:
                    print("distconv: error: the kept cluster's process ended during the run", file=sys.stderr)
                    return 1
                message = json.loads(reply)
                if "exit" in message:
                    return int(message["exit"])
                running_child = True  # {"pid": ...}
            except KeyboardInterrupt:  # the child says what it keeps and exits 130
                sock.send(b"INT")
