"""The GPU kernels of a `distconv run`'s jobs built on the node while its cluster starts.

A fresh node has an empty kernel cache; left to the blocks, every worker compiled the same
kernels at once inside its first blocks (engine/rehearsal.py). `distconv run` instead starts
a process of its own at its start (its imports and CUDA context made beside the check), hands
it the checked jobs, which it rehearses (their first block's device stage on zeros: it writes
only to the kernel cache) beside the cluster's start; the run waits for it once the cluster is
up, before any block, and says once what it built and how long it took. A job this node rehearsed before is
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
    """A rehearsal in a process of its own: started first (it imports the engine and makes its
    CUDA context while this process checks the workflows), handed the checked jobs, waited for."""

    def __init__(self, process):
        self._process = process

    @classmethod
    def start(cls, cluster_config) -> KernelBuilds | None:
        """The rehearsal's process, waiting for its jobs; None unless the configured cluster is
        one of GPU workers this command starts (cluster.warm_workers) on a fresh node."""
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
        return cls(subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL))

    def send(self, workflows: list):
        """Plan ``workflows`` (checked) as GPU workers run them and hand their jobs over."""
        import pickle

        from ..batch import direct

        jobs = []
        for wf in workflows:
            if wf.kind == "array" and wf.device != "cpu":
                with contextlib.suppress(Exception):  # the run itself reports what is wrong
                    jobs.append(direct.direct_job(wf, True)[0])
        try:
            self._process.stdin.write(pickle.dumps([j for j in jobs if j is not None]))
            self._process.stdin.close()
        except OSError:  # it ended: the blocks build what they need
            pass
        self._process.stdin = None  # sent: communicate() in wait() only reads its answer

    def wait(self, timeout: float = WAIT_S) -> dict | None:
        """{"built", "seconds", "waited_s"} once the rehearsal ends (None if it failed or ran
        past ``timeout``; the blocks then build what is missing themselves)."""
        import json
        import subprocess

        t = time.perf_counter()
        try:
            out, _ = self._process.communicate(timeout=timeout)
            result = json.loads(out.decode().strip().splitlines()[-1])
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
    """Has this node rehearsed any job (a mark in its kernel cache)? Then `distconv run` starts no
    rehearsal of its own: beside the check, its imports slow the check down, and a job whose kernels
    are new to the node is rehearsed by one worker of each host before its blocks
    (engine.compute.rehearse_on_hosts)."""
    from ..backends.cuda.loader import cache_dir
    from ..engine.rehearsal import MARKS  # (the engine: imported by the check anyway)

    try:
        with os.scandir(os.path.join(cache_dir(), MARKS)) as marks:
            return any(True for _ in marks)
    except OSError:
        return False


def rehearse_jobs(stdin) -> dict:
    """(In the rehearsal's process.) Make the CUDA context, then rehearse the jobs read from
    ``stdin`` (a pickled list) once each: {"built": kernels added to the node's cache, "seconds",
    "skipped": jobs this node had rehearsed}."""
    import pickle

    from ..backends.device import device
    from ..engine.rehearsal import rehearse_once

    device(True).zeros((1,), "u1")  # while the caller checks its workflows
    done = [rehearse_once(job) for job in pickle.load(stdin)]
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

    print(json.dumps(rehearse_jobs(sys.stdin.buffer)), flush=True)
