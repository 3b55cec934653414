"""Histograms against numpy: edges, closed last bin, out-of-range, NaN/Inf, weights, density."""

import dask.array as da
import numpy as np
import pytest

import distconv as dc

from .helpers import assert_matches, count_calls, host


def chunked(rng, a):
    return da.from_array(a, chunks=tuple(int(rng.integers(1, s + 1)) for s in a.shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.int32, np.int64])
def test_histogram_matches_numpy(backend, rng, dtype):
    a = (rng.standard_normal((37, 29)) * 40).astype(dtype)
    for bins, rng_ in [(10, None), (1, None), (64, (-30, 50)), (7, (0, 0)), (np.array([-50, -3, 0, 0.5, 9, 80]), None)]:
        ref_h, ref_e = np.histogram(a, bins=bins, range=rng_)
        h, e = backend.run(dc.histogram, a, bins=bins, range=rng_)
        np.testing.assert_array_equal(host(e), ref_e)
        assert e.dtype == ref_e.dtype
        assert_matches(h, ref_h)


def test_values_on_edges_and_closed_last_bin(rng):
    edges = np.array([0.0, 1.0, 2.0, 3.0])
    a = np.array([0.0, 1.0, 1.0, 2.0, 3.0, 3.0, -1e-9, 3.0000001, np.nan, np.inf, -np.inf])
    h, _ = dc.histogram(da.from_array(a, chunks=3), bins=edges)
    assert_matches(h, np.histogram(a, bins=edges)[0])
    u = rng.integers(0, 256, 5000).astype(np.uint8)
    assert_matches(dc.histogram(chunked(rng, u), bins=256, range=(0, 256))[0], np.histogram(u, 256, (0, 256))[0])


def test_weights_and_density(rng):
    a = rng.standard_normal(500)
    w = rng.random(500).astype(np.float32)
    ref, _ = np.histogram(a, bins=12, weights=w)
    with pytest.warns(UserWarning, match="histogram without range computes"):
        h, _ = dc.histogram(chunked(rng, a), bins=12, weights=w)
    assert h.dtype == ref.dtype
    np.testing.assert_allclose(h.compute(), ref, rtol=1e-5)
    refd, _ = np.histogram(a, bins=12, density=True)
    with pytest.warns(UserWarning, match="histogram without range computes"):
        hd = dc.histogram(chunked(rng, a), bins=12, density=True)[0]
    np.testing.assert_allclose(hd.compute(), refd, rtol=1e-12)


