"""A workflow run opens its input once (issue 51): the check, the job's identity, the plan and
the run all read the input batch.inputs opened for the workflow, handed down, not reopened."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import xarray as xr
import yaml
import zarr

from distconv import batch
from distconv.batch import inputs
from distconv.engine import storage


@pytest.fixture
def opens(monkeypatch):
    """Counts of the input's opens, by kind: its metadata read as JSON (a local array), the
    lazy dask array over it (zarr-python; the general path), a dataset."""
    counts = {"metadata": 0, "array": 0, "dataset": 0}
    real_array, real_dataset, real_read = storage.open_array, inputs.open_dataset, inputs.read_stored

    def open_array(path):
        counts["array"] += 1
        return real_array(path)

    def read_stored(path):
        counts["metadata"] += 1
        return real_read(path)

    monkeypatch.setattr(inputs, "read_stored", read_stored)

    def open_dataset(path):
        counts["dataset"] += 1
        return real_dataset(path)

    monkeypatch.setattr(storage, "open_array", open_array)
    monkeypatch.setattr(inputs, "open_dataset", open_dataset)
    return counts


def _load(tmp_path, doc):
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    return batch.load(str(p))


@pytest.mark.parametrize("steps, region", [
    ([{"op": "gaussian_filter", "sigma": 1.5}], None),                       # the direct path
    ([{"op": "gaussian_filter", "sigma": 1.5}], {"0": [3, 40]}),             # a region cut first
    ([{"op": "gaussian_filter", "sigma": 1.5, "mode": "wrap"}], None),       # the general path
    ([{"op": "uniform_filter", "size": 3}, {"op": "cumsum", "axis": 0}], None),
])
def test_an_array_workflow_opens_its_input_once(tmp_path, opens, steps, region):
    x = np.random.default_rng(51).standard_normal((48, 30)).astype(np.float32)
    zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(8, 30))
    inp = {"path": "in.zarr", **({"region": region} if region else {})}
    wf = _load(tmp_path, {"input": inp, "steps": steps, "outputs": {"path": "out.zarr"}})
    job = batch.output_identity(wf)                 # as `distconv run` checks before the cluster starts
    batch.preflight(wf, None, False, job)
    s = batch.run(wf, progress=False, job=job)
    # the engine plans from the metadata alone; dask's general path opens the array once more
    general = s.get("path") == "general"
    assert opens == {"metadata": 1, "array": int(general), "dataset": 0}, (opens, s.get("path"))
    want = x[3:40] if region else x
    for op in steps:
        kw = {k: v for k, v in op.items() if k != "op"}
        want = (np.cumsum(want, axis=kw["axis"]) if op["op"] == "cumsum"
                else getattr(ndi, op["op"])(want, **kw))
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], want, rtol=1e-5, atol=1e-5)


def test_a_dataset_workflow_opens_its_input_once(tmp_path, opens):
    t = np.random.default_rng(52).standard_normal((6, 19, 24)).astype(np.float32)
    xr.Dataset({"t": (("time", "lat", "lon"), t)}, attrs={"title": "kept"}).chunk(
        {"time": 2}).to_zarr(str(tmp_path / "in.zarr"), mode="w", consolidated=True)
    wf = _load(tmp_path, {"input": {"path": "in.zarr", "variable": "t"},
                          "steps": [{"op": "gaussian_filter", "sigma": {"lat": 1.0, "lon": 2.0}}],
                          "outputs": {"path": "out.zarr"}})
    job = batch.output_identity(wf)
    batch.preflight(wf, None, False, job)
    s = batch.run(wf, progress=False, job=job)
    assert s["path"] == "direct" and opens == {"metadata": 0, "array": 0, "dataset": 1}, (opens, s)
    out = xr.open_zarr(str(tmp_path / "out.zarr"))
    assert out.attrs["title"] == "kept"
    np.testing.assert_allclose(out.t.values, ndi.gaussian_filter(t, (0, 1.0, 2.0)), rtol=1e-5, atol=1e-5)


def test_a_synthetic_input_is_opened_once_it_is_written(tmp_path, opens):
    wf = _load(tmp_path, {"input": {"path": "in.zarr", "synthetic": {"shape": [40, 24], "chunks": [8, 24]}},
                          "steps": [{"op": "gaussian_filter", "sigma": 1.0}], "outputs": {"path": "out.zarr"}})
    job = batch.output_identity(wf)
    batch.preflight(wf, None, False, job)
    s = batch.run(wf, progress=False, job=job)
    assert s["path"] == "direct" and opens == {"metadata": 1, "array": 0, "dataset": 0}, (opens, s)
    x = zarr.open_array(str(tmp_path / "in.zarr"))[...]
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 1.0),
                               rtol=1e-5, atol=1e-5)
