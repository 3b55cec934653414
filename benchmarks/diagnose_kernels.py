"""Kernel variants side by side on one GPU: the same rows built with other compile-time
switches (``-D`` options), to choose defaults by measurement. Prints one table (ms per row
per variant) and writes it as JSON under --out. Outputs are not checked here: the chosen
build's rows are, by ``python -m benchmarks``.

python -m benchmarks.diagnose_kernels [--out DIR] [--variant NAME=-DA=1,-DB=2 ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from . import harness

DEFAULT_VARIANTS = {  # staging (kernels/common.cuh dc_stage): copy widths, copies per loop step
    "4-byte copies": ("-DDC_STAGE_VEC=0",),
    "unroll 1": ("-DDC_STAGE_UNROLL=1",),
    "default": (),
}


def cases(cp):
    """(name, bytes moved, fn) for the rows the switches touch."""
    import distconv as dc
    from distconv.backends.cuda import histogram

    rng = np.random.default_rng(0)
    x = cp.random.standard_normal((16384, 16384), dtype=cp.float32)
    s = cp.random.standard_normal(2**28, dtype=cp.float32)
    v = cp.random.standard_normal((256, 1024, 1024), dtype=cp.float32)
    w = {k: rng.standard_normal((k, k)) for k in (3, 5, 9)}
    w9, w31 = rng.standard_normal(9), rng.standard_normal(31)
    w3 = {k: rng.standard_normal((k, k, k)) for k in (3, 5)}
    out = [(f"conv2d_{k}x{k}", 2 * x.nbytes, lambda k=k: dc.correlate(x, w[k], mode="reflect")) for k in (3, 5, 9)]
    out += [("conv1d_axis0_9", 2 * x.nbytes, lambda: dc.correlate1d(x, w9, axis=0)),
            ("conv1d_axis1_9", 2 * x.nbytes, lambda: dc.correlate1d(x, w9, axis=1)),
            ("gaussian2d_s2", 2 * x.nbytes, lambda: dc.gaussian_filter(x, 2.0)),
            ("minimum2d_5", 2 * x.nbytes, lambda: dc.minimum_filter(x, 5)),
            ("median2d_3", 2 * x.nbytes, lambda: dc.median_filter(x, 3)),
            ("conv1d_31", 2 * s.nbytes, lambda: dc.correlate1d(s, w31))]
    out += [(f"conv3d_{k}", 2 * v.nbytes, lambda k=k: dc.correlate(v, w3[k])) for k in (3, 5)]
    from dataclasses import replace

    from distconv.ops import filters, smooth, stencils

    pair = filters.fused_chain([filters.stencil_of(smooth.gaussian_filter, 2, np.float32, 2.0),
                                filters.stencil_of(stencils.laplace, 2, np.float32)]).func
    counted = replace(pair, bins=(np.linspace(-1, 1, 257).astype(np.float32), True))
    out += [("gaussian->laplace (one kernel)", 2 * x.nbytes, lambda: pair(x)),
            ("gaussian->laplace->hist256 (one kernel)", x.nbytes, lambda: counted(x))]

    def hist(fast_bins: bool):
        def run():
            saved = histogram._slack
            histogram._slack = saved if fast_bins else (lambda *a: 0.5)  # 0.5: every value looks the edges up
            try:
                return dc.histogram(s, bins=256, range=(-4, 4))
            finally:
                histogram._slack = saved
        return run

    out += [("hist256 edge lookups", s.nbytes, hist(False)), ("hist256 fast bins", s.nbytes, hist(True))]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.diagnose_kernels")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--variant", action="append", default=[], help="NAME=-DA=1,-DB=2")
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args(argv)
    import cupy as cp

    from distconv.backends.cuda import loader

    variants = dict(DEFAULT_VARIANTS)
    for v in args.variant:
        name, _, opts = v.partition("=")
        variants[name] = tuple(o for o in opts.split(",") if o)
    base = loader._OPTIONS
    copy = harness.copy_GBps()
    rows = cases(cp)
    table: dict = {name: {} for name, _, _ in rows}
    for vname, opts in variants.items():
        loader._OPTIONS = base + opts
        loader._modules.clear()
        for name, nbytes, fn in rows:
            ms = harness.median_ms(fn, repeat=args.repeat)
            table[name][vname] = {"ms": round(ms, 4), "pct_copy": round(100 * nbytes / ms / 1e6 / copy, 1)}
            print(f"{vname:>18} {name:<40} {ms:8.3f} ms {table[name][vname]['pct_copy']:6.1f} % copy", flush=True)
    loader._OPTIONS = base
    print(f"wrote {harness.write_variants(Path(args.out), 'kernel', copy, variants, table)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