def test_counts_identical_across_runs_and_chunkings(rng):
    a = rng.standard_normal(3000)
    runs = [dc.histogram(chunked(rng, a), bins=33, range=(-2, 2))[0].compute() for _ in range(4)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


def test_bincount_and_histogram2d(backend, rng):
    b = rng.integers(0, 40, 700)
    assert_matches(backend.run(dc.bincount, b), np.bincount(b))
    assert_matches(backend.run(dc.bincount, b, minlength=60), np.bincount(b, minlength=60))
    w = rng.random(700)
    np.testing.assert_allclose(host(backend.run(dc.bincount, b, w)), np.bincount(b, weights=w))
    x, y = rng.standard_normal(700), rng.standard_normal(700) * 3
    for bins in (10, (4, 9), [np.array([-3, 0, 1, 4.0]), np.linspace(-5, 5, 6)]):
        ref = np.histogram2d(x, y, bins=bins)
        got = backend.run(dc.histogram2d, x, y, bins=bins)  # x and y chunked differently
        assert_matches(got[0], ref[0])
        np.testing.assert_array_equal(host(got[1]), ref[1])
        np.testing.assert_array_equal(host(got[2]), ref[2])
    ref = np.histogram2d(x, y, bins=5, weights=w, density=True)[0]
    np.testing.assert_allclose(dc.histogram2d(x, y, bins=5, weights=w, density=True)[0], ref, rtol=1e-12)


def test_merge_is_a_tree(rng):
    x = da.random.random(10_000, chunks=100)
    h, _ = dc.histogram(x, bins=8, range=(0, 1))
    assert any(n.startswith("distconv-hist-merge") for n in h.dask.layers)
    assert h.compute().sum() == 10_000


@pytest.mark.parametrize("call, exc, match", [
    (lambda a: dc.histogram(a, bins=0), ValueError, "positive integer"),
    (lambda a: dc.histogram(a, bins=-3), ValueError, "positive integer"),
    (lambda a: dc.histogram(a, bins=[1, 0, 2]), ValueError, "monotonically"),
    (lambda a: dc.histogram(a, range=(2, 1)), ValueError, "max must be larger than min"),
    (lambda a: dc.histogram(a, range=(0, np.nan)), ValueError, "not finite"),
    (lambda a: dc.histogram(a, weights=np.ones(3)), ValueError, "weights must have the shape"),
    (lambda a: dc.histogram(np.array([np.nan, np.nan])), ValueError, "range=None.*no value but NaN.*pass range="),
    (lambda a: dc.histogram(np.array([np.nan, np.inf, -np.inf])), ValueError,
     r"autodetected range of \[-inf, inf\] is not finite: range=None .*pass a finite range=\(lo, hi\)"),
    (lambda a: dc.bincount(np.array([1, -1])), ValueError, "negative"),
    (lambda a: dc.bincount(a), TypeError, "integers"),
])
def test_bad_input(rng, call, exc, match):
    with pytest.raises(exc, match=match):
        call(rng.standard_normal(10))


def test_numpy_parity_weights_dtype_empty_bincount_and_range_precision():
    a = np.arange(10)
    for w in (np.ones(10, int), np.ones(10, np.uint8), np.ones(10, bool), np.ones(10, np.float32)):
        got, ref = dc.histogram(a, weights=w)[0], np.histogram(a, weights=w)[0]
        assert got.dtype == ref.dtype and np.array_equal(got, ref)
    for kw in ({}, {"minlength": 3}):
        got, ref = dc.bincount([], **kw), np.bincount([], **kw)
        assert got.dtype == ref.dtype and np.array_equal(got, ref)
    x, r = np.array([1.0], np.float32), [1 + np.finfo(np.float64).eps, 2.0]
    (h, e), (hr, er) = dc.histogram(x, range=r), np.histogram(x, range=r)
    assert e.dtype == er.dtype and np.array_equal(h, hr)


def test_histogram_without_range_says_it_computes_now(rng):
    import warnings

    import dask.array as da

    x = da.from_array(rng.standard_normal((40, 30)), chunks=(10, 30))
    with pytest.warns(UserWarning, match="computes the min and max of the data now"):
        dc.histogram(x, bins=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dc.histogram(x, bins=8, range=(-1, 1))  # lazy: nothing to say
        dc.histogram(x.compute(), bins=8)       # numpy: nothing deferred to lose


def test_histogram_without_range_on_nan_masked_data(rng, tmp_path):
    """NaN over land stays out of the autodetected range on every face: the range is the other
    values' min and max, the counts numpy's over those values; nothing but NaN is an error
    naming range."""
    import warnings

    import xarray as xr

    a = rng.standard_normal((40, 30)).astype(np.float32)
    a[:, :8] = np.nan  # land
    ref_h, ref_e = np.histogram(a[np.isfinite(a)], bins=64)
    h, e = dc.histogram(a, bins=64)
    np.testing.assert_array_equal(h, ref_h) and np.testing.assert_array_equal(e, ref_e)
    x = da.from_array(a, chunks=(16, 10))
    with pytest.warns(UserWarning, match="min and max of the data now .*NaN is left out"):
        h, e = dc.histogram(x, bins=64)
    np.testing.assert_array_equal(h.compute(), ref_h) and np.testing.assert_array_equal(e, ref_e)
    t = xr.DataArray(x, dims=("lat", "lon"), name="temperature")
    with pytest.warns(UserWarning, match="min and max of the data now"):
        np.testing.assert_array_equal(t.distconv.histogram(bins=64).values, ref_h)
    with pytest.warns(UserWarning, match="min and max of the data now"):
        np.testing.assert_array_equal(t.distconv.histogram(bins=64, dims=["lon"]).values.sum(axis=0), ref_h)
    for nothing in (np.full((4, 4), np.nan), da.from_array(np.array([np.nan, np.nan]), chunks=1)):
        with pytest.raises(ValueError, match=r"range=None .*no value but NaN.*pass range=\(lo, hi\)"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the dask one says it computes first
                dc.histogram(nothing, bins=8)


def test_workflow_histogram_without_range_on_nan_masked_data(tmp_path):
    """outputs.histogram with no range over a result with NaN: the finite values' range."""
    import json

    import yaml
    import zarr

    from distconv import batch

    a = np.random.default_rng(1).standard_normal((32, 24)).astype(np.float32)
    a[:, :5] = np.nan
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=a.shape, chunks=(16, 24), dtype=a.dtype)
    z[:] = a
    doc = {"input": {"path": "in.zarr"}, "steps": [{"op": "correlate", "weights": [[1.0]]}],
           "outputs": {"path": "out.zarr", "histogram": {"bins": 16, "json": "h.json"}}}
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc))
    batch.run(batch.load(tmp_path / "wf.yaml"), progress=False)
    got = json.loads((tmp_path / "h.json").read_text())
    ref_h, ref_e = np.histogram(a[np.isfinite(a)], bins=16)
    assert got["counts"] == ref_h.tolist()
    np.testing.assert_allclose(got["edges"], ref_e, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_range_none_over_inf_raises_as_numpy_on_every_face(backend, rng, monkeypatch, dtype):
    """numpy.histogram refuses an autodetected range that is not finite: so does every face,
    before a value is binned, naming range=None; NaN alone stays missing data."""
    import warnings

    import xarray as xr

    from distconv import backends

    binned = count_calls(monkeypatch, backends, "counts")  # either backend's
    for inf in (np.inf, -np.inf):
        a = rng.standard_normal((23, 31)).astype(dtype)
        a[:, :4] = np.nan
        a[7, 9] = inf
        with pytest.raises(ValueError, match="is not finite"):
            np.histogram(a[~np.isnan(a)], bins=8)
        match = r"autodetected range of \[.*\] is not finite: range=None .*pass a finite range=\(lo, hi\)"
        with pytest.raises(ValueError, match=match):
            backend.run(dc.histogram, a, bins=8)
        with pytest.raises(ValueError, match=match):
            backend.run(lambda x, v: dc.histogram(x, bins=8, weights=v), a, np.ones(a.shape))
        with pytest.raises(ValueError, match=match):
            backend.run(dc.histogram2d, np.arange(a.size, dtype=dtype), a.ravel(), bins=4)
        t = xr.DataArray(backend.to(a), dims=("lat", "lon"))
        for dims in (None, ["lon"]):
            with pytest.raises(ValueError, match=match), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a dask input says it computes first
                t.distconv.histogram(bins=8, dims=dims)
    assert not binned, "values were binned before the range was refused"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_finite_range_drops_inf_as_numpy_does(backend, rng, dtype):
    """With a finite range, +inf and -inf lie outside it and are dropped (numpy's counts), on
    every backend, weighted, per slice and in two dims."""
    import xarray as xr

    a = rng.standard_normal((23, 31)).astype(dtype)
    a[rng.random(a.shape) < 0.1] = np.inf
    a[rng.random(a.shape) < 0.1] = -np.inf
    a[rng.random(a.shape) < 0.1] = np.nan
    for bins, rng_ in ((8, (-1.5, 2.0)), ([-2.0, -0.5, 0.0, 0.25, 3.0], None)):
        ref_h, ref_e = np.histogram(a, bins=bins, range=rng_)
        h, e = backend.run(dc.histogram, a, bins=bins, range=rng_)
        assert_matches(h, ref_h)
        np.testing.assert_array_equal(host(e), ref_e)
        w = rng.random(a.shape)
        assert_matches(backend.run(lambda x, v: dc.histogram(x, bins=bins, range=rng_, weights=v)[0], a, w),
                       np.histogram(a, bins=bins, range=rng_, weights=w)[0])
    t = xr.DataArray(backend.to(a), dims=("lat", "lon"))
    per_row = np.stack([np.histogram(r, bins=8, range=(-1.5, 2.0))[0] for r in a])
    np.testing.assert_array_equal(host(t.distconv.histogram(bins=8, range=(-1.5, 2.0), dims=["lon"]).data), per_row)
    x = np.arange(a.size, dtype=dtype)
    H = backend.run(dc.histogram2d, x, a.ravel(), bins=4, range=[[0, a.size], [-1, 1]])[0]
    np.testing.assert_array_equal(host(H), np.histogram2d(x, a.ravel(), bins=4, range=[[0, a.size], [-1, 1]])[0])


def test_workflow_histogram_without_range_over_inf_is_the_users_error(tmp_path):
    """outputs.histogram with no range over a result holding inf: an error naming
    outputs.histogram.range (not an internal one); with a range, numpy's counts."""
    import json

    import yaml
    import zarr

    from distconv import batch

    a = np.random.default_rng(2).standard_normal((32, 24)).astype(np.float32)
    a[:, :5] = np.nan
    a[4, 9] = np.inf
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=a.shape, chunks=(16, 24), dtype=a.dtype)
    z[:] = a
    doc = {"input": {"path": "in.zarr"}, "steps": [{"op": "correlate", "weights": [[1.0]]}],
           "outputs": {"path": "out.zarr", "histogram": {"bins": 16, "json": "h.json"}}}
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(batch.WorkflowError, match=r"outputs.histogram: autodetected range .* not finite.*"
                                                  r"outputs.histogram.range"):
        batch.run(batch.load(tmp_path / "wf.yaml"), progress=False)
    doc["outputs"] = {"path": "out2.zarr", "histogram": {"bins": 16, "range": [-2, 2], "json": "h2.json"}}
    (tmp_path / "wf2.yaml").write_text(yaml.safe_dump(doc))
    batch.run(batch.load(tmp_path / "wf2.yaml"), progress=False)
    got = json.loads((tmp_path / "h2.json").read_text())
    assert got["counts"] == np.histogram(a, bins=16, range=(-2, 2))[0].tolist()


