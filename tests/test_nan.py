"""One NaN rule on every backend and chunking, nan_policy, and the xarray face with the data
climate users have: NaN land masks, time coordinates in any unit or calendar, weights, dtypes."""

import contextlib
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import distconv as dc

from .helpers import assert_matches, chunking_case, host

PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


def windows(a, size, mode="reflect", cval=0.0):
    """Every size x size window of ``a`` under scipy's ``mode``, flattened: (..., size**2)."""
    r = size // 2
    extra = {"constant_values": cval} if mode == "constant" else {}
    p = np.pad(a, r, mode=PAD[mode], **extra)
    return sliding_window_view(p, (size,) * a.ndim).reshape(a.shape + (-1,))


def masked(rng, shape, frac=0.3, dtype=np.float64, inf=True):
    a = rng.standard_normal(shape).astype(dtype)
    a[rng.random(shape) < frac] = np.nan
    if inf:
        a.flat[rng.integers(0, a.size, 3)] = [np.inf, -np.inf, np.inf]
    return a


# ---- the rule: numpy's, on the numpy path -------------------------------------------------------

RULES = {  # op -> (distconv call, numpy reference over a window's values)
    "minimum": (lambda a, p, m: dc.minimum_filter(a, 3, mode=m, nan_policy=p), (np.min, np.nanmin)),
    "maximum": (lambda a, p, m: dc.maximum_filter(a, 3, mode=m, nan_policy=p), (np.max, np.nanmax)),
    "median": (lambda a, p, m: dc.median_filter(a, 3, mode=m, nan_policy=p),
               (lambda w, axis: np.sort(w, axis=axis)[..., w.shape[-1] // 2], np.nanmedian)),
    "percentile": (lambda a, p, m: dc.percentile_filter(a, 30, 3, mode=m, nan_policy=p),
                   (lambda w, axis: np.sort(w, axis=axis)[..., 2], lambda w, axis: np.nanpercentile(w, 30.0, axis=axis))),
}


@pytest.mark.parametrize("op", list(RULES))
@pytest.mark.parametrize("mode", ["reflect", "constant", "nearest", "mirror", "wrap"])
@pytest.mark.parametrize("policy", ["propagate", "omit"])
def test_rank_filters_follow_numpys_nan_rule(rng, op, mode, policy):
    a = masked(rng, (17, 23))
    call, (propagate, omit) = RULES[op]
    got = call(a, policy, mode)
    w = windows(a, 3, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows
        if policy == "propagate":  # scipy's pick where a window holds no NaN
            ref = np.where(np.isnan(w).any(axis=-1), np.nan, propagate(w, axis=-1))
        else:  # numpy's nan-functions: an even count's median is the mean of the middle two
            ref = omit(w, axis=-1)
    np.testing.assert_array_equal(got, ref)


def test_rank_filters_without_nan_are_scipys(rng):
    a = rng.standard_normal((19, 21))
    a[3, 4] = np.inf
    for f, g in ((dc.minimum_filter, ndi.minimum_filter), (dc.median_filter, ndi.median_filter)):
        for pol in ("propagate", "omit"):
            np.testing.assert_array_equal(f(a, 3, nan_policy=pol), g(a, 3))
    np.testing.assert_array_equal(dc.percentile_filter(a, 30, 4), ndi.percentile_filter(a, 30, 4))
    np.testing.assert_array_equal(dc.median_filter(a, 4), ndi.median_filter(a, 4))
    np.testing.assert_array_equal(dc.rank_filter(a, -2, 3, nan_policy="omit"), ndi.rank_filter(a, -2, 3))
    # omit is numpy's nan-functions, windows without NaN too: it interpolates where scipy picks
    w = windows(a, 3)
    np.testing.assert_array_equal(dc.percentile_filter(a, 30, 3, nan_policy="omit"), np.percentile(w, 30.0, axis=-1))


def test_the_issues_one_d_case():
    x = np.array([6, 6, np.nan, 5, np.nan, np.nan])
    for chunks in (6, 3, 2, 1):
        d = da.from_array(x, chunks=chunks)
        with pytest.warns(UserWarning, match="chunks too thin") if chunks == 1 else contextlib.nullcontext():
            got, omitted = dc.minimum_filter(d, 3), dc.minimum_filter(d, 3, nan_policy="omit")
        np.testing.assert_array_equal(got.compute(), [6, np.nan, np.nan, np.nan, np.nan, np.nan])
        np.testing.assert_array_equal(omitted.compute(), [6, 6, 5, 5, 5, np.nan])


def test_omit_smoothing_is_normalized_convolution(rng):
    a = masked(rng, (23, 30), inf=False)
    valid = (~np.isnan(a)).astype(float)
    for mode in ("reflect", "wrap", "constant"):
        got = dc.gaussian_filter(a, 1.5, mode=mode, nan_policy="omit")
        num = ndi.gaussian_filter(np.nan_to_num(a), 1.5, mode=mode)
        den = ndi.gaussian_filter(valid, 1.5, mode=mode, cval=1.0 if mode == "constant" else 0.0)
        np.testing.assert_allclose(got, num / den, rtol=1e-12)
    box = dc.uniform_filter(a, 3, nan_policy="omit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_allclose(box, np.nanmean(windows(a, 3), axis=-1), rtol=1e-12, equal_nan=True)
    with pytest.raises(ValueError, match="nan_policy must be"):
        dc.gaussian_filter(a, 1.0, nan_policy="ignore")
    with pytest.raises(ValueError, match="order=0"):
        dc.gaussian_filter(a, 1.0, order=1, nan_policy="omit")


def test_linear_filters_skip_zero_taps_as_scipys_n_d_correlate(rng):
    """laplace's star has zero corners: a NaN there changes nothing (scipy's N-D rule)."""
    a = masked(rng, (15, 16), frac=0.05)
    np.testing.assert_array_equal(np.isnan(dc.laplace(a)), np.isnan(ndi.correlate(
        a, [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode="nearest")))


# ---- every chunking gives the same numbers, NaN and inf included (property-based) --------------

NAN_OPS = {
    "minimum": lambda x, m: dc.minimum_filter(x, 3, mode=m),
    "maximum_omit": lambda x, m: dc.maximum_filter(x, (2, 3), mode=m, nan_policy="omit"),
    "median": lambda x, m: dc.median_filter(x, 3, mode=m),
    "median_omit": lambda x, m: dc.median_filter(x, 3, mode=m, nan_policy="omit"),
    "median_omit_even": lambda x, m: dc.median_filter(x, (2, 4), mode=m, nan_policy="omit"),
    "percentile_omit": lambda x, m: dc.percentile_filter(x, 70, footprint=[[1, 0, 1], [0, 1, 1]], mode=m,
                                                         nan_policy="omit"),
    "percentile_omit_box": lambda x, m: dc.percentile_filter(x, 30, 3, mode=m, nan_policy="omit"),
    "rank": lambda x, m: dc.rank_filter(x, 1, 3, mode=m),
    "gaussian": lambda x, m: dc.gaussian_filter(x, 1.2, mode=m),
    "gaussian_omit": lambda x, m: dc.gaussian_filter(x, 1.2, mode=m, nan_policy="omit"),
    "uniform_omit": lambda x, m: dc.uniform_filter(x, 3, mode=m, nan_policy="omit"),
    "laplace": lambda x, m: dc.laplace(x, mode=m),
    "derivative": lambda x, m: dc.derivative(x, 1, 1, 4, mode=m),
    "cumsum": lambda x, m: dc.cumsum(x, axis=0),
    "histogram": lambda x, m: dc.histogram(x, bins=5, range=(-2, 2))[0],
}


@pytest.mark.parametrize("op", list(NAN_OPS))
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_nan_results_never_depend_on_the_chunking(op, data):
    shape, chunks, mode, rng = chunking_case(data, (3, 13))
    a = masked(rng, shape, frac=data.draw(st.sampled_from([0.05, 0.3, 0.9])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = np.asarray(NAN_OPS[op](a, mode))
        got = np.asarray(NAN_OPS[op](da.from_array(a, chunks=chunks), mode).compute())
    np.testing.assert_allclose(got, whole, rtol=1e-12, atol=1e-12, equal_nan=True)


# ---- every backend gives the numpy path's numbers (cupy where a GPU is) -----------------------

DEVICE_OPS = {
    "laplace": lambda x: dc.laplace(x),
    "gaussian_laplace": lambda x: dc.laplace(dc.gaussian_filter(x, 2.0)),
    "correlate_zero_taps": lambda x: dc.correlate(x, [[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]]),
    "sobel": lambda x: dc.sobel(x, 0),
    "minimum": lambda x: dc.minimum_filter(x, 3),
    "maximum_footprint": lambda x: dc.maximum_filter(x, footprint=[[1, 1, 0], [0, 1, 1]]),
    "median": lambda x: dc.median_filter(x, 3),
    "median5": lambda x: dc.median_filter(x, 5),
    "percentile": lambda x: dc.percentile_filter(x, 80, 3),
    "minimum_omit": lambda x: dc.minimum_filter(x, 3, nan_policy="omit"),
    "median_omit": lambda x: dc.median_filter(x, 3, nan_policy="omit"),
    "median_omit_even": lambda x: dc.median_filter(x, 4, nan_policy="omit"),
    "percentile_omit": lambda x: dc.percentile_filter(x, 80, 3, nan_policy="omit"),
    "gaussian_omit": lambda x: dc.gaussian_filter(x, 1.5, nan_policy="omit"),
}


@pytest.mark.parametrize("op", list(DEVICE_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_masked_data_gives_the_numpy_paths_numbers_on_every_backend(backend, rng, op, dtype):
    a = masked(rng, (71, 103), frac=0.03, dtype=dtype)
    ref = DEVICE_OPS[op](a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = DEVICE_OPS[op](backend.to(a))
    assert_matches(got, ref)


# ---- the xarray face ---------------------------------------------------------------------------

@pytest.fixture
def climate(rng):
    """(time 12, lat 31, lon 60) float32 in K with a 30 % NaN land mask, descending lat."""
    data = masked(rng, (12, 31, 60), dtype=np.float32, inf=False) + np.float32(280)
    time = np.arange("2000-01-01", "2000-01-13", dtype="datetime64[D]").astype("datetime64[ns]")
    return xr.DataArray(data, dims=("time", "lat", "lon"), name="t2m", attrs={"units": "K"},
                        coords={"time": time, "lat": np.linspace(90, -90, 31),
                                "lon": np.arange(60) * 6.0})


def test_the_issues_min_filter_is_the_same_chunked(climate):
    whole = climate.distconv.minimum_filter({"lon": 3})
    chunked = climate.chunk({"time": 5, "lon": 17}).distconv.minimum_filter({"lon": 3})
    np.testing.assert_array_equal(chunked.values, whole.values)


def test_time_derivative_is_per_second_whatever_the_storage_unit(climate):
    us = climate.assign_coords(time=climate.time.values.astype("datetime64[us]"))
    a, b = us.distconv.derivative("time"), climate.distconv.derivative("time")
    np.testing.assert_array_equal(a.values, b.values)
    assert a.attrs["units"] == "K / s"
    per_day = climate.distconv.derivative("time", datetime_unit="D")
    np.testing.assert_allclose(per_day.values, b.values * 86400, rtol=1e-5, equal_nan=True)
    full = climate.fillna(280.0)  # np.gradient's differences skip the centre: compare NaN-free
    ref = full.astype(np.float64).differentiate("time", datetime_unit="D")
    inner = slice(1, -1)  # the edges: mode 'nearest' here, one-sided in xarray
    got = full.distconv.derivative("time", datetime_unit="D")
    np.testing.assert_allclose(got.values[inner], ref.values[inner], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="datetime_unit must be one of"):
        climate.distconv.derivative("time", datetime_unit="fortnight")


def test_cftime_coordinates_take_their_calendar(climate):
    cftime = pytest.importorskip("cftime")
    noleap = climate.assign_coords(time=[cftime.DatetimeNoLeap(2001, 2, 20 + i) if i < 9
                                         else cftime.DatetimeNoLeap(2001, 3, i - 8) for i in range(12)])
    np.testing.assert_array_equal(noleap.distconv.derivative("time").values,
                                  climate.distconv.derivative("time").values)
    assert noleap.distconv.laplace().dims == climate.dims  # default dims include time


def test_integer_data_gives_float_derivatives():
    x = xr.DataArray(np.array([0, 1, 3, 6, 10, 15], np.int16), dims="x", coords={"x": np.arange(6) * 2.0})
    d = x.distconv.derivative("x")
    assert d.dtype == np.float64
    np.testing.assert_allclose(d.values[1:-1], np.gradient(x.values.astype(float), 2.0)[1:-1])
    assert x.distconv.laplace().dtype == np.float64


def test_results_drop_the_sources_zarr_encoding(tmp_path, climate):
    climate.to_dataset().to_zarr(tmp_path / "p.zarr")
    src = xr.open_zarr(tmp_path / "p.zarr").t2m
    assert src.encoding.get("dtype") == np.float32
    out = src.distconv.cumsum("time", dtype="float64")
    assert out.encoding == {}
    out.to_dataset().to_zarr(tmp_path / "q.zarr")
    assert xr.open_zarr(tmp_path / "q.zarr").t2m.dtype == np.float64


def test_cumsum_skips_nan_as_xarray_does(climate):
    np.testing.assert_allclose(climate.distconv.cumsum("time").values, climate.cumsum("time").values, rtol=1e-5)
    assert np.isnan(climate.distconv.cumsum("time", skipna=False).values).sum() > \
        np.isnan(climate.values).sum()


def test_laplace_takes_per_dim_spacing_and_modes(climate):
    lap = climate.distconv.laplace(["lat", "lon"], spacing=[2.0, 3.0], mode=["nearest", "wrap"])
    ref = (dc.derivative(climate.values, 1, 2, spacing=2.0, mode="nearest")
           + dc.derivative(climate.values, 2, 2, spacing=3.0, mode="wrap"))
    np.testing.assert_allclose(lap.values, ref, rtol=1e-5, equal_nan=True)
    same = climate.distconv.laplace(["lat", "lon"], spacing={"lon": 3.0, "lat": 2.0},
                                    mode={"lat": "nearest", "lon": "wrap"})
    np.testing.assert_array_equal(same.values, lap.values)
    with pytest.raises(TypeError, match=r"dims=\['lat'\]"):
        climate.distconv.laplace("lat")
    with pytest.raises(ValueError, match="one value per entry of dims"):
        climate.distconv.laplace(["lat", "lon"], spacing=[1.0])


def test_gaussian_takes_a_mode_per_dim(climate):
    got = climate.distconv.gaussian_filter({"lat": 1.0, "lon": 2.0}, mode={"lat": "nearest", "lon": "wrap"})
    ref = dc.gaussian_filter(climate.values, [1.0, 2.0], mode=["nearest", "wrap"], axes=[1, 2])
    np.testing.assert_array_equal(got.values, ref)


def test_weighted_histogram_per_time_step_is_one_vectorized_graph(climate):
    w = np.cos(np.deg2rad(climate.lat))
    h = climate.chunk({"time": 5, "lat": 16}).distconv.histogram(bins=10, range=(277, 283), dims=["lat", "lon"],
                                                                 weights=w)
    full_w = np.broadcast_to(w.values[:, None], climate.shape[1:])
    ref = np.stack([np.histogram(climate.values[t], bins=10, range=(277, 283), weights=full_w)[0]
                    for t in range(12)])
    np.testing.assert_allclose(h.values, ref, rtol=1e-12)
    assert h.dims == ("time", "bin") and "units" not in h.attrs
    np.testing.assert_array_equal(h.time.values, climate.time.values)
    long = xr.DataArray(da.zeros((3000, 8, 8), chunks=(100, 8, 8)), dims=("time", "y", "x"))
    g = long.distconv.histogram(bins=4, range=(0, 1), dims=["y", "x"])
    tasks = len(dict(g.data.__dask_graph__()))
    assert tasks <= 2 * 30 + 30, tasks  # the zeros, one count per chunk, a few merges
    assert int(g.sum()) == 3000 * 64
    assert isinstance(climate.distconv.histogram(bins=4, range=(0, 1), dims=["lat", "lon"]).data, np.ndarray)


def test_readme_climate_example_runs(climate):
    def example(t2m):
        ocean = t2m.notnull()
        smooth = t2m.distconv.gaussian_filter({"lat": 1.0, "lon": 2.0}, mode={"lat": "nearest", "lon": "wrap"},
                                              nan_policy="omit").where(ocean)
        return smooth, smooth.distconv.derivative("time", datetime_unit="D")

    smooth, warming = example(climate)
    assert warming.attrs["units"] == "K / D"
    land = climate.isnull().values
    assert bool(np.isnan(warming.values[land]).all())
    ref = ndi.correlate1d(smooth.values.astype(np.float64), [-0.5, 0.0, 0.5], axis=0, mode="nearest")
    np.testing.assert_allclose(warming.values, ref, rtol=1e-5, atol=1e-5, equal_nan=True)  # 1-day steps
    with dask.config.set(scheduler="sync"):
        _, chunked = example(climate.chunk({"time": 5, "lon": 17}))
        np.testing.assert_array_equal(host(chunked.data), warming.values)
