"""The GPU kernels of a `distconv run`'s jobs built on the node while its cluster starts.

A fresh node has an empty kernel cache; left to the blocks, every worker compiled the same
kernels at once inside its first blocks (engine/rehearsal.py). `distconv run` instead plans
its jobs and rehearses their first block's device stage in a process of its own from its start,
beside its own check and the cluster's start (it reads the workflows and the input's metadata,
and writes only to the kernel cache); the run waits for it once the cluster is up, before any
block, and says once what it built and how long it took. A job this node rehearsed before is
only looked up (a mark in the kernel cache); a node with any mark is not fresh, and its runs
start no rehearsal here (engine.write rehearses a job new to a host on one of its workers).
Any failure here leaves the building to the blocks, as before.
"""

from __future__ import annotations

import contextlib
import os
import time

WAIT_S = 300.0  # longest the run waits for the builds before it leaves them to the blocks


class KernelBuilds:
    """A rehearsal of workflows' jobs running in a process of its own (start, then wait)."""

    def __init__(self, process):
        self._process = process

    @classmethod
    def start(cls, workflow_paths: list, cluster_config) -> KernelBuilds | None:
        """Plan the workflows at ``workflow_paths`` and rehearse their jobs in a new process,
        beside this process's own check and the cluster's start; None unless the configured
        cluster is one of GPU workers this command starts (cluster.warm_workers)."""
        import subprocess
        import sys

        from .config import ClusterConfigError, load_config, resolve_type

        try:
            if resolve_type(load_config(cluster_config)) != "cuda":
                return None
        except (ClusterConfigError, OSError, ValueError):
            return None
        if rehearsed_here():  # not a fresh node: engine.write looks the job up on each host
            return None
        # a process of its own, not one forked from the workers' server: that server takes
        # seconds to import what the workers need before it forks anything
        process = subprocess.Popen([sys.executable, "-m", __name__, *map(os.path.abspath, workflow_paths)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True)
        return cls(process)

    def wait(self, timeout: float = WAIT_S) -> dict | None:
        """{"built", "seconds", "waited_s"} once the rehearsal ends (None if it failed or ran
        past ``timeout``; the blocks then build what is missing themselves)."""
        import json
        import subprocess

        t = time.perf_counter()
        try:
            out, _ = self._process.communicate(timeout=timeout)
            result = json.loads(out.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError, OSError):
            result = None
        self.stop()
        if not isinstance(result, dict) or "built" not in result:
            return None
        return {**result, "waited_s": round(time.perf_counter() - t, 2)}

    def stop(self):
        """End the rehearsal's process if it still runs (Ctrl-C, a failed run)."""
        if self._process.poll() is None:
            self._process.kill()
        with contextlib.suppress(Exception):
            self._process.wait(1.0)


def rehearsed_here() -> bool:
    """Has this node rehearsed any job (a mark in its kernel cache)? Then `distconv run` starts
    no rehearsal of its own: beside the check, its imports slowed the check by 1-2 s on one H100
    (NOTES.md), and a job whose kernels are new to the node is rehearsed by one worker of each
    host before its blocks (engine.compute.rehearse_on_hosts)."""
    from ..backends.cuda.loader import cache_dir
    from ..engine.rehearsal import MARKS  # (the engine: imported by the check anyway)

    try:
        with os.scandir(os.path.join(cache_dir(), MARKS)) as marks:
            return any(True for _ in marks)
    except OSError:
        return False


def rehearse_workflows(workflow_paths: list) -> dict:
    """(In the rehearsal's process.) Plan each workflow as GPU workers would run it and rehearse
    its job: {"built": kernels added to the node's cache, "seconds", "skipped": jobs this node
    rehearsed before}. A workflow that does not load or plan (the run reports why), a synthetic
    input not written yet, CPU blocks: nothing to build."""
    from .. import batch
    from ..batch import direct
    from ..engine.rehearsal import rehearse_once

    done = []
    for path in workflow_paths:
        with contextlib.suppress(Exception):
            wf = batch.load(path)
            if wf.kind == "array" and wf.device != "cpu":
                job = direct.plan(wf, True)[0]
                if job is not None:
                    done.append(rehearse_once(job))
    return {"built": sum(d["built"] for d in done), "seconds": round(sum(d["seconds"] for d in done), 2),
            "skipped": sum(bool(d.get("skipped")) for d in done)}


def message(built: dict | None) -> str | None:
    """The line a run prints when it built kernels (a node's first run of these steps)."""
    if not built or not built.get("built"):
        return None
    from ..backends.cuda.loader import cache_dir

    return (f"distconv: built {built['built']} GPU kernels for this node in {built['seconds']:.1f} s, beside the "
            f"cluster's start (cached in {cache_dir()}: later runs skip this)")



if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(rehearse_workflows(sys.argv[1:])), flush=True)
