"""The compiled CPU kernels (backends/numpy/compiled.py) against scipy.ndimage, per core, on
one thread and on N threads that each filter their own block (the GIL released, as dask's
worker threads run blocks), plus each kernel's first-use compile and cached load (in child
processes with an empty numba cache). Runs on any machine, no GPU:

    python -m benchmarks.cpu_kernels [--out FILE] [--size 4096] [--threads 2] [--repeat 3]

Each row: case, threads, ms (the compiled path's wall time for one block per thread),
MBps_per_core, anchor (scipy's same call), anchor_ms, speedup (anchor_ms / ms, the same
threads on both), checked (true only where the output was compared with scipy's and matched:
exactly, or within the tests' float tolerance; ``exact`` says which)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CASES = {  # name: (distconv's call, scipy's call), on a float32 array x
    "correlate_5x5": ("dc.correlate(x, W5, mode='reflect')", "ndi.correlate(x, W5, mode='reflect')"),
    "gaussian_s2": ("dc.gaussian_filter(x, 2.0)", "ndi.gaussian_filter(x, 2.0)"),
    "median_3x3": ("dc.median_filter(x, 3)", "ndi.median_filter(x, 3)"),
    "median_5x5": ("dc.median_filter(x, 5)", "ndi.median_filter(x, 5)"),
    "minimum_5x5": ("dc.minimum_filter(x, 5)", "ndi.minimum_filter(x, 5)"),
}
ENTRIES = ("correlate", "correlate_passes", "rank", "extremum_passes")  # compiled.py's entries
SETUP = ("import numpy as np, scipy.ndimage as ndi, distconv as dc\n"
         "W5 = np.random.default_rng(1).standard_normal((5, 5))\n")  # also run by the JIT children


def _fn(expr: str, scope: dict):
    return eval("lambda x: " + expr, scope)  # our own fixed expressions


def _timed(fn, blocks: list, threads: int) -> float:
    """Wall seconds for ``threads`` threads, each running ``fn`` on its own block."""
    if threads == 1:
        t = time.perf_counter()
        fn(blocks[0])
        return time.perf_counter() - t
    with ThreadPoolExecutor(threads) as pool:
        t = time.perf_counter()
        list(pool.map(fn, blocks[:threads]))
        return time.perf_counter() - t


def _matches(got: np.ndarray, ref: np.ndarray) -> tuple[bool, bool]:
    """(within the tests' float32 tolerance (tests/helpers.py), bit for bit)."""
    exact = bool(np.array_equal(got, ref, equal_nan=True))
    mag = max(float(np.abs(ref).max()), 1.0)
    close = exact or bool(np.allclose(got, ref, rtol=2e-5, atol=2e-5 * mag))
    return close, exact


def kernel_rows(size: int, threads_list: list, repeat: int, cases: list) -> list:
    import scipy.ndimage as ndi

    import distconv as dc
    from distconv.backends.numpy import compiled

    scope = {"np": np, "ndi": ndi, "dc": dc, "W5": np.random.default_rng(1).standard_normal((5, 5))}
    rng = np.random.default_rng(0)
    blocks = [rng.standard_normal((size, size)).astype(np.float32) for _ in range(max(threads_list))]
    rows = []
    for case in cases:
        ours, ref = (_fn(e, scope) for e in CASES[case])
        taken = []
        real = {n: getattr(compiled, n) for n in ENTRIES}
        for n, f in real.items():  # count the compiled path's entries while checking the output
            setattr(compiled, n, lambda *a, _f=f, _n=n, _t=taken, **k: (_t.append(_n), _f(*a, **k))[1])
        try:
            got = ours(blocks[0])  # also the compile or cache load, untimed
        finally:
            for n, f in real.items():
                setattr(compiled, n, f)
        want = ref(blocks[0])
        close, exact = _matches(got, want)
        for threads in threads_list:
            mine, theirs = [], []
            for _ in range(repeat):  # A and B alternate, so a busy neighbour hits both alike
                theirs.append(_timed(ref, blocks, threads))
                mine.append(_timed(ours, blocks, threads))
            ms, anchor_ms = 1e3 * statistics.median(mine), 1e3 * statistics.median(theirs)
            rows.append({
                "case": f"{case} float32 {size}x{size}", "layer": "cpu-kernel", "threads": threads,
                "ms": round(ms, 2), "MBps_per_core": round(blocks[0].nbytes / ms / 1e3, 1),
                "anchor": "scipy.ndimage", "anchor_ms": round(anchor_ms, 2),
                "anchor_MBps_per_core": round(blocks[0].nbytes / anchor_ms / 1e3, 1),
                "speedup": round(anchor_ms / ms, 2), "checked": close, "exact": exact,
                "path": "compiled: " + ", ".join(sorted(set(taken))) if taken else "scipy",
                "note": f"{threads} thread(s), each its own block; median of {repeat}"})
            print(json.dumps(rows[-1]), flush=True)
    return rows


_CHILD = """
import json, time, numpy as np
t = time.perf_counter()
import distconv as dc
from distconv.backends.numpy import compiled
compiled.reason("linear", np.float32)
x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
{setup}
out = {{}}
for name, expr in {cases!r}:
    t = time.perf_counter()
    eval(expr)
    out[name] = round(time.perf_counter() - t, 3)
print(json.dumps(out))
"""


def jit_rows(cases: list) -> list:
    """Seconds of each case's first call on a 256 x 256 block in a fresh process: with an
    empty numba cache (the first use on a machine: compiles) and then with it filled (every
    later process: loads)."""
    code = _CHILD.format(setup=SETUP, cases=[(c, CASES[c][0]) for c in cases])
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        runs = [json.loads(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                          text=True).stdout.splitlines()[-1]) for _ in range(2)]
    for c in cases:
        rows.append({"case": c, "layer": "cpu-jit", "compile_s": runs[0][c], "cached_load_s": runs[1][c],
                     "note": "first call on a 256x256 float32 block in a fresh process, cases in this "
                             "order (empty, then filled numba cache): the kernels this case is the first "
                             "to use; the first case also imports numba"})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cpu_kernels")
    p.add_argument("--out", help="write the rows here as JSON")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default=",".join(CASES))
    p.add_argument("--no-jit", action="store_true", help="skip the compile-time rows")
    args = p.parse_args(argv)
    cases = args.only.split(",")
    rows = [] if args.no_jit else jit_rows(cases)
    rows += kernel_rows(args.size, [int(t) for t in args.threads.split(",")], args.repeat, cases)
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "load_avg_at_end": os.getloadavg(), "date": time.strftime("%Y-%m-%d")}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
