"""Per-chunk kernel times of a fused stencil chain on one 1 GiB cupy block (H100/H200):
where dask-level fusion gains or loses (the assemble copy of a tile of neighbour views).

    python benchmarks/profile_chain.py
"""
import numpy as np, cupy
from cupyx.profiler import benchmark
from distconv.ops import filters, smooth, stencils
from distconv.core.stencil import chain
from distconv.core.tile import Tile
from distconv import backends
x = cupy.random.standard_normal((16384 + 18, 16384), dtype=cupy.float32)
g = filters.stencil_of(smooth.gaussian_filter, 2, np.float32, 2.0)
l = filters.stencil_of(stencils.laplace, 2, np.float32)
c = chain([g, l])
H = c.depth[0]
t_ext = Tile.extended(x, (H, (0, 0)))
centre = x[9:-9]
def r(name, f):
    res = benchmark(f, n_repeat=10, n_warmup=2)
    print(name, round(float(np.median(res.gpu_times[0])) * 1e3, 3), "ms", flush=True)
r("gaussian whole (no halo)", lambda: g.func(centre))
r("laplace whole", lambda: l.func(centre))
r("gaussian on Tile.extended halo 9", lambda: g.func(Tile.extended(x, ((9, 9), (0, 0)))))
r("chain on Tile.extended", lambda: c.func(t_ext))
pieces = {(-1, 0): x[:9], (1, 0): x[-9:]}
tile_views = Tile(centre, ((9, 9), (0, 0)), pieces)
r("assemble of view tile", lambda: tile_views.assemble())
r("chain on neighbour-view tile", lambda: c.func(tile_views))
e = np.linspace(-1, 1, 257).astype(np.float32)
r("hist 256", lambda: backends.counts(centre, e, True))
# the pair as one kernel (distconv_separable2d with a second step), written or counted
from dataclasses import replace
pair = filters.fused_chain([g, l])
r("pair kernel on Tile.extended", lambda: pair.func(t_ext))
r("pair kernel on neighbour-view tile", lambda: pair.func(tile_views))
counted = replace(pair.func, bins=(e, True))
from distconv.backends.cuda import convolve as cuda_convolve
for copies in (1, 4, 8):
    cuda_convolve.PAIR_COPIES = copies
    r(f"pair kernel counted (gaussian -> laplace -> hist), {copies} copies of the counters",
      lambda: counted(tile_views))
w5 = (np.arange(25).reshape(5, 5) % 7 - 3) / 10.0
r("conv5 whole", lambda: backends.correlate(centre, w5, "reflect", 0.0, (0, 0)))
r("copy", lambda: centre.copy())
