"""Convolution family on the CPU path: scipy.ndimage semantics for every chunking."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import distconv as dc

from .helpers import assert_matches

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


def random_chunks(rng, shape):
    return tuple(int(rng.integers(1, s + 1)) for s in shape)


@pytest.mark.parametrize("mode", MODES + ["grid-wrap", "grid-mirror", "grid-constant"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("op", ["correlate", "convolve"])
def test_nd_matches_scipy_any_chunking(backend, rng, mode, ndim, op):
    shape = tuple(int(s) for s in rng.integers(5, 23, ndim))
    a = rng.standard_normal(shape)
    for _ in range(3):
        w = rng.standard_normal(tuple(int(k) for k in rng.integers(1, 6, ndim)))  # odd and even
        origin = tuple(int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in w.shape)
        ref = getattr(ndi, op)(a, w, mode=mode, cval=0.75, origin=origin)
        got = backend.run(getattr(dc, op), a, weights=w, mode=mode, cval=0.75, origin=origin)
        assert isinstance(got, da.Array) == backend.lazy
        assert_matches(got, ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["correlate1d", "convolve1d"])
def test_1d_along_every_axis(backend, rng, mode, op):
    a = rng.standard_normal((13, 8, 11)).astype(np.float32)
    for axis in (0, 1, 2, -1):
        w = rng.standard_normal(int(rng.integers(1, 8)))
        origin = int(rng.integers(-(len(w) // 2), (len(w) - 1) // 2 + 1))
        ref = getattr(ndi, op)(a, w, axis=axis, mode=mode, origin=origin)
        got = backend.run(getattr(dc, op), a, weights=w, axis=axis, mode=mode, origin=origin)
        assert_matches(got, ref)


@pytest.mark.parametrize("mode", MODES)
def test_gaussian_matches_scipy(backend, rng, mode):
    a = rng.standard_normal((40, 33)).astype(np.float32)
    for sigma, order in [(2.0, 0), ((1.0, 3.0), (0, 1)), ((0.0, 1.5), 0), (0.7, 2)]:
        ref = ndi.gaussian_filter(a, sigma, order=order, mode=mode, cval=0.5)
        got = backend.run(dc.gaussian_filter, a, sigma=sigma, order=order, mode=mode, cval=0.5)
        assert_matches(got, ref)


def test_integer_and_bool_inputs_as_scipy(backend, rng):
    a = rng.integers(0, 255, (30, 31)).astype(np.uint8)
    w = rng.standard_normal((3, 3))
    assert_matches(backend.run(dc.correlate, a, weights=w), ndi.correlate(a, w))
    assert_matches(backend.run(dc.gaussian_filter, a, sigma=1.5), ndi.gaussian_filter(a, 1.5))
    b = rng.integers(-1000, 1000, (40,)).astype(np.int32)
    assert_matches(backend.run(dc.convolve1d, b, weights=[1, 2, 1]), ndi.convolve1d(b, [1, 2, 1]))


def test_nan_inf_propagate_as_scipy(rng):
    a = rng.standard_normal((20, 20))
    a[3, 4], a[10, 10], a[19, 0] = np.nan, np.inf, -np.inf
    w = rng.standard_normal((3, 3))
    for mode in MODES:
        ref = ndi.correlate(a, w, mode=mode)
        got = dc.correlate(da.from_array(a, chunks=(6, 7)), w, mode=mode).compute()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        fin = np.isfinite(ref)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-12, atol=1e-12)


def test_nan_in_mask_as_scipy(rng):
    a = rng.standard_normal((9, 9))
    w = np.ones((3, 3))
    w[1, 1], w[0, 0] = np.nan, 1e-17  # N-D: scipy drops taps with |w| <= eps, NaN included
    assert_matches(dc.correlate(da.from_array(a, chunks=5), w), ndi.correlate(a, w))
    w1 = np.array([1.0, np.nan, 2.0])  # 1-D: NaN propagates
    ref = ndi.correlate1d(a, w1)
    assert np.isnan(ref).all()
    assert_matches(dc.correlate1d(da.from_array(a, chunks=5), w1), ref)


def test_chunk_equal_to_depth_and_ragged_last(rng):
    a = rng.standard_normal((23, 17))
    w = rng.standard_normal((5, 5))
    for chunks in [((2,) * 11 + (1,), (17,)), ((20, 3), (2, 15)), ((5, 5, 5, 5, 3), (4, 4, 4, 4, 1))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = dc.correlate(da.from_array(a, chunks=chunks), w, mode="mirror")
        assert_matches(got, ndi.correlate(a, w, mode="mirror"))


def test_thin_chunks_warn_with_axis_and_new_size(rng):
    x = da.from_array(rng.standard_normal((20, 20)), chunks=(1, 20))
    with pytest.warns(UserWarning, match=r"axis 0: chunks too thin .* merged into"):
        dc.correlate(x, np.ones((5, 1)))
    with pytest.raises(ValueError, match="axis 0"):
        dc.correlate(x, np.ones((5, 1)), allow_rechunk=False)


def test_at_most_four_tasks_per_chunk(rng):
    x = da.random.random((64, 64, 64), chunks=16)  # 4 x 4 x 4 chunks, halos on every axis
    for y in (dc.correlate(x, np.ones((3, 3, 3))), dc.gaussian_filter(x, 1.0),
              dc.correlate1d(x, np.ones(5), axis=1)):
        own = [name for name in y.dask.layers if name.startswith("distconv-")]
        tasks = sum(len(y.dask.layers[n]) for n in own)
        assert tasks / x.npartitions == 1  # local scheduler: neighbours are views, no cut tasks
        assert all(n.startswith(("distconv-correlate", "distconv-gaussian")) for n in own)


def test_cut_tasks_only_across_workers(rng):
    """On a distributed cluster: neighbours on the same worker are views, others send small
    owning cuts; unknown placement (not persisted) cuts everything. Results equal scipy."""
    from distributed import Client, LocalCluster

    a = rng.standard_normal((64, 48))
    w = rng.standard_normal((5, 3))
    ref = ndi.correlate(a, w, mode="wrap")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        lazy = da.from_array(a, chunks=(16, 24))
        y = dc.correlate(lazy, w, mode="wrap")
        cuts = [n for n in y.dask.layers if "-halo-" in n]
        assert cuts and len(y.dask.layers[cuts[0]]) == lazy.npartitions  # placement unknown
        assert_matches(y.compute(), ref)
        workers = list(client.scheduler_info()["workers"])
        top = client.persist(da.from_array(a[:32], chunks=(8, 24)), workers=workers[:1])
        bottom = client.persist(da.from_array(a[32:], chunks=(8, 24)), workers=workers[1:])
        x = client.persist(da.concatenate([top, bottom]))
        from distributed import wait

        wait(x)
        y = dc.correlate(x, w, mode="reflect")
        cuts = [n for n in y.dask.layers if "-halo-" in n]
        per_chunk = sum(len(y.dask.layers[n]) for n in y.dask.layers if n.startswith("distconv-")) / x.npartitions
        assert cuts and per_chunk == 1 + 4 / 16  # only the 4 blocks at the worker boundary cut
        assert_matches(y.compute(), ndi.correlate(a, w, mode="reflect"))


def test_halo_pieces_are_owning_copies(rng):
    from distconv.graph.halo import _cut

    block = rng.standard_normal((100, 50))
    pieces = _cut(block, (((-1, 0), (slice(98, 100), slice(None))),))
    assert pieces[(-1, 0)].base is None and pieces[(-1, 0)].shape == (2, 50)


def test_lazy_and_same_result_for_every_chunking(rng):
    a = rng.standard_normal((30, 30)).astype(np.float32)
    w = rng.standard_normal((4, 3))
    results = []
    for chunks in [(30, 30), (10, 7), (3, 30), (16, 4)]:
        y = dc.correlate(da.from_array(a, chunks=chunks), w, mode="wrap")
        results.append(y.compute())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_xarray_keeps_dims_coords_attrs(rng):
    arr = xr.DataArray(rng.standard_normal((12, 10)), dims=("y", "x"),
                       coords={"y": np.arange(12), "x": np.linspace(0, 1, 10)},
                       attrs={"units": "K"}, name="t")
    with pytest.warns(UserWarning, match=r"axis 0: chunks too thin for a halo of \(4, 4\) merged into \(5, 7\)"):
        out = dc.gaussian_filter(arr.chunk({"y": 5}), 1.0)
    assert out.dims == arr.dims and out.attrs == arr.attrs and out.name == "t"
    np.testing.assert_array_equal(out.x, arr.x)
    assert_matches(out.data, ndi.gaussian_filter(arr.values, 1.0))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_chunking_invariance_property(data):
    shape = data.draw(st.tuples(st.integers(1, 12), st.integers(1, 12)))
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    k = data.draw(st.tuples(st.integers(1, 5), st.integers(1, 5)))
    mode = data.draw(st.sampled_from(MODES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, w = rng.standard_normal(shape), rng.standard_normal(k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dc.correlate(da.from_array(a, chunks=chunks), w, mode=mode).compute()
    np.testing.assert_allclose(got, ndi.correlate(a, w, mode=mode), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call, exc, match", [
    (lambda a: dc.correlate(a, np.ones((3, 3)), mode="bogus"), ValueError, "mode must be one of"),
    (lambda a: dc.correlate(a, np.ones(3)), ValueError, "weights must have the input's 2 dimensions"),
    (lambda a: dc.correlate(a, np.ones((0, 3))), ValueError, "weights must not be empty"),
    (lambda a: dc.correlate(a, np.ones((3, 3)), origin=2), ValueError, "origin=2"),
    (lambda a: dc.correlate(a.astype(np.float16), np.ones((3, 3))), TypeError, "x has dtype float16"),
    (lambda a: dc.correlate(a, np.ones((3, 3)), cval="x"), TypeError, "cval"),
    (lambda a: dc.correlate1d(a, [1, 2], axis=5), ValueError, "axis=5"),
    (lambda a: dc.gaussian_filter(a, -1.0), ValueError, "sigma"),
    (lambda a: dc.gaussian_filter(a, (1.0,)), ValueError, "sigma needs one value per axis"),
    (lambda a: dc.correlate(np.float64(1.0), np.ones(())), ValueError, "at least one dimension"),
])
def test_bad_input_is_refused_naming_the_argument(rng, call, exc, match):
    with pytest.raises(exc, match=match):
        call(rng.standard_normal((6, 6)))


def test_error_classes_match_scipy_and_keep_ours():
    import scipy.ndimage as ndi

    x = np.zeros((6, 7), np.float32)
    cases = [(lambda f: f(x, sigma=[1.0]), "gaussian_filter"),
             (lambda f: f(x, np.ones((3, 3)), origin=(0,)), "correlate"),
             (lambda f: f(x, np.ones((3, 3)), mode=["reflect", "wrap"]), "correlate"),
             (lambda f: f(x.astype(np.float16), np.ones((3, 3))), "correlate")]
    for call, name in cases:
        with pytest.raises(RuntimeError):
            call(getattr(ndi, name))
        with pytest.raises(RuntimeError):
            call(getattr(dc, name))
