"""Where `distconv run`'s start-up goes (issue 13: <= 5 s before the first task on 2 GPUs):
each step a run takes before its first task, timed in order in one fresh process, as the CLI
does them. Prints one JSON line per step (seconds since the process started).

    python -m benchmarks.diagnose_startup [workflow.yaml]
"""

from __future__ import annotations

import json
import sys
import time


def main():
    from distconv.cli import _process_start

    started = _process_start()
    last = [started]

    def step(what):
        now = time.time()
        print(json.dumps({"step": what, "s": round(now - last[0], 3), "since_start": round(now - started, 3)}),
              flush=True)
        last[0] = now

    step("interpreter start + import distconv.cli")
    from distconv.cluster import warm_workers

    warm_workers(None)
    step("warm_workers: start the server workers fork from (its imports run beside what follows)")
    import subprocess

    subprocess.run(["nvidia-smi", "-L"], capture_output=True)
    step("one nvidia-smi -L (gpu_count)")
    from distconv import batch
    from distconv.cluster import cluster, load_config

    step("import distconv.batch (dask.array, xarray, ops)")
    wf = batch.load(sys.argv[1]) if len(sys.argv) > 1 else None
    step("workflow load + check")
    import dask_cuda  # noqa: F401
    import distributed  # noqa: F401

    step("import distributed, dask_cuda")
    load_config(None)
    with cluster(None, quiet=True) as client:
        step("cluster up (workers spawned, registered) + client")

        def touch():
            import cupy

            cupy.zeros(1).sum()
            return True

        client.run(lambda: __import__("cupy") and True)
        step("client.run: workers import cupy")
        client.run(touch)
        step("client.run: workers create a CUDA context")

        def compile_kernel():
            import cupy
            import numpy as np

            from distconv import correlate

            correlate(cupy.ones((64, 64), np.float32), np.ones((5, 5), np.float32))
            cupy.cuda.Device().synchronize()
            return True

        client.run(compile_kernel)
        step("client.run: workers import distconv + load the 5x5 kernel (disk cache)")
        client.submit(int, 1, pure=False).result()
        step("one trivial task round trip")
        if wf is not None:
            from distconv.batch import runner

            runner._use_gpu(wf, client)
            step("runner._use_gpu probe (nvidia-smi on each worker)")
    step("cluster closed")


if __name__ == "__main__":
    main()
