"""dc.to_zarr: the README's Python and xarray snippets reach the engine `distconv run` uses
(one task per block, sharded Zarr out), values equal scipy's; what the engine cannot take is
written by dask, and the report says why."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr
import zarr

import dask.array as da
import distconv as dc
from distconv.engine.marks import COMPLETE, OutputError

from .helpers import small_engine_blocks


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch, 20_000, 2000)


def _array(tmp_path, rng, shape=(203, 77), chunks=(32, 77), dtype=np.float32):
    x = rng.standard_normal(shape).astype(dtype)
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=shape, chunks=chunks, dtype=dtype)
    z[...] = x
    return x


def test_the_python_snippet_runs_on_the_engine(tmp_path, rng, small_blocks):
    x = _array(tmp_path, rng)
    y = dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), sigma=2.0)
    z = dc.correlate(y, [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode="nearest")
    report = dc.to_zarr(z, str(tmp_path / "out.zarr"))
    assert report["path"] == "engine" and report["tasks"] > 3, report
    out = zarr.open_array(str(tmp_path / "out.zarr"), mode="r")
    assert out.shards is not None
    ref = ndi.correlate(ndi.gaussian_filter(x, 2.0), np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], float),
                        mode="nearest")
    np.testing.assert_allclose(out[...], ref, rtol=1e-5, atol=1e-5)
    assert (tmp_path / "out.zarr" / COMPLETE).exists()
    with pytest.raises(OutputError, match=r"^path .* pass overwrite=True to replace it$") as e:
        dc.to_zarr(z, str(tmp_path / "out.zarr"))  # the Python face's words, not the command's
    assert "--" not in str(e.value) and "outputs.path" not in str(e.value)
    assert dc.to_zarr(z, str(tmp_path / "out.zarr"), overwrite=True)["path"] == "engine"


@pytest.mark.parametrize("chain", [False, True])
def test_a_scan_along_the_first_axis_runs_on_the_engine(tmp_path, rng, small_blocks, chain):
    x = _array(tmp_path, rng, dtype=np.float64)
    y = da.from_zarr(str(tmp_path / "in.zarr"))
    if chain:
        y = dc.gaussian_filter(y, sigma=1.0)
    report = dc.to_zarr(dc.cumsum(y, axis=0), str(tmp_path / "out.zarr"))
    assert report["path"] == "engine" and report["tasks"] > 3, report
    ref = np.cumsum(ndi.gaussian_filter(x, 1.0) if chain else x, axis=0)
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...], ref, rtol=1e-10, atol=1e-9)


def test_the_xarray_snippet_runs_on_the_engine_and_opens_with_coords(tmp_path, rng, small_blocks):
    data = rng.standard_normal((5, 61, 40)).astype(np.float32)
    ds = xr.Dataset({"t": (("time", "lat", "lon"), data, {"units": "K"})},
                    coords={"time": np.arange("2000-01-01", "2000-01-06", dtype="datetime64[D]").astype("datetime64[ns]"),
                            "lat": np.linspace(90, -90, 61), "lon": np.arange(40) * 9.0},
                    attrs={"title": "test"})
    ds.chunk({"time": 2}).to_zarr(tmp_path / "ds.zarr", zarr_format=3, consolidated=True)
    src = xr.open_zarr(tmp_path / "ds.zarr")
    report = src.t.distconv.gaussian_filter({"lat": 1.0, "lon": 2.0}).distconv.to_zarr(str(tmp_path / "o.zarr"))
    assert report["path"] == "engine", report
    back = xr.open_zarr(tmp_path / "o.zarr")
    np.testing.assert_allclose(back.t.values, ndi.gaussian_filter(data, [0, 1.0, 2.0]), rtol=1e-5, atol=1e-5)
    assert back.t.attrs["units"] == "K" and back.t.dims == ("time", "lat", "lon")
    np.testing.assert_array_equal(back.time.values, ds.time.values)
    np.testing.assert_array_equal(back.lat.values, ds.lat.values)
    whole = src.distconv.gaussian_filter({"lat": 1.0}).distconv.to_zarr(str(tmp_path / "d.zarr"))
    assert whole["t"]["path"] == "engine" and xr.open_zarr(tmp_path / "d.zarr").attrs["title"] == "test"
    for out in ("o.zarr", "d.zarr"):
        assert (tmp_path / out / COMPLETE).exists()
    again = src.distconv.gaussian_filter({"lat": 1.0}).distconv.to_zarr(str(tmp_path / "d.zarr"), overwrite=True)
    assert again["t"]["path"] == "engine"


@pytest.mark.parametrize("make, why", [
    (lambda x: dc.gaussian_filter(x[3:], 1.0), "not a Zarr array read whole"),
    (lambda x: dc.gaussian_filter(x, 1.0, mode="wrap"), "wrap"),
    (lambda x: x + 1, "is not a distconv stencil or scan"),
    (lambda x: dc.cumsum(x), "is not a distconv stencil or scan"),  # flattened
])
def test_what_the_engine_cannot_take_is_written_by_dask_and_says_why(tmp_path, rng, make, why):
    x = _array(tmp_path, rng, (64, 40), (16, 40), np.float64)
    y = make(da.from_zarr(str(tmp_path / "in.zarr")))
    report = dc.to_zarr(y, str(tmp_path / "out.zarr"))
    assert report["path"] == "general" and why in report["why"], report
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], make(x) if not hasattr(
        make(x), "compute") else make(x).compute(), rtol=1e-12)


def test_numpy_in_is_written_too(tmp_path, rng):
    a = rng.standard_normal((9, 7))
    assert dc.to_zarr(a, str(tmp_path / "n.zarr"))["path"] == "general"
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "n.zarr"))[...], a)


def test_a_dataset_workflow_runs_on_the_engine_and_resumes(tmp_path):
    import yaml
    from pathlib import Path

    from distconv import batch

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflows" / "gradient.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[4, 30, 48], chunks=[2, 30, 48])
    doc["steps"][0]["mode"] = "nearest"  # wrap reads the far edge: the general path
    doc["chunks"] = [1, 30, 48]  # the engine makes its own blocks whatever the compute chunks
    p = tmp_path / "workflows" / "g.yaml"  # its paths say ../demo-data/
    p.parent.mkdir()
    p.write_text(yaml.safe_dump(doc))
    wf = batch.load(p)
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct", s
    src = xr.open_zarr(wf.input["path"])
    ref = src.temperature.distconv.derivative("lon", accuracy=8, mode="nearest").compute()
    back = xr.open_zarr(wf.outputs["path"])
    from distconv.ops.stencils import central_coefficients

    # float32 on a GPU: a few roundings of the sum of |tap x value| (values ~280 K, taps / spacing)
    h = float(src.lon[1] - src.lon[0])
    tol = 4 * np.finfo(np.float32).eps * np.abs(central_coefficients(1, 8)).sum() / h * float(abs(src.temperature).max())
    np.testing.assert_allclose(back.temperature.values, ref.values, rtol=1e-5, atol=tol)
    assert back.attrs["title"] == src.attrs["title"] and back.temperature.attrs["units"] == ref.attrs["units"]
    np.testing.assert_array_equal(back.lon.values, src.lon.values)
    (Path(wf.outputs["path"]) / COMPLETE).unlink()
    s = batch.run(wf, progress=False, resume=True)
    assert s["path"] == "direct"
    np.testing.assert_allclose(xr.open_zarr(wf.outputs["path"]).temperature.values, ref.values, rtol=1e-5, atol=tol)


@pytest.mark.parametrize("case", ["scan-time", "scan-lat-region", "region-mode", "region-data"])
def test_dataset_variable_scans_and_regions_run_on_the_engine(tmp_path, small_blocks, case):
    """A dataset variable's scan (carried along time) and a region by dim names: the engine's
    blocks, values equal numpy's / scipy's over the region, the region's coordinates kept."""
    import yaml

    from distconv import batch

    doc = {"input": {"path": "in.zarr", "variable": "rain",
                     "synthetic": {"shape": [23, 30, 41], "chunks": [4, 30, 41], "dims": ["time", "lat", "lon"],
                                   "seed": 5}},
           "steps": [{"op": "cumsum", "dim": "time"}], "outputs": {"path": "out.zarr"}}
    region = {"time": [3, 19], "lat": [4, None]}
    if case == "scan-lat-region":
        doc["steps"] = [{"op": "gaussian_filter", "sigma": {"lat": 1.0, "lon": 1.5}, "mode": "nearest"},
                        {"op": "cumsum", "dim": "lat"}]
        doc["input"]["region"] = region
    elif case.startswith("region"):
        doc["steps"] = [{"op": "gaussian_filter", "sigma": {"time": 1.0, "lat": 2.0}, "mode": "reflect"}]
        doc["input"].update(region=region, region_edges=case.removeprefix("region-"))
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    wf = batch.load(p)
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct", s
    src = xr.open_zarr(wf.input["path"]).rain
    x = src.values.astype(np.float64)
    cut = (slice(3, 19), slice(4, None))
    if case == "scan-time":
        ref = np.cumsum(x, axis=0)
    elif case == "scan-lat-region":
        ref = np.cumsum(ndi.gaussian_filter(x[cut], (0, 1.0, 1.5), mode="nearest"), axis=1)
    elif case == "region-mode":
        ref = ndi.gaussian_filter(x[cut], (1.0, 2.0, 0), mode="reflect")
    else:
        ref = ndi.gaussian_filter(x, (1.0, 2.0, 0), mode="reflect")[cut]
    back = xr.open_zarr(wf.outputs["path"]).rain
    assert back.dims == ("time", "lat", "lon") and back.shape == ref.shape
    np.testing.assert_allclose(back.values, ref, rtol=1e-4, atol=1e-3 * np.abs(ref).max())
    want = src if case == "scan-time" else src.isel(time=cut[0], lat=cut[1])
    for dim in ("time", "lat", "lon"):
        np.testing.assert_array_equal(back[dim].values, want[dim].values)


