"""GPU time of one 256 MiB member (4096 x 16384 float32) as the dask layer hands it over: the
centre its own allocation, halo pieces views of separate neighbour blocks. Without a halo,
with rows of halo only, with a 2-D halo: what a chunk's border costs the kernels.

    python benchmarks/profile_member.py
"""
from dataclasses import replace

import cupy
import numpy as np
from cupyx.profiler import benchmark

from distconv import backends
from distconv.core.tile import Tile
from distconv.ops import filters, smooth, stencils


def member(h: int, cols: bool):
    """Tile of a 4096 x 16384 centre with ``h`` rows (and, if ``cols``, columns) of halo cut
    from eight separate neighbour blocks."""
    shape = (4096, 16384)
    centre = cupy.random.standard_normal(shape, dtype=cupy.float32)
    if h == 0:
        return Tile.of(centre)
    pieces = {}
    for dy in (-1, 0, 1):
        for dx in ((-1, 0, 1) if cols else (0,)):
            if dy == dx == 0:
                continue
            nb = cupy.random.standard_normal(shape, dtype=cupy.float32)  # the neighbour's block
            ys = slice(-h, None) if dy < 0 else slice(0, h) if dy > 0 else slice(None)
            xs = slice(-h, None) if dx < 0 else slice(0, h) if dx > 0 else slice(None)
            pieces[(dy, dx)] = nb[ys, xs]
    return Tile(centre, ((h, h), (h, h) if cols else (0, 0)), pieces)


def ms(fn) -> float:
    return round(float(np.median(benchmark(fn, n_repeat=20, n_warmup=3).gpu_times[0])) * 1e3, 3)


g = filters.stencil_of(smooth.gaussian_filter, 2, np.float32, 2.0)
lap = filters.stencil_of(stencils.laplace, 2, np.float32)
pair = filters.fused_chain([g, lap]).func
counted = replace(pair, bins=(np.linspace(-1, 1, 257).astype(np.float32), True))
w5 = (np.arange(25).reshape(5, 5) % 7 - 3) / 10.0
for name, h, fn in (("conv5", 2, lambda t: backends.correlate(t, w5, "reflect", 0.0, (0, 0))),
                    ("gaussian s2", 8, g.func),
                    ("pair (gaussian -> laplace)", 9, pair),
                    ("pair counted", 9, counted)):
    row = {}
    for label, hh, cols in (("no halo", 0, False), ("row halo", h, False), ("2-D halo", h, True)):
        t = member(hh, cols)
        row[label] = ms(lambda: fn(t))
        del t
    print(f"{name:28s}", row, flush=True)
