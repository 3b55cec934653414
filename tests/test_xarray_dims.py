"""The accessor's per-dim arguments (ops/per_dim.py): size, sigma, order, mode, cval, origin,
spacing and footprint as one value, a sequence in the order the call names its dims, or
{dim: value}, on every method; the dims a call does not name are left alone. Each case runs
on a (time, lat, lon) DataArray, numpy- and dask-backed (a random chunking), against
scipy.ndimage on the numpy array with the equivalent per-axis arguments, and against
xarray's own op where it has one."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr

import distconv as dc  # noqa: F401 - registers the accessor

from .helpers import assert_matches

SHAPE = (5, 9, 11)  # odd sizes along every dim
W2 = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]])  # a mask over (lon, lat): 2 x 3
FP = xr.DataArray(np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0]], bool), dims=("lon", "lat"))
FP_ARRAY = FP.transpose("lat", "lon").values[None]  # the same footprint over (time, lat, lon)
D1 = np.array([-0.5, 0.0, 0.5])  # a central first difference
D2 = np.array([1.0, -2.0, 1.0])  # a central second difference

# (id, the accessor call on a DataArray ``a``, scipy's on its numpy values ``v``)
CASES = [
    # the examples, verbatim
    ("issue-ggm", lambda a: a.distconv.gaussian_gradient_magnitude({"lat": 1, "lon": 2}),
     lambda v: ndi.gaussian_gradient_magnitude(v, (0, 1, 2), axes=(1, 2))),
    ("issue-minimum-mode-dict", lambda a: a.distconv.minimum_filter(3, mode={"lat": "wrap"}),
     lambda v: ndi.minimum_filter(v, 3, mode=["reflect", "wrap", "reflect"])),
    # correlate, convolve: a mask over dims named out of the array's order
    ("correlate-dicts", lambda a: a.distconv.correlate(W2, ("lon", "lat"), mode={"lat": "wrap", "lon": "wrap"},
                                                       origin={"lon": -1}),
     lambda v: ndi.correlate(v, W2.T[None], mode="wrap", origin=(0, 0, -1))),
    ("correlate-sequence", lambda a: a.distconv.correlate(W2, ("lon", "lat"), mode="constant", cval=0.5,
                                                          origin=[-1, 1]),
     lambda v: ndi.correlate(v, W2.T[None], mode="constant", cval=0.5, origin=(0, 1, -1))),
    ("convolve-dicts", lambda a: a.distconv.convolve(W2, ("lon", "lat"), mode={"lon": "nearest", "lat": "nearest"},
                                                     cval={"lat": 0.0, "lon": 0.0}),
     lambda v: ndi.convolve(v, W2.T[None], mode="nearest")),
    ("correlate1d-dicts", lambda a: a.distconv.correlate1d([1.0, 2.0, -1.0], "lat", mode={"lat": "mirror"},
                                                           origin={"lat": 1}),
     lambda v: ndi.correlate1d(v, [1.0, 2.0, -1.0], axis=1, mode="mirror", origin=1)),
    ("convolve1d-scalar", lambda a: a.distconv.convolve1d([1.0, 2.0, -1.0], "time", mode="wrap", origin=-1),
     lambda v: ndi.convolve1d(v, [1.0, 2.0, -1.0], axis=0, mode="wrap", origin=-1)),
    # gaussian_filter: sigma, order and mode in every form
    ("gaussian-scalar", lambda a: a.distconv.gaussian_filter(1.0, mode="wrap"),
     lambda v: ndi.gaussian_filter(v, 1.0, mode="wrap")),
    ("gaussian-sequence", lambda a: a.distconv.gaussian_filter([0.0, 1.0, 2.0], order=[0, 1, 0],
                                                               mode=["reflect", "nearest", "wrap"]),
     lambda v: ndi.gaussian_filter(v, (0.0, 1.0, 2.0), order=(0, 1, 0), mode=["reflect", "nearest", "wrap"])),
    ("gaussian-dicts", lambda a: a.distconv.gaussian_filter({"lon": 2.0, "lat": 1.0}, order={"lon": 1},
                                                            mode={"lon": "wrap", "lat": "nearest"}),
     lambda v: ndi.gaussian_filter(v, (1.0, 2.0), order=(0, 1), mode=("nearest", "wrap"), axes=(1, 2))),
    ("gaussian-modes-in-named-order", lambda a: a.distconv.gaussian_filter({"lon": 2.0, "time": 1.0},
                                                                           mode=["wrap", "mirror"]),
     lambda v: ndi.gaussian_filter(v, (1.0, 2.0), mode=("mirror", "wrap"), axes=(0, 2))),
    ("gaussian1d-dicts", lambda a: a.distconv.gaussian_filter1d({"lon": 1.5}, "lon", order=1, mode={"lon": "wrap"}),
     lambda v: ndi.gaussian_filter1d(v, 1.5, axis=2, order=1, mode="wrap")),
    # uniform_filter: size, mode, origin
    ("uniform-scalar", lambda a: a.distconv.uniform_filter(3, mode="mirror", origin=1),
     lambda v: ndi.uniform_filter(v, 3, mode="mirror", origin=1)),
    ("uniform-sequence", lambda a: a.distconv.uniform_filter([1, 3, 5], mode=["wrap", "nearest", "reflect"],
                                                             origin=[0, -1, 2]),
     lambda v: ndi.uniform_filter(v, (1, 3, 5), mode=["wrap", "nearest", "reflect"], origin=(0, -1, 2))),
    ("uniform-dicts", lambda a: a.distconv.uniform_filter({"lon": 5, "time": 3}, mode={"time": "wrap"},
                                                          origin={"lon": 1}),
     lambda v: ndi.uniform_filter(v, (3, 5), mode=("wrap", "reflect"), origin=(0, 1), axes=(0, 2))),
    ("uniform1d-dicts", lambda a: a.distconv.uniform_filter1d(4, "lat", mode={"lat": "nearest"}, origin={"lat": -1}),
     lambda v: ndi.uniform_filter1d(v, 4, axis=1, mode="nearest", origin=-1)),
    # sobel, prewitt: the derivative along one dim, smoothing along every other one
    ("sobel-dict", lambda a: a.distconv.sobel("lat", mode={"lon": "wrap", "time": "nearest"}),
     lambda v: ndi.sobel(v, axis=1, mode=["nearest", "reflect", "wrap"])),
    ("sobel-sequence", lambda a: a.distconv.sobel("lon", mode=["mirror", "wrap", "nearest"]),
     lambda v: ndi.sobel(v, axis=2, mode=["mirror", "wrap", "nearest"])),
    ("prewitt-dict", lambda a: a.distconv.prewitt("time", mode={"lat": "constant"}, cval=2.0),
     lambda v: ndi.prewitt(v, axis=0, mode=["reflect", "constant", "reflect"], cval=2.0)),
    ("prewitt-scalar", lambda a: a.distconv.prewitt("lat", mode="wrap"),
     lambda v: ndi.prewitt(v, axis=1, mode="wrap")),
    # gaussian_laplace, gaussian_gradient_magnitude
    ("log-scalar", lambda a: a.distconv.gaussian_laplace(1.0, mode="nearest"),
     lambda v: ndi.gaussian_laplace(v, 1.0, mode="nearest")),
    ("log-sequence", lambda a: a.distconv.gaussian_laplace([0.5, 1.0, 1.5], mode=["nearest", "mirror", "reflect"]),
     lambda v: ndi.gaussian_laplace(v, (0.5, 1.0, 1.5), mode=["nearest", "mirror", "reflect"])),
    ("log-dicts", lambda a: a.distconv.gaussian_laplace({"lon": 1.5, "lat": 1.0},
                                                         mode={"lon": "nearest", "lat": "mirror"}),
     lambda v: ndi.gaussian_laplace(v, (1.0, 1.5), mode=("mirror", "nearest"), axes=(1, 2))),
    ("ggm-scalar", lambda a: a.distconv.gaussian_gradient_magnitude(1.0, mode="mirror"),
     lambda v: ndi.gaussian_gradient_magnitude(v, 1.0, mode="mirror")),
    ("ggm-dicts", lambda a: a.distconv.gaussian_gradient_magnitude({"lon": 1.5, "time": 1.0},
                                                                   mode={"time": "nearest"}),
     lambda v: ndi.gaussian_gradient_magnitude(v, (1.0, 0, 1.5), mode=("nearest", "reflect"), axes=(0, 2))),
    # minimum, maximum: a mode per dim over a box, one over another footprint
    ("minimum-dicts", lambda a: a.distconv.minimum_filter({"lon": 3, "time": 2},
                                                          mode={"lon": "wrap", "time": "nearest"}, origin={"time": -1}),
     lambda v: ndi.minimum_filter(v, (2, 3), mode=("nearest", "wrap"), origin=(-1, 0), axes=(0, 2))),
    ("minimum-footprint", lambda a: a.distconv.minimum_filter(footprint=FP, mode="constant", cval=0.5,
                                                              origin={"lat": 1}),
     lambda v: ndi.minimum_filter(v, footprint=FP_ARRAY, mode="constant", cval=0.5, origin=(0, 1, 0))),
    ("maximum-sequence", lambda a: a.distconv.maximum_filter([1, 3, 5], mode=["wrap", "mirror", "nearest"],
                                                             origin=[0, 1, -2]),
     lambda v: ndi.maximum_filter(v, (1, 3, 5), mode=["wrap", "mirror", "nearest"], origin=(0, 1, -2))),
    ("maximum-footprint-array",
     lambda a: a.distconv.maximum_filter(footprint=FP_ARRAY, mode={"lat": "wrap", "lon": "wrap", "time": "wrap"}),
     lambda v: ndi.maximum_filter(v, footprint=FP_ARRAY, mode="wrap")),
    # median, rank, percentile: one mode, also given once per dim
    ("median-dicts", lambda a: a.distconv.median_filter({"lon": 5, "lat": 3}, mode={"lat": "wrap", "lon": "grid-wrap"}),
     lambda v: ndi.median_filter(v, (3, 5), mode="wrap", axes=(1, 2))),
    ("median-scalar", lambda a: a.distconv.median_filter(3, mode="nearest"),
     lambda v: ndi.median_filter(v, 3, mode="nearest")),
    ("rank-dicts", lambda a: a.distconv.rank_filter(-2, {"lon": 3, "time": 3}, mode=["mirror", "mirror"],
                                                    origin={"lon": 1}),
     lambda v: ndi.rank_filter(v, -2, (3, 3), mode="mirror", origin=(0, 1), axes=(0, 2))),
    ("percentile-footprint",
     lambda a: a.distconv.percentile_filter(30, footprint=FP, mode={"lon": "nearest", "lat": "nearest"}),
     lambda v: ndi.percentile_filter(v, 30, footprint=FP_ARRAY, mode="nearest")),
    ("percentile-sequence", lambda a: a.distconv.percentile_filter(70, [3, 1, 3], mode="reflect", origin=[1, 0, 0]),
     lambda v: ndi.percentile_filter(v, 70, (3, 1, 3), mode="reflect", origin=(1, 0, 0))),
    ("minimum1d-dicts", lambda a: a.distconv.minimum_filter1d(3, "time", mode={"time": "wrap"}, origin={"time": 1}),
     lambda v: ndi.minimum_filter1d(v, 3, axis=0, mode="wrap", origin=1)),
    ("maximum1d-scalar", lambda a: a.distconv.maximum_filter1d(4, "lon", mode="constant", cval=-1.0),
     lambda v: ndi.maximum_filter1d(v, 4, axis=2, mode="constant", cval=-1.0)),
    # derivative, laplace: spacing and mode
    ("derivative-dicts", lambda a: a.distconv.derivative("lon", spacing={"lon": 0.5}, mode={"lon": "wrap"}),
     lambda v: ndi.correlate1d(v, D1 / 0.5, axis=2, mode="wrap")),
    ("laplace-dicts", lambda a: a.distconv.laplace(["lon", "lat"], spacing={"lat": 2.0, "lon": 0.5},
                                                   mode={"lon": "wrap"}),
     lambda v: ndi.correlate1d(v, D2 / 4.0, axis=1, mode="nearest")
     + ndi.correlate1d(v, D2 / 0.25, axis=2, mode="wrap")),
    ("laplace-sequences", lambda a: a.distconv.laplace(["lon", "lat"], spacing=[0.5, 2.0], mode=["wrap", "mirror"]),
     lambda v: ndi.correlate1d(v, D2 / 4.0, axis=1, mode="mirror")
     + ndi.correlate1d(v, D2 / 0.25, axis=2, mode="wrap")),
]


@pytest.fixture
def values(rng):
    return rng.standard_normal(SHAPE)


@pytest.fixture(params=["numpy", "dask"])
def field(request, rng, values):
    """The (time, lat, lon) field, numpy-backed or dask-backed on a random chunking."""
    a = xr.DataArray(values, dims=("time", "lat", "lon"), attrs={"long_name": "anomaly"}, name="t",
                     coords={"time": np.arange(5.0), "lat": np.linspace(-4, 4, 9), "lon": np.arange(11) * 0.5})
    if request.param == "dask":
        a = a.chunk({d: int(rng.integers(1, n + 1)) for d, n in a.sizes.items()})
    return a


def _quiet(call, a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # thin random chunks merge with a warning
        return call(a)


@pytest.mark.parametrize("call, ref", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_per_dim_forms_match_scipy(field, values, call, ref):
    out = _quiet(call, field)
    assert out.dims == field.dims and out.name == "t"
    assert isinstance(out.data, da.Array) == isinstance(field.data, da.Array)
    assert_matches(out.data, ref(values))


XARRAY_CASES = [  # window ops xarray also has: equal where the window lies inside the array
    ("minimum", lambda a: a.distconv.minimum_filter({"lon": 3, "lat": 5}), lambda r: r.min()),
    ("maximum", lambda a: a.distconv.maximum_filter([1, 5, 3]), lambda r: r.max()),
    ("median", lambda a: a.distconv.median_filter({"lon": 3, "lat": 5}, mode={"lat": "nearest", "lon": "nearest"}),
     lambda r: r.median()),
    ("uniform", lambda a: a.distconv.uniform_filter({"lon": 3, "lat": 5}, mode=["wrap", "nearest"]),
     lambda r: r.mean()),
]


@pytest.mark.parametrize("call, reduce", [c[1:] for c in XARRAY_CASES], ids=[c[0] for c in XARRAY_CASES])
def test_window_ops_match_xarray_rolling_inside(field, call, reduce):
    inside = {"lat": slice(2, -2), "lon": slice(1, -1)}
    want = reduce(field.rolling(lon=3, lat=5, center=True)).isel(inside)
    got = _quiet(call, field).isel(inside)
    np.testing.assert_allclose(got.values, want.values, rtol=1e-12, atol=1e-12)


def test_derivative_matches_xarray_differentiate_inside(field):
    want = field.compute().differentiate("lon").values[..., 1:-1]  # central inside, as ours
    for given in ({}, {"spacing": {"lon": 0.5}, "mode": {"lon": "wrap"}}, {"spacing": [0.5]}):
        got = _quiet(lambda a: a.distconv.derivative("lon", **given), field)
        np.testing.assert_allclose(got.values[..., 1:-1], want, rtol=1e-12, atol=1e-12)


ERRORS = [  # (the call, the message) for arguments refused before any work
    (lambda a: a.distconv.median_filter({"lat": 3, "lon": 3}, mode={"lat": "wrap", "lon": "nearest"}),
     r"mode must be one value for every dim .*scipy's rank filters take one mode; "
     r"got \{'lat': 'wrap', 'lon': 'nearest'\}"),
    (lambda a: a.distconv.percentile_filter(20, {"lat": 3, "lon": 3}, mode={"lat": "wrap"}),
     r"it leaves lon at 'reflect'\): scipy's rank filters take one mode"),
    (lambda a: a.distconv.rank_filter(1, 3, mode=["wrap", "wrap", "mirror"]), "rank filters take one mode"),
    (lambda a: a.distconv.minimum_filter(footprint=FP, mode={"lat": "wrap", "lon": "nearest"}),
     "minimum and maximum filters take one mode over a footprint that is not a box"),
    (lambda a: a.distconv.correlate(W2, ("lon", "lat"), mode={"lat": "wrap", "lon": "nearest"}),
     "correlate and convolve take one mode"),
    (lambda a: a.distconv.uniform_filter(3, cval={"lat": 1.0, "lon": 2.0}), "take one cval"),
    (lambda a: a.distconv.gaussian_filter({"lat": 1.0, "depth": 2.0}),
     r"sigma has an entry for 'depth', which is not a dimension of this array; dims are \('time', 'lat', 'lon'\)"),
    (lambda a: a.distconv.gaussian_filter({"lat": 1.0}, mode={"time": "wrap"}),
     r"mode has an entry for 'time', which is not a dim this call runs along; those are \['lat'\]"),
    (lambda a: a.distconv.uniform_filter({"lat": 3, "lon": 3}, origin=[1, 0, 0]),
     r"origin needs one value per entry of dims \['lat', 'lon'\], one value for all, or \{dim: value\}"),
    (lambda a: a.distconv.sobel("lat", mode={"lon": "periodic"}), "mode must be one of .*; got 'periodic'"),
    (lambda a: a.distconv.maximum_filter({}), r"size=\{\} names no dim"),
    (lambda a: a.distconv.minimum_filter(footprint=FP.rename(lon="depth")), "'depth' is not a dimension"),
    (lambda a: a.distconv.derivative("lat", mode={"lon": "wrap"}), "mode has an entry for 'lon'"),
    (lambda a: a.distconv.laplace(["lat", "lon"], spacing={"time": 1.0}), "spacing has an entry for 'time'"),
]


@pytest.mark.parametrize("call, message", ERRORS, ids=range(len(ERRORS)))
def test_bad_per_dim_arguments_are_refused_before_any_work(values, call, message):
    a = xr.DataArray(values, dims=("time", "lat", "lon")).chunk({"time": 2})
    with dask.config.set(scheduler=lambda *args, **kw: pytest.fail("computed before the check")):
        with pytest.raises(ValueError, match=message):
            call(a)


def test_dataset_skips_variables_without_a_dim_a_dict_names(values):
    a = xr.DataArray(values, dims=("time", "lat", "lon"))
    ds = xr.Dataset({"t": a, "series": ("time", np.arange(5.0))})
    out = ds.distconv.minimum_filter(3, mode={"lat": "wrap"})
    assert_matches(out.t.data, ndi.minimum_filter(values, 3, mode=["reflect", "wrap", "reflect"]))
    assert out.series.equals(ds.series)
    fp = ds.distconv.median_filter(footprint=FP)
    assert_matches(fp.t.data, ndi.median_filter(values, footprint=FP_ARRAY))
    assert fp.series.equals(ds.series)