def test_a_nan_skipping_scan_of_a_variable_runs_on_the_engine(tmp_path, small_blocks):
    """xarray's cumsum skips NaN (skipna for float data): on the engine the NaN count as 0 in
    every block and carry, as np.nancumsum, from the CLI's workflow and from the accessor."""
    import yaml

    from distconv import batch

    rng = np.random.default_rng(11)
    x = rng.standard_normal((29, 12, 17)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    x[:, 3, 4] = np.nan  # a whole series
    ds = xr.Dataset({"rain": (("time", "lat", "lon"), x)}, coords={"time": np.arange(29)})
    ds.chunk({"time": 4}).to_zarr(tmp_path / "in.zarr", zarr_format=3, consolidated=False)
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump({"input": {"path": "in.zarr", "variable": "rain"},
                                 "steps": [{"op": "cumsum", "dim": "time"}], "outputs": {"path": "out.zarr"}}))
    s = batch.run(batch.load(p), progress=False)
    assert s["path"] == "direct", s
    ref = np.nancumsum(x.astype(np.float64), axis=0)
    np.testing.assert_allclose(xr.open_zarr(tmp_path / "out.zarr").rain.values, ref, rtol=1e-5, atol=1e-4)
    v = xr.open_zarr(tmp_path / "in.zarr", consolidated=False).rain
    report = v.distconv.cumsum("time").distconv.to_zarr(str(tmp_path / "acc.zarr"))
    assert report["path"] == "engine", report
    np.testing.assert_allclose(xr.open_zarr(tmp_path / "acc.zarr").rain.values, ref, rtol=1e-5, atol=1e-4)


