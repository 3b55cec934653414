"""The scipy.ndimage filter family beyond correlate (uniform, sobel, prewitt, gaussian_laplace,
gaussian_gradient_magnitude, minimum/maximum/median/rank/percentile), per-axis modes, axes=,
output= and complex inputs: equal to scipy on every backend (numpy, dask with a random
chunking, cupy and dask-of-cupy where a GPU is present), every mode."""

import warnings

import numpy as np
import pytest
import scipy.ndimage as ndi

import distconv as dc
from distconv.core.checks import FilterArgumentError, OutputShapeError
from distconv.core.modes import ModeSequenceError

from .helpers import assert_matches, host

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


def run(backend, fn, a, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # thin random chunks merge with a warning
        return fn(backend.to(a), *args, **kw)


def data(rng, shape, dtype=np.float64):
    a = rng.standard_normal(shape) * 40
    return a.astype(dtype)


@pytest.mark.parametrize("mode", MODES)
def test_uniform_matches_scipy(backend, rng, mode):
    for dtype in (np.float64, np.float32, np.uint8, np.int16):
        a = data(rng, (23, 31), dtype) if dtype != np.uint8 else rng.integers(0, 255, (23, 31)).astype(np.uint8)
        for size, origin in [(3, 0), ((4, 5), (1, -2)), (1, 0), ((6, 1), (-3, 0))]:
            ref = ndi.uniform_filter(a, size, mode=mode, cval=2.0, origin=origin)
            assert_matches(run(backend, dc.uniform_filter, a, size, mode=mode, cval=2.0, origin=origin), ref)
        ref = ndi.uniform_filter1d(a, 5, axis=0, mode=mode, origin=1)
        assert_matches(run(backend, dc.uniform_filter1d, a, 5, axis=0, mode=mode, origin=1), ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["sobel", "prewitt"])
def test_sobel_prewitt_match_scipy(backend, rng, mode, name):
    for dtype in (np.float64, np.float32, np.int32):
        a = data(rng, (17, 12, 9), dtype)
        for axis in (0, 1, -1):
            ref = getattr(ndi, name)(a, axis=axis, mode=mode, cval=1.5)
            assert_matches(run(backend, getattr(dc, name), a, axis=axis, mode=mode, cval=1.5), ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["gaussian_laplace", "gaussian_gradient_magnitude"])
def test_gaussian_derivative_sums_match_scipy(backend, rng, mode, name):
    for dtype in (np.float64, np.float32):
        a = data(rng, (29, 26), dtype)
        for sigma in (1.0, (0.8, 2.0)):
            ref = getattr(ndi, name)(a, sigma, mode=mode, cval=0.5)
            assert_matches(run(backend, getattr(dc, name), a, sigma, mode=mode, cval=0.5), ref)
    a = data(rng, (14, 15, 16))
    ref = getattr(ndi, name)(a, 1.2, mode=["reflect", "nearest"], axes=(2, 0), truncate=3.0)
    got = run(backend, getattr(dc, name), a, 1.2, mode=["reflect", "nearest"], axes=(2, 0), truncate=3.0)
    assert_matches(got, ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["minimum_filter", "maximum_filter"])
def test_min_max_match_scipy(backend, rng, mode, name):
    f = getattr(dc, name)
    for dtype in (np.float64, np.float32, np.uint8, np.int64):
        a = data(rng, (19, 22), dtype)
        for size, origin in [(3, 0), ((2, 5), (0, 1)), ((7, 1), (-2, 0))]:
            ref = getattr(ndi, name)(a, size, mode=mode, cval=3.0, origin=origin)
            assert_matches(run(backend, f, a, size, mode=mode, cval=3.0, origin=origin), ref)
        fp = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 1]], bool)
        ref = getattr(ndi, name)(a, footprint=fp, mode=mode, cval=-2.0, origin=(1, 0))
        assert_matches(run(backend, f, a, footprint=fp, mode=mode, cval=-2.0, origin=(1, 0)), ref)
    a = data(rng, (9, 31))
    one = name.replace("filter", "filter1d")
    ref = getattr(ndi, one)(a, 4, axis=1, mode=mode, origin=-1)
    assert_matches(run(backend, getattr(dc, one), a, 4, axis=1, mode=mode, origin=-1), ref)