def test_xarray_weights_of_a_dim_the_data_lack_or_covering_part_of_one_are_refused_by_name():
    import xarray as xr

    obj = xr.DataArray(np.arange(24.0).reshape(4, 6), dims=("lat", "lon"), coords={"lat": [0, 1, 2, 3]})
    with pytest.raises(ValueError, match=r"weights has dims \('latitude',\) that the data lack; the data's dims "
                                         r"are \('lat', 'lon'\)"):
        obj.distconv.histogram(bins=3, weights=xr.DataArray(np.ones(4), dims=("latitude",)))
    part = xr.DataArray(np.ones(2), dims=("lat",), coords={"lat": [0, 1]})
    with pytest.raises(ValueError, match="weights cover only part of dim 'lat': 2 of its 4 values"):
        obj.distconv.histogram(bins=3, weights=part)
    with pytest.raises(ValueError, match="weights cover only part of dim 'lat'"):
        obj.chunk({"lat": 2}).distconv.histogram(bins=3, range=(0, 24), weights=part)
    with pytest.raises(ValueError, match="weights has 5 values along dim 'lon', the data 6"):
        obj.distconv.histogram(bins=3, weights=xr.DataArray(np.ones(5), dims=("lon",)))
    w = xr.DataArray(np.arange(1.0, 5.0), dims=("lat",), coords={"lat": [0, 1, 2, 3]})
    got = obj.distconv.histogram(bins=3, range=(0, 24), weights=w).values
    ref = np.histogram(obj.values, bins=3, range=(0, 24), weights=np.broadcast_to(w.values[:, None], (4, 6)))[0]
    np.testing.assert_allclose(got, ref)
