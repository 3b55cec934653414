"""What `distconv info` prints: versions, GPUs (via nvidia-smi), the resolved cluster config."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
from pathlib import Path

from ..backends.devices import gpu_count, gpu_stack_available
from . import record
from .cluster import workers_of
from .config import load_config

PACKAGES = ("distconv", "numpy", "scipy", "dask", "distributed", "zarr", "xarray",
            "cupy-cuda13x", "cupy-cuda12x", "cupy", "dask-cuda")


def versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def gpus() -> list[str]:
    if not shutil.which("nvidia-smi"):
        return []
    q = "--query-gpu=index,name,memory.total,compute_cap"
    try:
        res = subprocess.run(["nvidia-smi", q, "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in res.stdout.splitlines() if line.strip()]


def report(cluster_path=None) -> str:
    source = config_source(cluster_path)
    cfg = load_config(cluster_path)
    lines = ["distconv info", "versions:"]
    lines += [f"  {k}: {v}" for k, v in versions().items()]
    g = gpus()
    lines.append(f"gpus: {len(g) if g else gpu_count()}")
    lines += [f"  {line}  (index, name, memory, compute capability)" for line in g]
    lines.append(f"gpu stack (cupy + dask-cuda): {'yes' if gpu_stack_available() else 'no'}")
    lines.append(f"cluster config: {source}")
    lines.append(f"cluster: {what_starts(cfg)}")
    lines += [f"  {k}: {v}" for k, v in cfg.items() if v is not None]
    return "\n".join(lines)


def config_source(cluster_path=None) -> str:
    """Which cluster config a run reads (load_config's rule), in words."""
    if cluster_path is not None:
        return str(Path(cluster_path).resolve())
    if Path("cluster.yaml").is_file():
        return str(Path("cluster.yaml").resolve())
    return "the defaults (no --cluster, and no cluster.yaml in this folder)"


def what_starts(cfg: dict) -> str:
    """What a run on ``cfg`` uses: the scheduler it connects to, the kept cluster it joins, or
    the workers, threads and memory of the local cluster it starts."""
    if cfg["type"] == "address":
        return f"type address: connects to the scheduler at {cfg['address']}"
    running = record.joinable(cfg)
    if running:
        return f"type {cfg['type']}: joins the kept cluster at {running} (distconv cluster status lists it)"
    kind, n, threads = workers_of(cfg)
    memory = cfg["memory_limit"]
    if memory in (None, "auto"):
        memory = f"{_total_memory() / max(n, 1) / 2**30:.1f} GiB each (the host's memory shared)"
    device = ""
    if kind == "cuda":
        device = f", device memory limit {cfg['device_memory_limit'] or 'default'}"
    return (f"type {cfg['type']} -> {kind}: starts {n} worker{'s' if n != 1 else ''} x {threads} "
            f"thread{'s' if threads != 1 else ''}, memory {memory}{device}")


def _total_memory() -> int:
    try:
        import psutil

        return psutil.virtual_memory().total
    except ImportError:  # psutil comes with distributed
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
