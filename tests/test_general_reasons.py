"""The general path says why in the user's words, and the reason is true."""

import numpy as np
import pytest
import yaml

import distconv as dc
from distconv import batch


def _run(tmp_path, doc):
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc))
    return batch.run(batch.load(tmp_path / "wf.yaml"), progress=False)


def test_nan_policy_omit_runs_and_says_it_is_not_a_stencil(tmp_path):
    """An array workflow with nan_policy: omit runs on the general path (it failed planning
    the direct one) and says so truly, as a dataset one does."""
    import zarr

    synth = {"shape": [32, 24], "chunks": [16, 24], "dtype": "float32"}
    s = _run(tmp_path, {"input": {"path": "in.zarr", "synthetic": synth},
                        "steps": [{"op": "gaussian_filter", "sigma": 1.0, "nan_policy": "omit"}],
                        "outputs": {"path": "out.zarr"}})
    assert s["path"] == "general"
    assert s["why_general"] == ("step 1 (gaussian_filter) has nan_policy: omit, a normalized convolution "
                                "(two filters and a division) that the engine does not run")
    src = zarr.open_array(str(tmp_path / "in.zarr"))[:]
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[:],
                               dc.gaussian_filter(src, 1.0), rtol=1e-5, atol=1e-5)
    ds = {"input": {"path": "ds.zarr", "variable": "t", "synthetic": {**synth, "dims": ["lat", "lon"]}},
          "steps": [{"op": "gaussian_filter", "sigma": {"lat": 1.0, "lon": 1.0}, "nan_policy": "omit"}],
          "outputs": {"path": "dsout.zarr"}}
    assert _run(tmp_path, ds)["why_general"] == s["why_general"]


def test_laplace_over_some_dims_says_it_is_a_sum_of_derivatives(tmp_path):
    s = _run(tmp_path, {"input": {"path": "ds.zarr", "variable": "t",
                                  "synthetic": {"shape": [2, 16, 16], "chunks": [1, 16, 16]}},
                        "steps": [{"op": "laplace", "dims": ["lat", "lon"]}],
                        "outputs": {"path": "out.zarr"}})
    assert s["path"] == "general"
    assert s["why_general"] == ("step 1 (laplace) over some of the input's dims, or with a mode per dim, "
                                "is a sum of second derivatives, not one stencil the engine runs")


def test_decoded_input_reason_names_no_internal_class(tmp_path):
    xr = pytest.importorskip("xarray")
    a = np.random.default_rng(0).random((16, 16)).astype(np.float32)
    ds = xr.Dataset({"t": (("y", "x"), a)}, coords={"y": np.arange(16.0), "x": np.arange(16.0)})
    ds.t.encoding = {"scale_factor": 0.5, "dtype": "int16", "_FillValue": -1}
    ds.to_zarr(str(tmp_path / "in.zarr"), mode="w", consolidated=False)
    t = xr.open_zarr(str(tmp_path / "in.zarr"), consolidated=False).t
    report = dc.to_zarr(t.distconv.gaussian_filter(1.0), str(tmp_path / "out.zarr"))
    assert report["path"] == "general"
    assert report["why"].startswith("the input's values are decoded by xarray as it reads them (CF decoding")
    assert "Array" not in report["why"]  # no class of xarray's internals