def test_float_variables_get_xarrays_fill_value(tmp_path, rng):
    """A float variable is written with NaN as its fill value and xarray's own _FillValue
    attribute beside it (as xarray's .to_zarr writes it), integers with zarr's 0, on the engine
    and on dask's path; a plain array's float output fills with NaN too."""
    import json
    import warnings

    import xarray as xr

    ds = xr.Dataset({"t": (("y", "x"), rng.standard_normal((40, 30)).astype(np.float32)),
                     "n": (("y", "x"), rng.integers(0, 9, (40, 30)).astype(np.int32))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on consolidated metadata
        ds.chunk({"y": 20}).to_zarr(str(tmp_path / "in.zarr"), mode="w", consolidated=True)
        ds.to_zarr(str(tmp_path / "xarray.zarr"), mode="w")

    def meta(path, v):
        doc = json.loads((tmp_path / path / v / "zarr.json").read_text())
        return str(doc["fill_value"]), doc["attributes"].get("_FillValue")

    src = xr.open_zarr(str(tmp_path / "in.zarr"))
    report = src.distconv.gaussian_filter({"y": 1.0, "x": 1.0}).distconv.to_zarr(str(tmp_path / "out.zarr"))
    assert report["t"]["path"] == "engine"
    ds.distconv.to_zarr(str(tmp_path / "mem.zarr"))  # numpy-backed: dask's path
    for path in ("out.zarr", "mem.zarr"):
        assert meta(path, "t") == meta("xarray.zarr", "t") == ("NaN", meta("xarray.zarr", "t")[1])
        assert meta(path, "n") == meta("xarray.zarr", "n")
    back = xr.open_zarr(str(tmp_path / "out.zarr"))
    assert np.isnan(back.t.encoding["_FillValue"]) and back.t.dtype == np.float32
    dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr" / "t")), 1.0), str(tmp_path / "a.zarr"))
    assert str(json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())["fill_value"]) == "NaN"
