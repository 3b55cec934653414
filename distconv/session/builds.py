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

A cluster of CPU workers has the same first-run cost in numba's compile of the CPU kernels
(backends/numpy/compiled.py): where numba's cache holds none (a fresh install), the process
compiles the kernels the checked workflows' steps call, on a small block of zeros of each
input's dtype, into the cache every worker reads (`make demo` runs it at install for the demo).
The run does not wait for it: its blocks run scipy (the same numbers) while it compiles
(kernel_cache.compiling), and it is left to finish the cache if the run ends first.
"""

from __future__ import annotations

import contextlib
import os
import time

WAIT_S = 300.0  # longest the run waits for the builds before it leaves them to the blocks


class KernelBuilds:
    """A rehearsal in a process of its own: started first (it imports the engine and makes its
    CUDA context while this process checks the workflows), handed the checked jobs, waited for."""

    def __init__(self, process, gpu: bool = True):
        self._process = process
        self._gpu = gpu
        self._sent = False

    @classmethod
    def start(cls, cluster_config) -> KernelBuilds | None:
        """The rehearsal's process, waiting for its jobs; None unless the configured cluster is
        one of GPU workers this command starts (cluster.warm_workers) on a fresh node."""
        import subprocess
        import sys

        from .config import ClusterConfigError, load_config, resolve_type

        try:
            kind = resolve_type(load_config(cluster_config))
        except (ClusterConfigError, OSError, ValueError):
            return None
        if kind not in ("cuda", "cpu") or (compiled_here() if kind == "cpu" else rehearsed_here()):
            return None  # not a fresh node: the blocks find the kernels, or build one that is new
        # a process of its own, not one forked from the workers' server: that server takes
        # seconds to import what the workers need before it forks anything
        return cls(subprocess.Popen([sys.executable, "-m", __name__] + ([] if kind == "cuda" else ["cpu"]),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL),
                   kind == "cuda")

    def send(self, workflows: list):
        """Plan ``workflows`` (checked) as GPU workers run them and hand their jobs over."""
        import pickle

        from ..batch import direct

        jobs = []
        for wf in workflows:
            if wf.kind == "array" and wf.device != ("cpu" if self._gpu else "gpu"):
                with contextlib.suppress(Exception):  # the run itself reports what is wrong
                    jobs.append(direct.direct_job(wf, True)[0] if self._gpu else stencil_of(wf))
        try:
            self._process.stdin.write(pickle.dumps([j for j in jobs if j is not None]))
            self._process.stdin.close()
        except OSError:  # it ended: the blocks build what they need
            pass
        self._process.stdin = None  # sent: communicate() in wait() only reads its answer
        self._sent = True

    def wait(self, timeout: float = WAIT_S) -> dict | None:
        """{"built", "seconds", "waited_s"} once the rehearsal ends (None if it failed or ran
        past ``timeout``; the blocks then build what is missing themselves). A CPU compile is
        not waited for: its blocks run scipy until it ends (kernel_cache.compiling), and where it
        still runs this says so ({"device": "cpu", "running": True, ...})."""
        import json
        import subprocess

        t = time.perf_counter()
        if not self._gpu and self._process.poll() is None:
            return {"device": "cpu", "running": True, "built": 0, "seconds": 0.0, "waited_s": 0.0}
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
        """End the rehearsal's process if it still runs (Ctrl-C, a failed run). A CPU compile
        handed its stencils is left to finish the cache (seconds; it writes nothing else)."""
        if not self._gpu and self._sent:
            return
        if self._process.poll() is None:
            self._process.kill()
        with contextlib.suppress(Exception):
            self._process.wait(1.0)


def rehearsed_here() -> bool:
    """Has this node rehearsed any job (a mark in its kernel cache)? Then `distconv run` starts no
    rehearsal of its own: beside the check, its imports slow the check down, and a job whose kernels
    are new to the node is rehearsed by one worker of each host before its blocks
    (engine.compute.prepare_workers)."""
    from ..backends.cuda.loader import cache_dir
    from ..engine.rehearsal import MARKS  # (the engine: imported by the check anyway)

    try:
        with os.scandir(os.path.join(cache_dir(), MARKS)) as marks:
            return any(not m.name.endswith(".building") for m in marks)  # (a build under way)
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


def compiled_here() -> bool:
    """Has this machine compiled CPU kernels before, or is a compile under way (or can it not:
    no numba)? Then `distconv run` starts no compile of its own; a kernel new to it compiles in
    the blocks that call it."""
    from ..backends.numpy import compiled, kernel_cache

    return kernel_cache.cached_here() or compiled.reason("linear", "f8") is not None  # no numba, or compiling


def stencil_of(wf):
    """(the fused stencil of ``wf``'s steps, the input's dtype), as planned for the check (the
    steps before a scan where they end in one); None where the steps make none."""
    from ..batch import direct
    from ..core.stencil import ScanStep, Stencil
    from ..graph.declared import declared

    result = direct.planned_steps(wf)[0]
    arr = getattr(result, "data", result)  # a dataset variable's DataArray
    found = declared(arr, Stencil)
    if found is None and (scan := declared(arr, ScanStep)) is not None:
        found = declared(scan[0], Stencil)
    return None if found is None else (found[1], str(found[0].dtype))


def compile_stencils(stencils) -> dict:
    """(In the compile's process.) Run each (stencil, dtype) once on a block of zeros big enough
    for the compiled path (compiled.MIN_SIZE), with the stencil's halo around it: every kernel
    it calls is then in numba's cache. {"built": kernels compiled, "seconds", "cache", "device"}."""
    import numpy as np

    from ..backends.numpy import compiled, kernel_cache
    from ..core.tile import Tile

    t, before = time.perf_counter(), kernel_cache.compiled_count()
    for stencil, dtype in stencils:
        side = int(np.ceil((2 * compiled.MIN_SIZE) ** (1 / stencil.ndim)))
        ext = np.zeros(tuple(lo + side + hi for lo, hi in stencil.depth), dtype)
        stencil.func(Tile.extended(ext, stencil.depth))
    return {"built": kernel_cache.compiled_count() - before, "seconds": round(time.perf_counter() - t, 2),
            "cache": kernel_cache.cache_path(), "device": "cpu"}


@contextlib.contextmanager
def compiling_mark():
    """This process's pid in kernel_cache.COMPILING (the first of numba's cache folders it can
    write) while the block runs: the machine's CPU workers run scipy meanwhile rather than
    compile the same kernels each."""
    from ..backends.numpy import kernel_cache

    path, mark = None, None
    for folder in kernel_cache.cache_dirs():
        try:
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, kernel_cache.COMPILING)
            mark = open(path, "w")
            with contextlib.suppress(ImportError):
                import fcntl

                fcntl.flock(mark, fcntl.LOCK_EX)  # held while this process lives: released if it is killed
            mark.write(str(os.getpid()))
            mark.flush()
            break
        except OSError:
            path, mark = None, None
            continue
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                os.remove(path)
            mark.close()


