"""python -m benchmarks.sass [ROW ...] [--run-only]: what the kernels of some table rows compile to.

Runs each row once on its table input, notes the kernels it loads (DISTCONV_KERNEL_LOG), builds
each again with nvcc (`-Xptxas -v`: registers, spills) and prints its static SASS by opcode
(cuobjdump -sass): the instruction mix benchmarks/NOTES.md reasons from (FFMA against staging,
addresses, uniform loads). DISTCONV_SASS_DIR: the folder in which a new one keeps the sources, cubins and SASS.
`--run-only` just runs the rows, for a profiler: the executed count of every SASS line comes
from `ncu -k regex:distconv_ --section SourceCounters -o prof python -m benchmarks.sass ROW
--run-only` then `ncu -i prof.ncu-rep --page source --print-source sass --csv`.
Needs a GPU, cupy and the CUDA toolkit (nvcc, cuobjdump).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def _rows():
    import cupy as cp
    import numpy as np

    import distconv as dc

    rng = np.random.default_rng(0)
    x = lambda: cp.random.standard_normal((16384, 16384), dtype=cp.float32)
    v = lambda: cp.random.standard_normal((256, 1024, 1024), dtype=cp.float32)
    s = lambda: cp.random.standard_normal(2**28, dtype=cp.float32)
    return {
        "conv2d_9x9": (x, lambda a: dc.correlate(a, rng.standard_normal((9, 9)), mode="reflect")),
        "conv3d_3": (v, lambda a: dc.correlate(a, rng.standard_normal((3, 3, 3)))),
        "conv3d_5": (v, lambda a: dc.correlate(a, rng.standard_normal((5, 5, 5)))),
        "gaussian_laplace_s2": (x, lambda a: dc.gaussian_laplace(a, 2.0)),
        "gradient_magnitude_s2": (x, lambda a: dc.gaussian_gradient_magnitude(a, 2.0)),
        "hist65536": (s, lambda a: dc.histogram(a, bins=65536, range=(-4, 4))),
        "median2d_3": (x, lambda a: dc.median_filter(a, 3)),
    }


def cp_capability() -> tuple:
    import cupy

    cc = cupy.cuda.Device().compute_capability
    return int(cc[:-1]), int(cc[-1])


def mix(cubin: Path) -> dict:
    """{kernel: Counter of opcodes} of a cubin's static SASS."""
    text = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    out: dict = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"\s*(?:Function : |\.text\.)(\w+)", line)
        if m:
            current = out.setdefault(m.group(1), collections.Counter())
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+\{?\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and current is not None:
            current[m.group(1).split(".")[0]] += 1
    return out


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    run_only = "--run-only" in args
    names = [a for a in args if not a.startswith("--")]
    if not run_only:
        # a new folder of its own (inside DISTCONV_SASS_DIR when set): nothing there is overwritten
        parent = os.environ.get("DISTCONV_SASS_DIR")
        if parent:
            Path(parent).mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="distconv-sass-", dir=parent))
        print(f"sources, cubins and SASS in {work}")
        log = work / "kernels.log"
        env = {**os.environ, "DISTCONV_KERNEL_LOG": str(log)}
        subprocess.run([sys.executable, "-m", "benchmarks.sass", *names, "--run-only"], env=env, check=True)
        from distconv.backends.cuda import loader

        arch = "sm_{}{}".format(*cp_capability())
        loaded = sorted({tuple(ln.split("\t")[3:5]) for ln in log.read_text().splitlines()})
        for k, (pattern, name) in enumerate(loaded):
            # nvcc instantiates what host code takes the address of (NVRTC's name expressions)
            cu = work / f"{k}.cu"
            cu.write_text(loader.source(pattern) + f"\nstatic void *dc_sass_keep = (void *)&{name};\n")
            cubin = work / f"{k}.cubin"
            built = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", *loader._OPTIONS, "-Xptxas", "-v",
                                    "-o", str(cubin), str(cu)], check=False, capture_output=True, text=True)
            if built.returncode:
                print(f"\n{name}: nvcc failed\n{built.stderr[-2000:]}")
                continue
            usage = [ln for ln in built.stderr.splitlines() if "registers" in ln or "spill" in ln]
            (work / f"{k}.sass").write_text(subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True,
                                                             capture_output=True, text=True).stdout)
            for ops in mix(cubin).values():
                total = sum(ops.values())
                print(f"\n{name}\n  " + "\n  ".join(u.split(": ", 1)[-1] for u in usage[-2:])
                      + f"\n  {total} instructions: " + ", ".join(f"{op} {n}" for op, n in ops.most_common(18)))
        return 0
    import cupy as cp

    rows = _rows()
    for name in names or rows:
        make, fn = rows[name]
        a = make()
        fn(a)
        cp.cuda.Device().synchronize()
        del a
        cp.get_default_memory_pool().free_all_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
