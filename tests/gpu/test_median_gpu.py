"""The median kernels of full boxes (kernels/rank.cu distconv_median3x3, distconv_median5x5,
distconv_median3x3x3) on a GPU: they equal scipy for every mode, dtype and origin over odd sizes
(several tiles, runs of planes), stacks of planes and halo tiles of dask chunks, mark NaN
windows themselves, and are the kernels that ran; what they do not take runs distconv_rank.
Outputs poisoned first. Their networks' numpy model: tests/test_median_model.py."""

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc

from ..helpers import host, poison_gpu_pool
from ..test_median_model import MODES, _nan_rule, _ties

# ---- the kernels on a GPU -----------------------------------------------------------------------

KERNEL_CASES = [("distconv_median3x3", (131, 203), 3, (0, (1, -1))),
                ("distconv_median5x5", (131, 203), 5, (0, (-2, 1))),
                ("distconv_median3x3x3", (37, 45, 71), 3, (0, (1, 0, -1)))]


@pytest.fixture
def kernels(monkeypatch):
    """The median kernels launched during a test, by name."""
    from distconv.backends.cuda import rank

    seen, real = [], rank._launch_median
    monkeypatch.setattr(rank, "_launch_median", lambda kernel, *a, **k: (seen.append(kernel), real(kernel, *a, **k))[1])
    return seen


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kernel, shape, size, origins", KERNEL_CASES, ids=[c[0] for c in KERNEL_CASES])
def test_median_kernels_equal_scipy(gpu, rng, kernels, mode, kernel, shape, size, origins):
    n = 0
    for dtype in (np.float32, np.float64, np.int32, np.uint8, np.int64, np.uint16):
        a = _ties(rng, shape, dtype)
        for origin in origins:
            got = host(gpu.run(dc.median_filter, a, size=size, mode=mode, cval=7.0, origin=origin))
            np.testing.assert_array_equal(got, ndi.median_filter(a, size, mode=mode, cval=7.0, origin=origin),
                                          err_msg=f"{np.dtype(dtype)} origin {origin}")
            n += 1
    assert kernels == [kernel] * n


@pytest.mark.gpu
def test_median_kernels_over_stacks_of_planes_and_dask_chunks(gpu, rng, kernels):
    import cupy

    a = _ties(rng, (5, 70, 97), np.float32)
    for size, kernel in (((1, 3, 3), "distconv_median3x3"), ((1, 5, 5), "distconv_median5x5"),
                         (3, "distconv_median3x3x3")):
        kernels.clear()
        np.testing.assert_array_equal(host(gpu.run(dc.median_filter, a, size=size, mode="mirror")),
                                      ndi.median_filter(a, size, mode="mirror"))
        assert kernels == [kernel]
        kernels.clear()
        poison_gpu_pool(a.nbytes * 8)
        x = da.from_array(cupy.asarray(a), chunks=(3, 37, 41))  # halo tiles: pieces of neighbours
        np.testing.assert_array_equal(cupy.asnumpy(dc.median_filter(x, size, mode="wrap").compute()),
                                      ndi.median_filter(a, size, mode="wrap"))
        assert len(kernels) > 1 and set(kernels) == {kernel}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_median_kernels_mark_windows_holding_nan(gpu, rng, kernels, monkeypatch, dtype):
    import cupy

    from distconv.backends.cuda import rank

    for shape, size in ((67, 131), 3), ((67, 131), 5), ((19, 35, 70), 3):
        a = rng.standard_normal(shape).astype(dtype)
        a[rng.random(shape) < 0.01] = np.nan
        a.flat[rng.integers(0, a.size, 4)] = [np.inf, -np.inf, np.inf, -np.inf]
        for mode in ("reflect", "constant"):
            np.testing.assert_array_equal(host(gpu.run(dc.median_filter, a, size=size, mode=mode)), _nan_rule(a, size, mode))
    # asked to propagate NaN, the kernels mark the windows themselves (no window pass after them)
    monkeypatch.setattr(rank, "_propagated", lambda *a, **k: pytest.fail("a window pass ran"))
    for shape, size in ((67, 131), 5), ((19, 35, 70), 3):
        a = rng.standard_normal(shape).astype(dtype)
        a[rng.random(shape) < 0.01] = np.nan
        poison_gpu_pool(a.nbytes * 8)
        got = rank.rank(cupy.asarray(a), np.ones((size,) * a.ndim, bool), size ** a.ndim // 2, "nearest", 0.0,
                        (0,) * a.ndim, nan_propagate=True)
        np.testing.assert_array_equal(cupy.asnumpy(got), _nan_rule(a, size, "nearest"))


@pytest.mark.gpu
def test_what_the_median_kernels_do_not_take_runs_distconv_rank(gpu, rng, kernels):
    a = _ties(rng, (40, 77), np.float32)
    cross = np.array([[0, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 0], [0, 0, 1, 0, 0]], bool)
    np.testing.assert_array_equal(host(gpu.run(dc.median_filter, a, footprint=cross)),
                                  ndi.median_filter(a, footprint=cross))
    np.testing.assert_array_equal(host(gpu.run(dc.rank_filter, a, rank=10, size=5)), ndi.rank_filter(a, 10, 5))
    row = a[:1]  # one row: distconv_rank's lines
    np.testing.assert_array_equal(host(gpu.run(dc.median_filter, row, size=5)), ndi.median_filter(row, 5))
    assert not kernels