@pytest.mark.parametrize("mode", MODES)
def test_median_rank_percentile_match_scipy(backend, rng, mode):
    for dtype in (np.float32, np.float64, np.int16, np.uint64):
        # (integers within float64's exact range: scipy selects in float64)
        a = np.abs(data(rng, (21, 18))).astype(dtype)
        for size in (3, (4, 5), (1, 6)):
            ref = ndi.median_filter(a, size, mode=mode, cval=7.0)
            assert_matches(run(backend, dc.median_filter, a, size, mode=mode, cval=7.0), ref)
        fp = rng.random((4, 5)) > 0.4
        fp[0, 0] = True
        for r in (1, -2, int(fp.sum()) // 2):
            ref = ndi.rank_filter(a, r, footprint=fp, mode=mode, cval=1.0, origin=(-1, 1))
            got = run(backend, dc.rank_filter, a, r, footprint=fp, mode=mode, cval=1.0, origin=(-1, 1))
            assert_matches(got, ref)
        ref = ndi.percentile_filter(a, 30, size=(3, 3), mode=mode)
        assert_matches(run(backend, dc.percentile_filter, a, 30, size=(3, 3), mode=mode), ref)


def test_rank_3d_and_large_footprints(backend, rng):
    a = data(rng, (11, 13, 15), np.float32)
    for size in ((3, 3, 3), (5, 1, 5), (1, 1, 40)):
        assert_matches(run(backend, dc.median_filter, a, size), ndi.median_filter(a, size))
    b = data(rng, (40, 41), np.float64)
    # a 15 x 15 median keeps 113 values per thread: beyond the kernel, cupyx runs it
    assert_matches(run(backend, dc.median_filter, b, 15), ndi.median_filter(b, 15))
    assert_matches(run(backend, dc.minimum_filter, b, (40, 1)), ndi.minimum_filter(b, (40, 1)))


def test_per_axis_modes_and_axes(backend, rng):
    a = data(rng, (15, 14, 13), np.float32)
    modes = ["wrap", "constant", "mirror"]
    for f, args in [("gaussian_filter", (1.3,)), ("uniform_filter", (3,)), ("minimum_filter", (3,)),
                    ("maximum_filter", (4,))]:
        ref = getattr(ndi, f)(a, *args, mode=modes, cval=2.0)
        assert_matches(run(backend, getattr(dc, f), a, *args, mode=modes, cval=2.0), ref)
        ref = getattr(ndi, f)(a, *args, mode=["nearest", "reflect"], axes=(2, 0))
        assert_matches(run(backend, getattr(dc, f), a, *args, mode=["nearest", "reflect"], axes=(2, 0)), ref)
    for f in ("sobel", "prewitt"):
        ref = getattr(ndi, f)(a, axis=1, mode=modes)
        assert_matches(run(backend, getattr(dc, f), a, axis=1, mode=modes), ref)
    w = rng.standard_normal((3, 4))
    for f in ("correlate", "convolve"):
        ref = getattr(ndi, f)(a, w, mode="nearest", axes=(0, 2), origin=(1, -1))
        assert_matches(run(backend, getattr(dc, f), a, w, mode="nearest", axes=(0, 2), origin=(1, -1)), ref)
    ref = ndi.gaussian_filter(a, (1.0, 2.0), order=(1, 0), axes=(2, 1))
    assert_matches(run(backend, dc.gaussian_filter, a, (1.0, 2.0), order=(1, 0), axes=(2, 1)), ref)
    ref = ndi.median_filter(a, (3, 4), axes=(1, 2))
    assert_matches(run(backend, dc.median_filter, a, (3, 4), axes=(1, 2)), ref)


def test_output_dtype_and_array(backend, rng):
    a = rng.integers(0, 255, (20, 23)).astype(np.uint8)
    for f, args in [("correlate", (np.ones((3, 3)) / 7,)), ("gaussian_filter", (1.5,)),
                    ("uniform_filter", (4,)), ("sobel", ()), ("median_filter", (3,)),
                    ("gaussian_laplace", (1.0,))]:
        for out in (np.float32, np.float64, np.int16):
            ref = getattr(ndi, f)(a, *args, output=out)
            got = run(backend, getattr(dc, f), a, *args, output=out)
            if backend.gpu and np.dtype(out).kind == "i" and f in ("correlate", "gaussian_filter", "gaussian_laplace"):
                # a sum that is exactly an integer in real numbers truncates to it or one below,
                # by the order of the float additions (the GPU's differs from scipy's)
                np.testing.assert_array_less(np.abs(host(got).astype(int) - ref.astype(int)), 2)
                continue
            assert_matches(got, ref)
    if backend.name in ("numpy", "cupy"):
        x = backend.to(a.astype(np.float32))
        out = backend.to(np.full(a.shape, np.nan, np.float32))
        got = dc.uniform_filter(x, 3, output=out)
        assert got is out
        assert_matches(out, ndi.uniform_filter(a.astype(np.float32), 3))
        with pytest.raises(OutputShapeError, match="output has shape"):
            dc.uniform_filter(x, 3, output=out[:3])


@pytest.mark.parametrize("mode", ["constant", "reflect", "wrap"])
def test_complex_inputs_and_masks(backend, rng, mode):
    a = (rng.standard_normal((17, 19)) + 1j * rng.standard_normal((17, 19))).astype(np.complex64)
    w = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    c = 0.5 - 0.25j
    for f in ("correlate", "convolve"):
        for x, wt in [(a, w), (a, w.real), (a.real.copy(), w)]:
            cv = c if x.dtype.kind == "c" else 0.5
            ref = getattr(ndi, f)(x, wt, mode=mode, cval=cv)
            got = run(backend, getattr(dc, f), x, wt, mode=mode, cval=cv)
            assert_matches(got.real if hasattr(got, "real") else got, ref.real, dtype=ref.real.dtype)
            assert_matches(got.imag, ref.imag, dtype=ref.real.dtype)
            assert np.dtype(got.dtype) == ref.dtype
    w1 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    for f, args in [("correlate1d", (w1,)), ("convolve1d", (w1,)), ("gaussian_filter", (1.2,)),
                    ("uniform_filter", (3,)), ("gaussian_filter1d", (2.0,)), ("uniform_filter1d", (4,))]:
        ref = getattr(ndi, f)(a, *args, mode=mode, cval=c)
        got = run(backend, getattr(dc, f), a, *args, mode=mode, cval=c)
        assert_matches(got.real, ref.real, dtype=np.float32)
        assert_matches(got.imag, ref.imag, dtype=np.float32)


def test_errors_name_the_argument_as_scipy_does(rng):
    a = rng.standard_normal((8, 9))
    with pytest.raises(RuntimeError):  # scipy: RuntimeError; distconv's also a ValueError
        dc.median_filter(a)
    with pytest.raises(FilterArgumentError, match="rank 12 is outside"):
        dc.rank_filter(a, 12, size=3)
    with pytest.raises(RuntimeError, match="one mode"):
        dc.median_filter(a, 3, mode=["reflect", "wrap"])
    with pytest.raises(ModeSequenceError, match="one entry per filtered axis"):
        dc.gaussian_filter(a, 1.0, mode=["reflect"])
    with pytest.raises(ValueError, match="repeats an axis"):
        dc.uniform_filter(a, 3, axes=(1, -1))
    with pytest.raises(TypeError, match="not supported"):
        dc.median_filter(a.astype(np.complex64), 3)
    with pytest.raises(ValueError, match="complex only for a complex input"):
        dc.correlate(a, np.ones((2, 2)) * 1j, cval=1j)
    with pytest.warns(UserWarning, match="size is ignored"):
        dc.minimum_filter(a, 3, footprint=np.ones((2, 2)))
    with pytest.raises(TypeError, match="truncate and radius"):
        dc.gaussian_laplace(a, 1.0, sigmaa=2)


def test_integer_cval_outside_the_dtype_picks_as_scipy(backend, rng):
    """scipy's separable min/max compare a double cval and wrap the pick into the dtype; its
    rank filters (median, min/max over a footprint) wrap cval first: every path must agree."""
    a = rng.integers(0, 200, (9, 11)).astype(np.uint8)
    fp = np.array([[1, 1], [0, 1]], bool)
    for cval in (-2.0, 300.0, 2.7):
        for f, kw in [("minimum_filter", {"size": 3}), ("maximum_filter", {"size": 3}),
                      ("minimum_filter", {"footprint": fp}), ("maximum_filter", {"footprint": fp}),
                      ("median_filter", {"size": 3}), ("rank_filter", {"rank": 2, "footprint": fp})]:
            ref = getattr(ndi, f)(a, mode="constant", cval=cval, **kw)
            assert_matches(run(backend, getattr(dc, f), a, mode="constant", cval=cval, **kw), ref)


@pytest.mark.parametrize("dtype, output, cval", [(np.int32, np.float32, 1.5), (np.int16, np.float64, -2.25),
                                                 (np.float32, np.float64, 0.1), (np.uint8, np.float32, 300.0)])
@pytest.mark.parametrize("op, kw", [("minimum_filter", {"size": (1, 2)}), ("maximum_filter", {"size": (3, 2)}),
                                    ("median_filter", {"size": (3, 3)}), ("rank_filter", {"rank": 1, "size": 3}),
                                    ("percentile_filter", {"percentile": 80, "size": (2, 3)}),
                                    ("minimum_filter", {"footprint": [[1, 0], [1, 1]]})])
def test_rank_filters_pick_a_cval_the_input_cannot_hold_as_scipy_does(backend, rng, dtype, output, cval, op, kw):
    """scipy picks in double precision and casts what it picked to ``output``: a constant
    edge's cval that the input's dtype cannot hold reaches the output as it is."""
    a = (rng.integers(0, 100, (9, 11)) if np.dtype(dtype).kind in "iu" else rng.standard_normal((9, 11))).astype(dtype)
    got = backend.run(getattr(dc, op), a, mode="constant", cval=cval, output=output, **kw)
    want = getattr(ndi, op)(a, mode="constant", cval=cval, output=output, **kw)
    got = host(got)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
