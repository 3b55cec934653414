"""3-D masks on one GPU: the tiled kernel (restages KD planes per output plane) against the
sliding kernel (each plane staged once) over plane runs, rows per thread and build switches
(alternated twice), on the conv3d rows' 1 GiB volume. Each sliding result is compared bit for
bit with the tiled kernel's. Prints one table and writes it as JSON under --out.

python -m benchmarks.diagnose_conv3d [--out DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from . import harness

BUILDS = {  # kernels/convolve.cu dc_slide_min_blocks: blocks per SM the float build is made for
    "default": (),
    "2 blocks, unrolled": ("-DDC_SLIDE_BLOCKS=2", "-DDC_SLIDE_UNROLL=2"),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.diagnose_conv3d")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args(argv)
    import cupy as cp

    import distconv as dc
    from distconv.backends.cuda import convolve, loader

    rng = np.random.default_rng(0)
    v = cp.random.standard_normal((256, 1024, 1024), dtype=cp.float32)
    masks = {k: rng.standard_normal((k, k, k)) for k in (3, 5, 7)}
    copy = harness.copy_GBps()
    table: dict = {}
    base, slides, planes = loader._OPTIONS, convolve.slides, convolve.slide_planes

    def record(variant, k, fn, ref=None):
        got = fn()
        same = None if ref is None else bool(cp.array_equal(got, ref))
        ms = harness.median_ms(fn, repeat=args.repeat)
        pct = round(100 * 2 * v.nbytes / ms / 1e6 / copy, 1)
        table.setdefault(f"conv3d_{k}", {})[variant] = {"ms": round(ms, 4), "pct_copy": pct, "equal_to_tiled": same}
        print(f"{variant:>22} conv3d_{k}  {ms:8.3f} ms {pct:6.1f} % copy  equal to tiled: {same}", flush=True)
        return got

    tiled = {}
    convolve.slides = lambda *a: False
    for k, w in masks.items():
        tiled[k] = record("tiled", k, lambda w=w: dc.correlate(v, w))
    convolve.slides = slides
    for nz in (32, 64):
        convolve.slide_planes = lambda KD, nz=nz: nz
        for k, w in masks.items():
            record(f"slide, {nz} planes", k, lambda w=w: dc.correlate(v, w), tiled[k])
    convolve.slide_planes = planes
    shape = convolve.slide_shape
    convolve.slide_shape = lambda *a: shape(*a)[:3] + (1,)
    record("slide, one row", 3, lambda: dc.correlate(v, masks[3]), tiled[3])
    convolve.slide_shape = shape
    for rnd in (1, 2):  # builds alternated: run-to-run drift shows as the rounds' spread
        for name, opts in BUILDS.items():
            loader._OPTIONS = base + opts
            loader._modules.clear()
            for k, w in masks.items():
                record(f"{name} ({rnd})", k, lambda w=w: dc.correlate(v, w), tiled[k])
    loader._OPTIONS = base
    loader._modules.clear()
    print(f"wrote {harness.write_variants(Path(args.out), 'conv3d', copy, BUILDS, table)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
