"""The accessor's to_zarr stores a Dataset as xarray users expect: variables of the same dims
in one layout, the input's chunking kept along the dims no filter reads a halo along, and
``chunks=`` to ask for others; checked against what xarray's own ``Dataset.to_zarr`` writes for
the same input, read back with zarr and ``xr.open_zarr``."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr
import zarr

import distconv as dc

from .helpers import small_engine_blocks

T, Y, X = 23, 37, 52  # odd sizes: last chunks partial; lon halves twice, then is odd


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch, 40_000, 2000)


def _source(tmp_path, rng, chunks):
    """A Zarr dataset written by xarray from ``chunks``, opened again: float32 and float64 data
    with NaN, an int8 mask over (lat, lon) and a series over time."""
    q = rng.standard_normal((T, Y, X))
    q[rng.random(q.shape) < 0.05] = np.nan
    ds = xr.Dataset({"t": (("time", "lat", "lon"), rng.standard_normal((T, Y, X)).astype(np.float32), {"units": "K"}),
                     "q": (("time", "lat", "lon"), q),
                     "m": (("lat", "lon"), rng.integers(0, 3, (Y, X)).astype(np.int8)),
                     "s": (("time",), rng.standard_normal(T))},
                    coords={"time": np.arange(T), "lat": np.linspace(-90, 90, Y), "lon": np.arange(X) * 7.2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on consolidated metadata
        ds.chunk(chunks).to_zarr(tmp_path / "in.zarr", mode="w", zarr_format=3)
    return ds, xr.open_zarr(tmp_path / "in.zarr")


def _xarray_writes(ds, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", zarr_format=3)
    return zarr.open_group(str(path), mode="r")


def _layout(group, name):
    a = group[name]
    return a.chunks, a.shards


def test_variables_of_one_dims_share_one_layout_that_keeps_unfiltered_chunking(tmp_path, rng, small_blocks):
    ds, src = _source(tmp_path, rng, {"time": 5, "lat": 37, "lon": 52})
    out = src.assign(t=src.t.distconv.gaussian_filter({"lat": 1.0, "lon": 2.0}))
    report = out.distconv.to_zarr(str(tmp_path / "out.zarr"))
    assert report["t"]["path"] == "engine" and report["q"]["path"] == "general", report
    ours, theirs = zarr.open_group(str(tmp_path / "out.zarr"), mode="r"), _xarray_writes(out, tmp_path / "xr.zarr")
    # (time, lat, lon): one layout, sharded as the engine writes; shards = xarray's chunks
    assert _layout(ours, "t") == _layout(ours, "q")
    inner, shards = _layout(ours, "t")
    assert shards == theirs["t"].chunks == theirs["q"].chunks == (5, 37, 52)
    # inner chunks: lon (filtered, the longest even) halved while a float64 chunk is above the
    # engine's inner size, lat (filtered, odd) and time (not filtered) kept
    assert inner == (5, 37, 13)
    # the groups nothing of which ran on the engine: exactly as xarray writes them
    for v in ("m", "s"):
        assert _layout(ours, v) == _layout(theirs, v) and ours[v].shards is None
    # read back by xarray: the same time chunking, the same encoding but for the split dims
    back, ref = xr.open_zarr(tmp_path / "out.zarr"), xr.open_zarr(tmp_path / "xr.zarr")
    for v in ("t", "q"):
        assert back[v].chunks[0] == ref[v].chunks[0]
        assert back[v].encoding["shards"] == ref[v].encoding["chunks"]
        assert back[v].encoding["_FillValue"] is not None and np.isnan(back[v].encoding["_FillValue"])
    for v in ("m", "s"):
        assert back[v].chunks == ref[v].chunks
    np.testing.assert_allclose(back.t.values, ndi.gaussian_filter(ds.t.values, (0, 1.0, 2.0)), rtol=1e-5, atol=1e-5)
    for v in ("q", "m", "s"):
        np.testing.assert_array_equal(back[v].values, ds[v].values)  # NaN where the input had it
    assert back.t.attrs["units"] == "K"


def test_a_dataset_nothing_of_which_runs_on_the_engine_is_stored_as_xarray_stores_it(tmp_path, rng):
    ds, _ = _source(tmp_path, rng, {"time": 5})
    lazy = ds.chunk({"time": 6, "lat": 10, "lon": 25})  # not read from Zarr: dask writes every variable
    report = lazy.distconv.to_zarr(str(tmp_path / "out.zarr"))
    assert {r["path"] for r in report.values()} == {"general"}
    ours, theirs = zarr.open_group(str(tmp_path / "out.zarr"), mode="r"), _xarray_writes(lazy, tmp_path / "xr.zarr")
    for v in ds.data_vars:
        assert _layout(ours, v) == _layout(theirs, v), v
        np.testing.assert_array_equal(ours[v].fill_value, theirs[v].fill_value)  # NaN for floats
    back, ref = xr.open_zarr(tmp_path / "out.zarr"), xr.open_zarr(tmp_path / "xr.zarr")
    for v in ds.data_vars:
        assert back[v].chunks == ref[v].chunks
        np.testing.assert_array_equal(back[v].values, ref[v].values)


def test_a_passed_through_variable_keeps_the_chunks_it_was_stored_in(tmp_path, rng):
    """As xarray's to_zarr: a variable read from Zarr keeps its stored chunks (its encoding),
    even opened with other dask chunks."""
    ds, _ = _source(tmp_path, rng, {"time": 5, "lon": 25})
    src = xr.open_zarr(tmp_path / "in.zarr", chunks={"time": 10})
    src.distconv.to_zarr(str(tmp_path / "out.zarr"))
    ours, theirs = zarr.open_group(str(tmp_path / "out.zarr"), mode="r"), _xarray_writes(src, tmp_path / "xr.zarr")
    for v in ds.data_vars:
        assert _layout(ours, v) == _layout(theirs, v), v
    assert ours["q"].chunks == (5, Y, 25)


def test_chunks_asks_for_other_chunks_along_the_named_dims(tmp_path, rng, small_blocks):
    ds, src = _source(tmp_path, rng, {"time": 5})
    out = src.distconv.gaussian_filter({"lon": 1.5})  # t and q filtered, m passed through
    out.distconv.to_zarr(str(tmp_path / "out.zarr"), chunks={"time": 7, "lat": 37})
    ours = zarr.open_group(str(tmp_path / "out.zarr"), mode="r")
    assert ours["t"].shards == ours["q"].shards == (7, 37, 52)
    assert ours["t"].chunks == ours["q"].chunks and ours["t"].chunks[:2] == (7, 37)  # named dims: as given
    assert ours["t"].chunks[2] < 52  # lon, filtered, split
    assert ours["m"].chunks == (37, 52) and ours["s"].chunks == (7,)
    back = xr.open_zarr(tmp_path / "out.zarr")
    np.testing.assert_allclose(back.q.values, ndi.gaussian_filter(ds.q.values, (0, 0, 1.5)), rtol=1e-12)
    for bad, match in [({"depth": 3}, "'depth'"), ({"time": 0}, "positive"), ((5, 37, 50), "dim: size")]:
        with pytest.raises(ValueError, match=match):
            out.distconv.to_zarr(str(tmp_path / "bad.zarr"), chunks=bad)
        assert not (tmp_path / "bad.zarr").exists()  # refused before anything is written


def test_a_dataarray_on_the_engine_is_sharded_by_the_chunks_it_was_read_in(tmp_path, rng, small_blocks):
    _, src = _source(tmp_path, rng, {"time": 4, "lon": 25})
    src.t.distconv.derivative("lat").distconv.to_zarr(str(tmp_path / "d.zarr"))
    a = zarr.open_group(str(tmp_path / "d.zarr"), mode="r")["t"]
    assert a.shards == (4, Y, 25) and a.chunks == (4, Y, 25)  # lat alone is filtered, and odd
    ref = xr.open_zarr(tmp_path / "in.zarr").t.distconv.derivative("lat").values
    np.testing.assert_array_equal(xr.open_zarr(tmp_path / "d.zarr").t.values, ref)


def test_an_arrays_chunks_are_the_engines_shards_or_dasks_chunks(tmp_path, rng, small_blocks):
    x = rng.standard_normal((45, 31))
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(10, 31), dtype=x.dtype)
    z[...] = x
    y = dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), 1.0)
    assert dc.to_zarr(y, str(tmp_path / "e.zarr"), chunks=(20, 31))["path"] == "engine"
    assert zarr.open_array(str(tmp_path / "e.zarr"), mode="r").shards == (20, 31)
    assert dc.to_zarr(y + 1, str(tmp_path / "g.zarr"), chunks=12)["path"] == "general"
    assert zarr.open_array(str(tmp_path / "g.zarr"), mode="r").chunks == (12, 12)
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "g.zarr"))[...], ndi.gaussian_filter(x, 1.0) + 1,
                               rtol=1e-12)
    with pytest.raises(ValueError, match="one per axis"):
        dc.to_zarr(y, str(tmp_path / "bad.zarr"), chunks=(1, 2, 3))


def test_a_filter_along_the_first_dim_splits_the_inner_chunks_along_it_too(tmp_path, rng, small_blocks):
    ds, src = _source(tmp_path, rng, {"time": 8, "lon": 52})
    report = src.t.distconv.gaussian_filter(1.0).distconv.to_zarr(str(tmp_path / "g.zarr"))
    assert report["path"] == "engine", report
    a = zarr.open_group(str(tmp_path / "g.zarr"), mode="r")["t"]
    assert a.shards == (8, Y, 52) and a.chunks == (1, Y, 13)  # every dim filtered: halved to ~2000 bytes
    np.testing.assert_allclose(xr.open_zarr(tmp_path / "g.zarr").t.values, ndi.gaussian_filter(ds.t.values, 1.0),
                               rtol=1e-5, atol=1e-5)
