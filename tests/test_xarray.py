"""The .distconv accessor: named dims, coords/attrs kept, laziness, Dataset mapping."""

import dask
import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr

import distconv as dc  # noqa: F401 - registers the accessor

from .helpers import assert_matches


@pytest.fixture
def field(rng):
    t, y, x = np.arange(8.0), np.linspace(-1, 1, 13), np.linspace(0, 3, 16)
    return xr.DataArray(rng.standard_normal((8, 13, 16)), dims=("time", "lat", "lon"),
                        coords={"time": t, "lat": y, "lon": x}, attrs={"units": "K"}, name="temp")


def test_ops_take_dim_names_and_keep_metadata(field):
    d = field.chunk({"time": 3})
    cases = {
        "derivative": (d.distconv.derivative("lon", accuracy=4),
                       dc.derivative(field.values, 2, 1, 4, spacing=0.2)),
        "gaussian": (d.distconv.gaussian_filter({"lat": 1.0, "lon": 2.0}),
                     ndi.gaussian_filter(field.values, (0, 1.0, 2.0))),
        "cumsum": (d.distconv.cumsum("time"), np.cumsum(field.values, axis=0)),
        "correlate": (d.distconv.correlate(np.ones((3, 2)), dims=("lon", "lat")),
                      ndi.correlate(field.values, np.ones((1, 2, 3)))),
        "correlate1d": (d.distconv.correlate1d([1, 2, 3], "lat", mode="wrap"),
                        ndi.correlate1d(field.values, [1, 2, 3], axis=1, mode="wrap")),
    }
    for name, (out, ref) in cases.items():
        # a derivative's units change (K/lon-unit); lon has none here, so it carries none
        attrs = {} if name == "derivative" else field.attrs
        assert out.dims == field.dims and out.attrs == attrs and out.name == "temp", name
        np.testing.assert_array_equal(out.lon, field.lon)
        assert_matches(out.data, ref)


def test_lazy_no_compute_at_call_time(field):
    d = field.chunk({"time": 2})
    with dask.config.set(scheduler=lambda *a, **k: pytest.fail("computed at call time")):
        d.distconv.derivative("lat")
        with pytest.warns(UserWarning, match="axis 0: chunks too thin"):  # time chunks of 2, halo 4
            d.distconv.gaussian_filter(1.0)
        d.distconv.cumsum("time")
        d.distconv.laplace()


def test_spacing_from_uniform_coordinate_and_errors(field):
    out = field.distconv.derivative("lat")
    assert_matches(out.values, dc.derivative(field.values, 1, spacing=2 / 12))
    nonuni = field.assign_coords(lon=np.cumsum(np.linspace(0.1, 0.5, 16)))
    np.testing.assert_allclose(nonuni.distconv.derivative("lon").values,
                               np.gradient(field.values, nonuni.lon.values, axis=2), rtol=1e-12)
    with pytest.raises(ValueError, match="non-uniform"):
        nonuni.distconv.derivative("lon", accuracy=4)
    with pytest.raises(ValueError, match="not monotonic"):
        field.assign_coords(lon=np.r_[0.0, 2.0, 1.0, np.arange(3.0, 16.0)]).distconv.derivative("lon")
    with pytest.raises(ValueError, match="no coordinate"):
        field.drop_vars("lat").distconv.derivative("lat")
    with pytest.raises(ValueError, match="'depth' is not a dimension"):
        field.distconv.derivative("depth")


def test_dataset_maps_variables_with_the_dims(field):
    ds = xr.Dataset({"temp": field, "series": ("time", np.arange(8.0))}, attrs={"title": "t"})
    out = ds.distconv.derivative("lon")
    assert_matches(out.temp.values, field.distconv.derivative("lon").values)
    np.testing.assert_array_equal(out.series.values, ds.series.values)
    assert out.attrs == ds.attrs


def test_histogram_along_dims(field):
    h = field.distconv.histogram(bins=7)
    ref, edges = np.histogram(field.values, bins=7)
    np.testing.assert_array_equal(h.values, ref)
    np.testing.assert_allclose(h.bin_left.values, edges[:-1])
    per_time = field.chunk({"time": 4}).distconv.histogram(bins=edges, dims=["lat", "lon"])
    assert per_time.dims == ("time", "bin")
    for i in range(8):
        np.testing.assert_array_equal(per_time.values[i], np.histogram(field.values[i], bins=edges)[0])


def test_derivative_and_laplace_units_follow_the_coordinates(field):
    f = field.assign_coords(lon=field.lon.assign_attrs(units="m"), lat=field.lat.assign_attrs(units="m"))
    assert f.distconv.derivative("lon").attrs["units"] == "K / m"
    assert f.distconv.derivative("lon", order=2).attrs["units"] == "K / m^2"
    assert f.distconv.laplace(dims=["lat", "lon"]).attrs["units"] == "K / m^2"
    g = f.assign_coords(lat=f.lat.assign_attrs(units="deg"))
    assert "units" not in g.distconv.laplace(dims=["lat", "lon"]).attrs


def test_histogram_over_some_dims_is_named_after_the_variable(field):
    with pytest.warns(UserWarning, match="histogram without range computes"):
        h = field.chunk({"time": 4}).distconv.histogram(bins=8, dims=["lat", "lon"])
    assert h.name == "temp_histogram" and h.dims == ("time", "bin") and int(h.sum()) == field.size


def test_new_filters_by_dim_names(field):
    d = field.chunk({"time": 3})
    v = field.values
    cases = {
        "median": (d.distconv.median_filter({"lat": 3, "lon": 5}), ndi.median_filter(v, (1, 3, 5))),
        "minimum": (d.distconv.minimum_filter(3), ndi.minimum_filter(v, 3)),
        "uniform": (d.distconv.uniform_filter({"lon": 4}, mode="wrap"), ndi.uniform_filter(v, (1, 1, 4), mode="wrap")),
        "sobel": (d.distconv.sobel("lat"), ndi.sobel(v, axis=1)),
        "log": (d.distconv.gaussian_laplace({"lat": 1.0, "lon": 1.5}),
                ndi.gaussian_laplace(v, (1.0, 1.5), axes=(1, 2))),
        "percentile": (d.distconv.percentile_filter(25, {"time": 3}), ndi.percentile_filter(v, 25, (3, 1, 1))),
    }
    for name, (out, ref) in cases.items():
        assert out.dims == field.dims and out.attrs == field.attrs and out.name == "temp", name
        assert_matches(out.data, ref)
    ds = xr.Dataset({"temp": field, "mask": field.isel(time=0) > 0})
    out = ds.distconv.maximum_filter({"time": 2})
    assert_matches(out.temp.data, ndi.maximum_filter(v, (2, 1, 1)))
    assert out.mask.equals(ds.mask)  # no time dim: passed through


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("chunked", [False, True])
def test_derivative_edge_order_is_differentiates(rng, edge_order, chunked):
    """Porting DataArray.differentiate: edge_order gives its one-sided ends, on a uniform
    coordinate as on a non-uniform one, numpy-backed or dask-backed."""
    for lon in (np.arange(0.0, 36.0, 1.5), np.cumsum(rng.uniform(0.5, 2.0, 24))):
        t = xr.DataArray(rng.standard_normal((5, 24)), dims=("time", "lon"), coords={"lon": lon},
                         attrs={"units": "K"})
        t = t.chunk({"lon": 7}) if chunked else t
        got = t.distconv.derivative("lon", edge_order=edge_order)
        want = t.differentiate("lon", edge_order=edge_order)
        np.testing.assert_allclose(got.values, want.values, rtol=1e-12, atol=1e-12)
        assert got.dims == want.dims
