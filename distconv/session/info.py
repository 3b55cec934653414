"""What `distconv info` prints: versions, GPUs (via nvidia-smi), the resolved cluster config."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess

from ..backends.devices import gpu_count, gpu_stack_available
from .config import load_config, resolve_type

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
    cfg = load_config(cluster_path)
    lines = ["distconv info", "versions:"]
    lines += [f"  {k}: {v}" for k, v in versions().items()]
    g = gpus()
    lines.append(f"gpus: {len(g) if g else gpu_count()}")
    lines += [f"  {line}  (index, name, memory, compute capability)" for line in g]
    lines.append(f"gpu stack (cupy + dask-cuda): {'yes' if gpu_stack_available() else 'no'}")
    kind = cfg["type"] if cfg["type"] == "address" else resolve_type(cfg)
    lines.append(f"cluster: type {cfg['type']} -> {kind}")
    lines += [f"  {k}: {v}" for k, v in cfg.items() if v is not None]
    return "\n".join(lines)
