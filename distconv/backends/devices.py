"""Is there a GPU stack here? Counted with nvidia-smi, so asking never creates a CUDA context
(the client must not touch a GPU)."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess


def gpu_count() -> int:
    """GPUs visible to this process, from nvidia-smi (no CUDA context in the client)."""
    n = _node_gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        n = min(n, len([v for v in visible.split(",") if v.strip()]))
    return n


@functools.cache
def _node_gpus() -> int:
    """The node's GPUs as nvidia-smi lists them, asked once a process (a command asked up to
    four times: its config's kind, the workers' server, the kernel builds, the cluster)."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def gpu_stack_available() -> bool:
    """cupy and dask-cuda are installed (the GPU extra)."""
    return all(importlib.util.find_spec(m) is not None for m in ("cupy", "dask_cuda"))
