"""Separable passes + a small correlate (+ counts) as one kernel (distconv_separable2d with a
second step): bit for bit the two kernels run one after the other, close to the numpy oracle,
for halo tiles at every kind of edge, every mode pair, odd sizes; outputs poisoned first."""

import itertools
import warnings

import dask
import dask.array as da
import numpy as np
import pytest

import distconv as dc
from distconv.core.stencil import mask_depth, passes_depth, run_steps
from distconv.core.tile import Tile
from distconv.ops import filters
from distconv.ops.smooth import gaussian_kernel1d

from ..helpers import assert_matches, poison_gpu_pool

pytestmark = pytest.mark.gpu
MODES = ["reflect", "constant", "nearest", "mirror"]
STAR = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=np.float64)


@pytest.fixture
def cuda():
    import cupy

    from distconv.backends.cuda import convolve, histogram

    return cupy, convolve, histogram


def passes_for(sigmas, axes):
    return [(a, gaussian_kernel1d(s, 0, int(4 * s + 0.5)), 0) for a, s in zip(axes, sigmas)]


def tile_of(xp, a, depth, edges):
    """A halo tile of ``a``'s interior: along each axis the full halo on an interior side,
    none on a side marked global in ``edges`` (per axis (lo_global, hi_global))."""
    halo = tuple((0 if glo else lo, 0 if ghi else hi) for (lo, hi), (glo, ghi) in zip(depth, edges))
    sl = tuple(slice(d_lo - h_lo, a.shape[i] - (d_hi - h_hi))
               for i, ((d_lo, d_hi), (h_lo, h_hi)) in enumerate(zip(depth, halo)))
    return Tile.extended(xp.asarray(np.ascontiguousarray(a[sl])), halo)


def unfused(convolve, tile, passes, mode, cval, w, mode2, cval2):
    from functools import partial

    steps = [(partial(convolve.correlate_passes, passes=passes, mode=mode, cval=cval), passes_depth(passes, tile.ndim)),
             (partial(convolve.correlate, weights=w, mode=mode2, cval=cval2, origin=(0,) * tile.ndim),
              mask_depth(w.shape, (0,) * tile.ndim))]
    return run_steps(tile, steps)


