"""The general path's reason names the true cause: complex data, a derivative along an unevenly
spaced coordinate, a scan whose carry starts before the region; where no such cause holds, the
engine runs the workflow."""

import warnings

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch

from .helpers import small_engine_blocks


def _run(tmp_path, inp, steps):
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump({"input": inp, "steps": steps, "outputs": {"path": "out.zarr"}}))
    return batch.run(batch.load(tmp_path / "wf.yaml"), progress=False)


def _array(tmp_path, x):
    zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(16, x.shape[1]), dtype=x.dtype)[...] = x


def test_complex_data_is_the_reason_not_the_steps_arguments(tmp_path):
    rng = np.random.default_rng(1)
    _array(tmp_path, (rng.standard_normal((32, 16)) + 1j * rng.standard_normal((32, 16))).astype(np.complex64))
    s = _run(tmp_path, {"path": "in.zarr"}, [{"op": "gaussian_filter", "sigma": 1.0}])
    assert s["path"] == "general"
    assert s["why_general"] == ("step 1 (gaussian_filter) on complex64 data: the engine's blocks take real data; "
                                "dask runs each step on the complex values")


def test_a_derivative_along_an_unevenly_spaced_time_names_the_coordinate(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("cftime")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cftime_range's rename
        time = xr.cftime_range("2000-01-01", periods=12, freq="MS", calendar="noleap")  # 31, 28, 31, ... days
    ds = xr.Dataset({"tas": (("time", "lat"), np.random.default_rng(0).random((12, 8)).astype("f4"))},
                    coords={"time": time, "lat": np.arange(8.0)})
    ds.to_zarr(str(tmp_path / "ds.zarr"), mode="w")
    s = _run(tmp_path, {"path": "ds.zarr", "variable": "tas"}, [{"op": "derivative", "dim": "time"}])
    assert s["path"] == "general"
    assert s["why_general"] == ("step 1 (derivative) along 'time', whose coordinate is not evenly spaced, takes "
                                "xarray's differentiate (weights that change along it), not one stencil the engine "
                                "runs")


@pytest.fixture
def field(tmp_path):
    x = np.random.default_rng(2).random((64, 24)).astype(np.float32)
    _array(tmp_path, x)
    return x


def test_a_scan_whose_carry_starts_before_the_region_says_so(tmp_path, field):
    inp = {"path": "in.zarr", "region": {0: [8, 40]}, "region_edges": "data"}
    s = _run(tmp_path, inp, [{"op": "gaussian_filter", "sigma": 1.0}, {"op": "cumsum", "axis": 0}])
    assert s["path"] == "general"
    assert s["why_general"].startswith("step 2 (cumsum) scans along axis 0, which input.region starts at 8: ")
    want = np.cumsum(ndi.gaussian_filter(field, 1.0), axis=0)[8:40]
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[:], want, rtol=1e-5)


@pytest.mark.parametrize("region, axis", [({0: [8, 40], 1: [0, 20]}, 1), ({1: [4, 20]}, 0)])
def test_a_scan_along_an_axis_the_region_does_not_cut_before_runs_on_the_engine(tmp_path, monkeypatch, field,
                                                                                  region, axis):
    small_engine_blocks(monkeypatch, 1000, 200)  # several blocks: the carries and halos cross them
    inp = {"path": "in.zarr", "region": region, "region_edges": "data"}
    s = _run(tmp_path, inp, [{"op": "gaussian_filter", "sigma": 1.0}, {"op": "cumsum", "axis": axis}])
    assert s["path"] == "direct", s.get("why_general")
    cut = tuple(slice(*region.get(a, [None, None])) for a in range(2))
    want = np.cumsum(ndi.gaussian_filter(field, 1.0), axis=axis)[cut]  # the whole array's edges
    assert not np.allclose(want, np.cumsum(ndi.gaussian_filter(field[cut], 1.0), axis=axis))
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[:], want, rtol=1e-5)


def test_the_python_face_says_complex_data_are_why_dask_writes_them():
    import dask.array as da
    import numpy as np

    import distconv as dc
    from distconv.engine.chain import stencil_chain

    x = da.from_array(np.ones((20, 20), np.complex64), chunks=10)
    why, chain = stencil_chain(dc.gaussian_filter(x, 1.0))
    assert chain is None and why.startswith("the data are complex64: the engine's blocks take real data")
