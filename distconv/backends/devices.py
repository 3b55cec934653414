"""Is there a GPU stack here, or on every worker of a cluster? The one GPU probe of distconv:
GPUs counted with nvidia-smi, so asking never creates a CUDA context (the client must not touch
a GPU); a cluster's workers asked through the same probe, once per client and set of workers."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import weakref


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


def gpu_here() -> bool:
    """Does this process have a GPU and the GPU stack (what a block needs to run on a GPU)?"""
    return bool(gpu_count()) and gpu_stack_available()


def cluster_workers(client) -> dict:
    """The workers of ``client``'s cluster (address -> what its scheduler says of each), every
    one of them: distributed 2025.4 to 2026.6 list the first 5 unless asked for all
    (``n_workers=-1``, which older versions ignore), and placed a job's blocks on those alone."""
    return client.scheduler_info(n_workers=-1)["workers"]


_ASKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # client -> (its workers, answer)


def gpu_blocks(client=None) -> bool:
    """Do blocks run on GPUs: every worker of ``client`` (this process, without one) has a GPU
    with the GPU stack. The workers are asked once per client and set of workers, so a command
    or a script writing several arrays probes them once."""
    if client is None:
        return gpu_here()
    workers = frozenset(cluster_workers(client))
    seen = _ASKED.get(client)
    if seen is not None and seen[0] == workers:
        return seen[1]
    answer = all(client.run(gpu_here).values())
    _ASKED[client] = (workers, answer)
    return answer
