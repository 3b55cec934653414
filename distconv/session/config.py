"""The cluster config: cluster.yaml (or a dict) merged over the defaults and checked whole (every
problem at once, naming the key), and which kind of cluster it resolves to. GPUs are counted with
nvidia-smi: the client never touches a GPU."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..backends.devices import gpu_count, gpu_stack_available
from ..core.checks import did_you_mean

DEFAULTS = {
    "type": "auto",                 # auto | cuda | cpu | address
    "address": None,                # tcp://host:8786 when type is address
    "n_workers": None,              # cuda: one per visible GPU; cpu: min(4, cores)
    "threads_per_worker": None,     # cuda: 8 (Zarr decode/encode runs on these); cpu: cores/workers
    "processes": True,              # cpu only: False runs workers as threads of this process
    "memory_limit": "auto",
    "device_memory_limit": None,    # cuda: spill to host above this (e.g. "60GB", 0.8)
    "rmm_pool_size": None,          # cuda: e.g. "40GB"
    "protocol": "tcp",
    "dashboard_address": "127.0.0.1:8787",
    "host": "127.0.0.1",            # the scheduler binds here unless told otherwise
    "local_directory": None,
    "tls": None,                    # {ca_file, cert, key} for multi-node clusters
    "timeout": "10s",               # connecting to an address
}
TYPES = ("auto", "cuda", "cpu", "address")


class ClusterConfigError(ValueError):
    pass


def load_config(config=None) -> dict:
    """Merge ``config`` (path, dict or None -> ./cluster.yaml if present) over the defaults.

    Every problem is reported at once in one ClusterConfigError that names the file it came
    from (a ./cluster.yaml read by default may be some other tool's file) and lists the
    allowed keys once."""
    where = "cluster config"
    if config is None:
        found = Path("cluster.yaml").is_file()
        if found:
            where = "cluster config './cluster.yaml' (read by default: it is in the current folder)"
        config = "cluster.yaml" if found else {}
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        if not path.is_file():
            raise ClusterConfigError(f"cluster config {str(path)!r} does not exist")
        where = where if where != "cluster config" else f"cluster config {str(path)!r}"
        try:
            config = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            raise ClusterConfigError(f"{where} is not valid YAML: {e}") from None
        config = {} if config is None else config  # an empty file: the defaults
    problems = _problems(config)
    if problems:
        raise ClusterConfigError(f"{where}: " + "; ".join(problems))
    return {**DEFAULTS, **config.get("cluster", config)}


def _problems(config) -> list[str]:
    """Every problem of a cluster config (a mapping, or one under the key ``cluster``)."""
    if not isinstance(config, dict):
        return [f"must be a mapping, got {type(config).__name__}"]
    config = config.get("cluster", config)
    if not isinstance(config, dict):
        return [f"'cluster' must be a mapping, got {config!r}"]
    problems = [f"unknown cluster key {key!r}{did_you_mean(key, DEFAULTS)}"
                for key in sorted(set(config) - set(DEFAULTS), key=str)]
    if problems:
        problems[-1] += f"; allowed keys: {', '.join(DEFAULTS)}"
    cfg = {**DEFAULTS, **config}
    if cfg["type"] not in TYPES:
        problems.append(f"cluster key 'type' is {cfg['type']!r}; allowed: {', '.join(TYPES)}")
    if cfg["type"] == "address" and not cfg["address"]:
        problems.append("cluster key 'address' is required when type is 'address'")
    for key in ("n_workers", "threads_per_worker"):
        v = cfg[key]
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            problems.append(f"cluster key {key!r} must be a positive integer, got {v!r}")
    if cfg["protocol"] not in ("tcp", "tls", "ucx", "inproc"):
        problems.append(f"cluster key 'protocol' is {cfg['protocol']!r}; allowed: tcp, tls, ucx, inproc")
    if cfg["tls"] is not None:
        if not isinstance(cfg["tls"], dict) or set(cfg["tls"]) - {"ca_file", "cert", "key"}:
            problems.append("cluster key 'tls' must be a mapping with ca_file, cert, key")
    if not isinstance(cfg["processes"], bool):
        problems.append(f"cluster key 'processes' must be true or false, got {cfg['processes']!r}")
    if cfg["type"] != "address":  # a running scheduler's workers have their own limits
        problems += _memory_problems(cfg["memory_limit"])
    return problems


MIN_MEMORY_LIMIT = 512 * 10**6  # a worker process takes about 250 MB before its first block


def memory_limit_bytes(value) -> int | None:
    """A worker's memory limit in bytes as distributed reads the key (a size such as '4GB', a
    number of bytes, or a fraction of this machine's memory); None for 'auto' and no limit
    (none, 0). Raises ValueError for a value that is none of these."""
    if value is None or value == "auto" or (not isinstance(value, bool) and value == 0):
        return None
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, float) and 0 < value <= 1:
        from distributed.system import MEMORY_LIMIT

        return int(value * MEMORY_LIMIT)
    if isinstance(value, (int, float)) and value > 1:
        return int(value)
    if isinstance(value, str):
        from dask.utils import parse_bytes

        return parse_bytes(value)
    raise ValueError(value)


def _memory_problems(value) -> list[str]:
    """Why ``memory_limit`` cannot work for a local cluster's workers: not a size, or too small
    for a worker to run a block (distributed restarts such a worker without end)."""
    try:
        n = memory_limit_bytes(value)
    except (ValueError, TypeError):
        return [f"cluster key 'memory_limit' is {value!r}; give a size per worker such as '4GB', a fraction "
                f"of this machine's memory such as 0.5, 'auto' or none (no limit)"]
    if n is not None and n < MIN_MEMORY_LIMIT:
        return [f"cluster key 'memory_limit' is {value!r} ({n / 1e6:.3g} MB per worker); a worker needs at least "
                f"{MIN_MEMORY_LIMIT // 10**6} MB (about 250 MB before its first block), more for large blocks"]
    return []


def resolve_type(cfg: dict) -> str:
    kind = cfg["type"]
    if kind == "auto":
        return "cuda" if gpu_count() and gpu_stack_available() else "cpu"
    if kind == "cuda":
        if not gpu_count():
            raise ClusterConfigError("cluster type 'cuda' asked for, but nvidia-smi lists no GPU")
        if not gpu_stack_available():
            raise ClusterConfigError("cluster type 'cuda' needs the GPU extra: "
                                     "pip install 'distconv[cuda13]' (or cuda12)")
    return kind