def compile_workflows(paths) -> dict:
    """compile_stencils for the workflow files at ``paths`` (what `make demo` runs at install)."""
    from .. import batch

    return compile_stencils([s for s in (stencil_of(batch.load(p)) for p in paths) if s is not None])


def message(built: dict | None) -> str | None:
    """The line a run prints when it built kernels (a node's first run of these steps)."""
    if built and built.get("running"):
        return ("distconv: compiling CPU kernels (first run on this machine) beside the run, scipy meanwhile "
                "(cached for later runs)")
    if not built or not built.get("built"):
        return None
    if built.get("device") == "cpu":
        return (f"distconv: compiled {built['built']} CPU kernels (first run) in {built['seconds']:.1f} s, beside "
                f"the cluster's start (cached in {built['cache']}: later runs skip this)")
    from ..backends.cuda.loader import cache_dir

    return (f"distconv: built {built['built']} GPU kernels for this node in {built['seconds']:.1f} s, beside the "
            f"cluster's start (cached in {cache_dir()}: later runs skip this)")



if __name__ == "__main__":
    import json
    import pickle
    import sys

    if sys.argv[1:] == ["cpu"]:  # a command's compile: the stencils on stdin, its blocks on scipy meanwhile
        from ..backends.numpy.compiled import warm

        warm()  # numba's import while the command checks its workflows
        stencils = pickle.load(sys.stdin.buffer)
        with compiling_mark() if stencils else contextlib.nullcontext():  # marked once there is work
            done = compile_stencils(stencils)
        print(json.dumps(done), flush=True)
    elif sys.argv[1:]:  # workflow files: compile ahead (make's install)
        done = compile_workflows(sys.argv[1:])
        print(f"distconv: compiled {done['built']} CPU kernels in {done['seconds']:.1f} s (cached in {done['cache']})",
              flush=True)
    else:
        print(json.dumps(rehearse_jobs(sys.stdin.buffer)), flush=True)
