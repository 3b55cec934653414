"""What a fresh node spends building kernels (issue 52): with an empty kernel cache, each
compile a job's chain makes — its name and seconds — in this process, then the same chain in a
second process that finds the cache filled (what every other worker of the node pays). Run on
a GPU machine: ``python -m benchmarks.kernel_builds [--out FILE]``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHAINS = {
    "conv5": "dc.correlate(x, np.full((5, 5), 1 / 25, np.float32), mode='nearest')",
    "gaussian": "dc.gaussian_filter(x, 2.0)",
    "chain3": "dc.laplace(dc.gaussian_filter(x, 2.0))",
}


def _child(chain: str) -> dict:
    """Run ``chain`` once on a 4096² float32 cupy array, timing each kernel build."""
    import cupy
    import numpy as np

    import distconv as dc
    from distconv.backends.cuda import loader

    builds, real = [], loader.module

    def timed(pattern, expr):
        fresh = (cupy.cuda.runtime.getDevice(), pattern, expr) not in loader._modules
        t = time.perf_counter()
        mod = real(pattern, expr)
        if fresh:
            builds.append({"pattern": pattern, "kernel": expr, "s": round(time.perf_counter() - t, 3)})
        return mod

    loader.module = timed
    x = cupy.random.default_rng(0).standard_normal((4096, 4096), dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    if os.environ.get("KERNEL_BUILDS_PROFILE"):  # where the first call's seconds go
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
    eval(CHAINS[chain], {"dc": dc, "np": np, "x": x})
    cupy.cuda.Device().synchronize()
    first = time.perf_counter() - t
    if os.environ.get("KERNEL_BUILDS_PROFILE"):
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    t = time.perf_counter()
    eval(CHAINS[chain], {"dc": dc, "np": np, "x": x})
    cupy.cuda.Device().synchronize()
    return {"chain": chain, "first_call_s": round(first, 3), "second_call_s": round(time.perf_counter() - t, 4),
            "builds": builds, "build_s": round(sum(b["s"] for b in builds), 3)}


def _engine_child(root: str) -> dict:
    """A conv5 workflow on the engine (dask's local threads, GPU blocks) over a 1 GiB zstd
    input, with every CuPy compile (a kernel cache miss, distconv's or CuPy's own) logged."""
    import re
    import threading

    import numpy as np
    import yaml
    import zarr
    from cupy.cuda import compiler

    from distconv import batch

    builds, real, t0 = [], compiler.compile_using_nvrtc, time.perf_counter()

    def logged(source, *a, **kw):
        start = time.perf_counter()
        out = real(source, *a, **kw)
        names = kw.get("name_expressions") or re.findall(r"__global__\s+void\s+(\w+)", source)[:2]
        builds.append({"kernel": ", ".join(map(str, names))[:120], "s": round(time.perf_counter() - start, 3),
                       "at": round(start - t0, 2), "thread": threading.current_thread().name})
        return out

    compiler.compile_using_nvrtc = logged
    src = os.path.join(root, "in.zarr")
    if not os.path.exists(src):
        z = zarr.create_array(src, shape=(16384, 16384), chunks=(4096, 4096), dtype="float32")
        z[...] = np.random.default_rng(0).standard_normal((16384, 16384), dtype=np.float32)
    out = os.path.join(root, "out.zarr")
    wf_path = os.path.join(root, "wf.yaml")
    with open(wf_path, "w") as f:
        yaml.safe_dump({"input": {"path": src}, "steps": [{"op": "correlate", "weights": [[0.04] * 5] * 5}],
                        "outputs": {"path": out}, "overwrite": True, "device": "gpu"}, f)
    s = batch.run(batch.load(wf_path), progress=False)
    return {"path": s["path"], "seconds": s["seconds"], "stage_seconds": s.get("stage_seconds"),
            "builds": builds, "build_s": round(sum(b["s"] for b in builds), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", default=None)
    ap.add_argument("--engine", action="store_true", help="the engine's conv5 job, every CuPy compile logged")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_engine_child(args.child[len("engine:"):]) if args.child.startswith("engine:")
                         else _child(args.child)))
        return
    if args.engine:
        cache, root = tempfile.mkdtemp(prefix="kernel-cache-"), tempfile.mkdtemp(prefix="engine-")
        rows = []
        for run in ("empty cache", "cache filled"):
            res = subprocess.run([sys.executable, "-m", "benchmarks.kernel_builds", "--child", "engine:" + root],
                                 stdout=subprocess.PIPE, text=True, check=True,
                                 env={**os.environ, "CUPY_CACHE_DIR": cache})
            row = {**json.loads(res.stdout.strip().splitlines()[-1]), "run": run}
            rows.append(row)
            print(f"engine conv5 1 GiB, {run}: job {row['seconds']:.2f} s, {len(row['builds'])} compiles "
                  f"{row['build_s']:.2f} s ({row['path']}); stages {row['stage_seconds']}", flush=True)
            for b in row["builds"]:
                print(f"    at {b['at']:6.2f} s  {b['s']:5.2f} s  {b['thread']:>24s}  {b['kernel']}")
        if args.out:
            with open(args.out, "w") as f:
                json.dump(rows, f, indent=1)
        return
    cache = tempfile.mkdtemp(prefix="kernel-cache-")
    env = {**os.environ, "CUPY_CACHE_DIR": cache}
    rows = []
    for chain in CHAINS:
        for run in ("empty cache", "cache filled"):
            res = subprocess.run([sys.executable, "-m", "benchmarks.kernel_builds", "--child", chain],
                                 stdout=subprocess.PIPE, text=True, env=env, check=True)
            row = {**json.loads(res.stdout.strip().splitlines()[-1]), "run": run}
            rows.append(row)
            print(f"{chain:9s} {run:13s} first call {row['first_call_s']:.2f} s (builds {row['build_s']:.2f} s, "
                  f"{len(row['builds'])} kernels), second call {row['second_call_s'] * 1e3:.1f} ms", flush=True)
            for b in row["builds"]:
                print(f"    {b['s']:6.2f} s  {b['pattern']}: {b['kernel']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
