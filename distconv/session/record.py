"""The record of a cluster kept running between runs (kept.py starts one): a small state file
(dask config ``distconv.cluster-state``, default ``~/.cache/distconv/cluster.json``) with its
scheduler address, dashboard, process id, the resolved config it was started from, the folder
of its TLS credentials beside it (security.py) and, where there is one, its warm process's
socket (warm.py). A run or ``dc.cluster()`` whose resolved cluster config is the recorded one
joins that cluster.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core import keys


def state_path() -> Path:
    default = Path.home() / ".cache" / "distconv" / "cluster.json"
    return Path(keys.get(keys.CLUSTER_STATE) or default).expanduser()


def credentials_dir(path=None) -> Path:
    """The folder of the kept cluster's TLS credentials beside its record at ``path`` (default:
    ``state_path()``)."""
    return Path(path or state_path()).with_suffix(".tls")


def recorded() -> dict | None:
    """The running cluster's record, or None (no record, or its process is gone: the stale
    record is removed, with the credentials written for it)."""
    p = state_path()
    try:
        doc = json.loads(p.read_text())
        os.kill(int(doc["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        if p.exists():
            from .security import remove

            p.unlink(missing_ok=True)
            remove(credentials_dir(p))
        return None
    return doc


def joined(cfg: dict) -> dict | None:
    """The record of a running cluster started from the same resolved config as ``cfg``, or
    None."""
    doc = recorded()
    if doc is None or doc.get("config") != comparable(cfg):
        return None
    return doc


def joinable(cfg: dict) -> str | None:
    """The scheduler address of a running cluster started from the same resolved config as
    ``cfg``, or None."""
    doc = joined(cfg)
    return None if doc is None else doc["address"]


def comparable(cfg: dict) -> dict:
    """``cfg`` as the record holds it (through JSON: tuples become lists, paths strings)."""
    return json.loads(json.dumps(cfg, default=str))
