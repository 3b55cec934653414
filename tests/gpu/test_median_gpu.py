"""The median kernels of full boxes (kernels/rank.cu distconv_median3x3, distconv_median5x5,
distconv_median3x3x3) on a GPU: they equal scipy for every mode, dtype and origin over odd sizes
(several tiles, runs of planes), stacks of planes and halo tiles of dask chunks, mark NaN
windows themselves, and are the kernels that ran; what they do not take runs distconv_rank.
nan_policy='omit' on cupy blocks is numpy's nan-functions of every window. Outputs poisoned first. Their networks' numpy model: tests/test_median_model.py."""

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


# ---- nan_policy='omit': numpy's nan-functions on the GPU paths ----------------------------------

OMIT_CASES = [("median", None, 3), ("median", None, 5), ("median", None, (3, 3, 3)), ("median", None, 4),
              ("median", None, [[1, 0, 1], [0, 1, 1]]), ("percentile", 30, 3), ("percentile", 70, 4),
              ("percentile", 0, 5), ("percentile", 100, 3), ("rank", -2, 3), ("minimum", None, [[1, 1, 0], [0, 1, 1]]),
              ("maximum", None, 4)]


@pytest.mark.gpu
@pytest.mark.parametrize("op, arg, window", OMIT_CASES, ids=[f"{c[0]}{c[1] if c[1] is not None else ''}-{c[2]}"
                                                             for c in OMIT_CASES])
@pytest.mark.parametrize("mode, cval", [("reflect", 0.0), ("mirror", 0.0), ("nearest", 0.0), ("wrap", 0.0),
                                        ("constant", 1.5), ("constant", np.nan)])
def test_omit_on_the_gpu_is_numpys_nan_functions(gpu, rng, op, arg, window, mode, cval):
    """cupy blocks with NaN (the sort of each window's values on the device) and without (the
    median kernels or distconv_rank at numpy's two ranks, then the same blend): np.nanmedian,
    np.nanpercentile (linear), np.nanmin, the rank among non-NaN values, bit for bit."""
    from ..test_nan_quantiles import call, masked, oracle, window_values

    ndim = 3 if window == (3, 3, 3) else 2
    fp = np.asarray(window, bool) if isinstance(window, list) else np.ones(
        window if np.ndim(window) else (window,) * ndim, bool)
    kw = {"footprint": window} if isinstance(window, list) else {"size": window}
    shape = (9, 21, 34) if ndim == 3 else (67, 131)
    for dtype in (np.float32, np.float64):
        for frac in (0.0, 0.3):
            a = masked(rng, shape, frac, dtype, inf=frac > 0)
            got = host(gpu.run(lambda x: call(op, x, arg, mode=mode, cval=cval, **kw), a))
            ref = oracle(op, window_values(a, fp, mode, cval), arg)
            assert got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref, err_msg=f"{np.dtype(dtype)} NaN share {frac}")


@pytest.mark.gpu
def test_omit_over_dask_of_cupy_chunks_with_and_without_nan(gpu, rng, kernels):
    import cupy

    from ..test_nan_quantiles import masked, oracle, window_values

    a = masked(rng, (70, 97), 0.0, np.float32)
    a[3:12, 50:80][rng.random((9, 30)) < 0.5] = np.nan  # NaN in a few chunks only
    x = da.from_array(cupy.asarray(a), chunks=(35, 49))  # three chunks (halos too) without NaN
    for size in (3, 4):
        w = window_values(a, np.ones((size, size), bool), "reflect")
        poison_gpu_pool(a.nbytes * 8)
        np.testing.assert_array_equal(cupy.asnumpy(dc.median_filter(x, size, nan_policy="omit").compute()),
                                      oracle("median", w))
        np.testing.assert_array_equal(cupy.asnumpy(dc.percentile_filter(x, 30, size, nan_policy="omit").compute()),
                                      oracle("percentile", w, 30))
    assert "distconv_median3x3" in kernels  # the chunks without NaN: the median kernel at rank n // 2