CASES = [  # (shape, pair axes, sigmas, second mask shape)
    ((131, 203), (0, 1), (2.0, 2.0), (3, 3)),
    ((77, 65), (0, 1), (1.5, 2.0), (5, 5)),
    ((9, 300), (0, 1), (1.2, 1.6), (1, 3)),
    ((140, 11), (0, 1), (2.0, 1.3), (3, 1)),
    ((5, 70, 97), (1, 2), (2.0, 1.5), (3, 3)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("mode,mode2", list(itertools.product(MODES, MODES)))
def test_pair_kernel_is_the_two_kernels_bit_for_bit(cuda, rng, case, mode, mode2):
    from distconv.backends.cuda import separable

    cupy, convolve, histogram = cuda
    shape, axes, sigmas, k2 = CASES[case]
    passes = passes_for(sigmas, axes)
    w = (STAR if k2 == (3, 3) else rng.standard_normal(k2)).reshape(
        tuple(k2[axes.index(a)] if a in axes else 1 for a in range(len(shape))))
    depth = tuple(np.add(passes_depth(passes, len(shape)), mask_depth(w.shape, (0,) * len(shape))))
    depth = tuple(tuple(int(v) for v in d) for d in depth)
    big = tuple(n + lo + hi for n, (lo, hi) in zip(shape, depth))
    a = rng.standard_normal(big).astype(np.float32)
    edges = np.linspace(-0.8, 0.8, 65).astype(np.float32)
    for where in itertools.product([(True, True), (False, False), (True, False), (False, True)], repeat=2):
        per_axis = [(True, True)] * len(shape)
        for ax, e in zip(axes, where):
            per_axis[ax] = e
        t_np = tile_of(np, a, depth, per_axis)
        t_cp = tile_of(cupy, a, depth, per_axis)
        args = (passes, mode, 0.3, w, mode2, -0.4, (0,) * len(shape))
        assert separable.pair_plan(t_cp, passes, mode, w, mode2, (0,) * len(shape), None, None) is not None
        poison_gpu_pool(a.nbytes * 6)
        out = cupy.full(t_cp.centre.shape, np.nan, dtype=np.float32)
        got = convolve.correlate_pair(t_cp, *args, out=out)
        assert got is out
        ref = unfused(convolve, t_cp, passes, mode, 0.3, w, mode2, -0.4)
        np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(ref))  # NaN anywhere fails too
        oracle = filters.backends.implementation("convolve", "correlate_pair", "numpy")(t_np, *args)
        assert_matches(got, oracle, scale=float(np.abs(oracle).max()))
        counts = convolve.correlate_pair(t_cp, *args, bins=(edges, True))
        np.testing.assert_array_equal(cupy.asnumpy(counts), cupy.asnumpy(histogram.counts(ref, edges, True)))
        assert int(counts.sum()) == int(((ref >= edges[0]) & (ref <= edges[-1])).sum())


def test_pair_falls_back_where_the_kernel_does_not_apply(cuda, rng):
    """float64, short passes, passes too long for the fused kernel, wrap, an origin, float64
    edges: the steps run, with the same results as the numpy oracle."""
    from distconv.backends.cuda import separable

    cupy, convolve, _ = cuda
    a = rng.standard_normal((60, 70))
    long_, short = passes_for((2.0, 2.0), (0, 1)), [(0, np.ones(3) / 3, 0), (1, np.ones(5) / 5, 0)]
    cases = [(a, long_, "reflect", STAR, "nearest", (0, 0)),
             (a.astype(np.float32), short, "reflect", STAR, "nearest", (0, 0)),
             (a.astype(np.float32), long_, "wrap", STAR, "nearest", (0, 0)),
             (a.astype(np.float32), long_, "reflect", STAR, "wrap", (0, 0)),
             (a.astype(np.float32), long_, "reflect", STAR, "nearest", (1, 0)),
             (a.astype(np.float32), passes_for((3.0, 1.0), (0, 1)), "reflect", STAR, "nearest", (0, 0))]
    numpy_pair = filters.backends.implementation("convolve", "correlate_pair", "numpy")
    for x, passes, mode, w, mode2, origin in cases:
        t = Tile.of(cupy.asarray(x))
        assert separable.pair_plan(t, passes, mode, w, mode2, origin, None, None) is None
        got = convolve.correlate_pair(t, passes, mode, 0.0, w, mode2, 0.0, origin)
        ref = numpy_pair(x, passes, mode, 0.0, w, mode2, 0.0, origin)
        assert_matches(got, ref, scale=float(np.abs(ref).max()))
    x = a.astype(np.float32)
    edges = np.linspace(-0.5, 0.5, 33)  # float64 edges: counted after the steps, by the histogram kernel
    t = Tile.of(cupy.asarray(x))
    assert separable.pair_plan(t, long_, "reflect", STAR, "nearest", (0, 0), None, (edges, True)) is None
    got = convolve.correlate_pair(t, long_, "reflect", 0.0, STAR, "nearest", 0.0, (0, 0), bins=(edges, True))
    ref = numpy_pair(x, long_, "reflect", 0.0, STAR, "nearest", 0.0, (0, 0), bins=(edges, True))
    assert np.abs(cupy.asnumpy(got) - ref).sum() <= 2  # float32 roundings at the edges, at most


@pytest.mark.parametrize("chunks", [(40, 50), (23, 17), (97, 101), (60, 101)])
@pytest.mark.parametrize("mode", ["reflect", "nearest", "constant", "mirror"])
def test_gaussian_laplace_histogram_fused_equals_unfused_on_cupy_chunks(cuda, rng, chunks, mode):
    """dask: gaussian -> laplace (-> histogram) fuse into one task and one kernel per chunk;
    the result and the counts equal the unfused graph's exactly, and scipy's closely."""
    cupy = cuda[0]
    x = rng.standard_normal((97, 101)).astype(np.float32)

    def run(fuse):
        with dask.config.set({filters.FUSE_KEY: fuse}):
            d = da.from_array(x, chunks=chunks).map_blocks(cupy.asarray)
            y = dc.laplace(dc.gaussian_filter(d, 2.0, mode=mode), mode=mode)
            h = dc.histogram(dc.laplace(dc.gaussian_filter(d, 2.0, mode=mode), mode=mode), bins=48, range=(-0.5, 0.5))[0]
        return [cupy.asnumpy(v) for v in dask.compute(y, h, scheduler="threads")]

    poison_gpu_pool(x.nbytes * 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (y, h), (y0, h0) = run(True), run(False)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(h, h0)
    ref = dc.laplace(dc.gaussian_filter(x, 2.0, mode=mode), mode=mode)
    assert_matches(y, ref, scale=float(np.abs(ref).max()))
    np.testing.assert_array_equal(h, np.histogram(y, bins=48, range=(-0.5, 0.5))[0])

