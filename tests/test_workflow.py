"""Every ready workflow on small data (values checked), bad workflows refused, resume."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

import distconv as dc
from distconv import batch as workflow
from distconv.engine import paths

ROOT = Path(__file__).resolve().parents[1]


def small(name, tmp_path, shape=None, chunks=None, **changes):
    doc = yaml.safe_load((ROOT / "workflows" / f"{name}.yaml").read_text())
    if shape is not None:
        doc["input"]["synthetic"].update(shape=shape, chunks=chunks)
    doc.update(changes)
    p = tmp_path / "workflows" / f"{name}.yaml"  # its paths say ../demo-data/: inside tmp_path
    p.parent.mkdir(exist_ok=True)
    p.write_text(yaml.safe_dump(doc))
    return workflow.load(p)


def read(path):
    return zarr.open_array(str(path), mode="r")[...]


def test_demo_gaussian_then_laplacian(tmp_path):
    wf = small("demo", tmp_path, shape=[96, 80], chunks=[32, 40])
    s = workflow.run(wf, progress=False)
    src, out = read(wf.input["path"]), read(wf.outputs["path"])
    ref = ndi.correlate(ndi.gaussian_filter(src, 2.0), [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode="nearest")
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert s["bytes_in"] == src.nbytes and (Path(wf.outputs["path"]) / workflow.MARKER).exists()


def test_smooth_stack_and_report(tmp_path):
    wf = small("smooth", tmp_path, shape=[3, 64, 70], chunks=[1, 32, 32])
    s = workflow.run(wf, progress=False)
    np.testing.assert_allclose(read(wf.outputs["path"]), ndi.gaussian_filter(read(wf.input["path"]), (0, 2, 2)),
                               rtol=1e-5, atol=1e-5)
    assert Path(s["report"]).read_text().startswith(paths.MARK_LINE + "\n# distconv report")
    assert Path(s["report"]).with_suffix(".thumbs.png").stat().st_size > 1000


def test_gradient_dataset_along_named_dim(tmp_path):
    import xarray as xr

    wf = small("gradient", tmp_path, shape=[4, 19, 36], chunks=[2, 19, 36])
    workflow.run(wf, progress=False)
    t = xr.open_zarr(wf.input["path"])["temperature"]
    h = float(t.lon[1] - t.lon[0])
    ref = dc.derivative(t.values, 2, 1, 8, spacing=h, mode="wrap")
    np.testing.assert_allclose(read(Path(wf.outputs["path"]) / "temperature"), ref, rtol=1e-4, atol=1e-3)


def test_cumulative_along_time(tmp_path):
    import xarray as xr

    wf = small("cumulative", tmp_path, shape=[10, 5, 6], chunks=[3, 5, 6])
    workflow.run(wf, progress=False)
    r = xr.open_zarr(wf.input["path"])["rain"].values
    np.testing.assert_allclose(xr.open_zarr(wf.outputs["path"])["rain"].values, np.cumsum(r, axis=0),
                               rtol=1e-5, atol=1e-5)


def test_hist_json_png(tmp_path):
    wf = small("hist", tmp_path, shape=[64, 64], chunks=[32, 32])
    workflow.run(wf, progress=False)
    h = json.loads(Path(wf.outputs["histogram"]["json"]).read_text())
    ref, edges = np.histogram(read(wf.outputs["path"]), bins=128)
    assert h["counts"] == ref.tolist()
    np.testing.assert_allclose(h["edges"], edges, rtol=1e-6)
    assert Path(wf.outputs["histogram"]["png"]).stat().st_size > 1000


def test_bovw_on_sample_images(tmp_path):
    wf = small("bovw", tmp_path)
    wf.input["images"] = ["camera", "coins", "moon"]
    wf.steps = [("bovw", {"patch": 8, "n_clusters": 8, "image_clusters": 2, "seed": 0})]
    s = workflow.run(wf, progress=False)
    doc = json.loads((Path(s["output"]) / "bovw.json").read_text())
    from distconv.batch.bovw import descriptors
    import skimage.data

    sizes = [len(descriptors(getattr(skimage.data, n)(), 8)) for n in ("camera", "coins", "moon")]
    assert [sum(h) for h in doc["histograms"]] == sizes
    assert len(doc["image_clusters"]) == 3


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d["input"].update(path="nowhere.zarr", synthetic=None) or d["input"].pop("synthetic"), "does not exist"),
    (lambda d: d["outputs"].update(path=d["input"]["path"]), "is the input path"),
    (lambda d: d["steps"].append({"op": "blur"}), "step 3: unknown op 'blur'"),
    (lambda d: d["steps"].append({"op": "guassian_filter"}), "unknown op 'guassian_filter' \\(did you mean 'gaussian_filter'\\?\\)"),
    (lambda d: d["outputs"].update(clusters=3), "outputs: unknown key 'clusters'"),
    (lambda d: d["steps"][0].update(sigmaa=1), "step 1 \\(gaussian_filter\\).*sigmaa"),
    (lambda d: d.update(outputz={}), "unknown key 'outputz'"),
    (lambda d: d["input"].update(region={0: [5000, 6000]}), r"input.region\[0\] is \[5000, 6000\]; it needs 0 <= start < stop <= 32"),
])
def test_bad_workflows_one_clear_error_nothing_written(tmp_path, mutate, match):
    doc = yaml.safe_load((ROOT / "workflows" / "demo.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[32, 32], chunks=[16, 16])
    mutate(doc)
    p = tmp_path / "workflows" / "bad.yaml"
    p.parent.mkdir()
    p.write_text(yaml.safe_dump(doc))
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(p), "--no-progress", "--cluster", str(_cpu_cluster(tmp_path))]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and __import__("re").search(match, res.stderr), res.stderr
    assert not (tmp_path / "demo-data" / "output.zarr").exists()


def _cpu_cluster(tmp_path):
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    return c


def test_resume_writes_only_missing_blocks_and_equals_clean_run(tmp_path, monkeypatch):
    import dask

    # blocks of 16 rows on a GPU too (GPU-sized blocks would merge them into one, and the marks
    # forged below name 16-row blocks)
    monkeypatch.setitem(dask.config.config, "distconv", {**dask.config.get("distconv", {}), "block-bytes": 0})
    wf = small("demo", tmp_path, shape=[96, 80], chunks=[16, 80])
    wf.chunks = [16, 80]
    wf.outputs["codec"] = "lz4"  # the general path (the engine writes zstd shards: test_direct.py)
    workflow.run(wf, progress=False)
    clean = read(wf.outputs["path"])
    out = Path(wf.outputs["path"])
    marks = out / ".distconv-blocks"
    _interrupt(out, marks)
    with pytest.raises(workflow.WorkflowError, match="incomplete"):
        workflow.run(wf, progress=False)
    s = workflow.run(wf, progress=False, resume=True)
    np.testing.assert_array_equal(read(out), clean)
    assert (out / workflow.MARKER).exists() and not marks.exists()
    # the summary counts what this run did: the 2 missing blocks of 6, not the whole array
    assert s["bytes_out"] == 2 * 16 * 80 * clean.itemsize
    assert s["resumed_bytes"] == 4 * 16 * 80 * clean.itemsize
    # resumed with other blocks (32 rows): no region of the marks is one of its blocks, so
    # every block is written again (a mark names the rows it covers, not a block number)
    _interrupt(out, marks)
    wf.chunks = [32, 80]
    s = workflow.run(wf, progress=False, resume=True)
    np.testing.assert_array_equal(read(out), clean)
    assert s["bytes_out"] == 96 * 80 * clean.itemsize and "resumed_bytes" not in s


def _interrupt(out, marks):
    """As an interrupted run leaves an output: no completion marker, rows 32:48 and 64:80 (16-row
    blocks 2 and 4) never written, the other blocks' marks there."""
    from distconv.engine.fencing import block_name

    from .helpers import leave_block_marks

    (out / workflow.MARKER).unlink()
    leave_block_marks(out, [block_name([(16 * i, 16 * i + 16), (0, 80)]) for i in range(6) if i not in (2, 4)])
    z = zarr.open_array(str(out), mode="r+")
    z[32:48] = 0
    z[64:80] = 0


def _load_doc(tmp_path, doc):
    p = tmp_path / "workflows" / "wf.yaml"  # the ready workflows' paths say ../demo-data/
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(doc))
    return workflow.load(p)


def _demo_doc(**steps0):
    doc = yaml.safe_load((ROOT / "workflows" / "demo.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[32, 32], chunks=[16, 16])
    doc["steps"][0].update(steps0)
    return doc


@pytest.mark.parametrize("change, match", [
    ({"sigma": -1.0}, r"step 1 \(gaussian_filter\): sigma must be >= 0"),
    ({"mode": "reflectt"}, r"step 1 \(gaussian_filter\): mode must be one of"),
    ({"sigmaa": 1.0}, r"unknown key 'sigmaa' \(did you mean 'sigma'\?\)"),
    ({"truncate": "x"}, r"truncate must be a real number"),
])
def test_bad_step_values_refused_at_load_before_anything_is_written(tmp_path, change, match):
    doc = _demo_doc(**change)
    with pytest.raises(workflow.WorkflowError, match=match):
        _load_doc(tmp_path, doc)
    assert not any(tmp_path.rglob("*.zarr"))


def test_every_problem_of_a_file_reported_at_once(tmp_path):
    doc = _demo_doc(sigma=-1.0)
    doc["steps"][1]["mode"] = "nowhere"
    doc["outputs"]["histogram"] = {"bins": 0}
    with pytest.raises(workflow.WorkflowError) as e:
        _load_doc(tmp_path, doc)
    msg = str(e.value)
    assert "step 1" in msg and "step 2" in msg and "outputs.histogram: bins must be a positive" in msg


def test_unsupported_synthetic_dtype_refused_before_it_is_written(tmp_path):
    doc = _demo_doc()
    doc["input"]["synthetic"]["dtype"] = "complex64"
    with pytest.raises(workflow.WorkflowError, match="input.synthetic.dtype 'complex64' is a dtype distconv "
                                                     "does not process"):
        _load_doc(tmp_path, doc)
    assert not any(tmp_path.rglob("*.zarr"))


@pytest.mark.parametrize("dtype", ["int16", "uint8", "int32", "bool", "float64"])
def test_synthetic_input_has_the_dtype_asked_for(tmp_path, dtype):
    """input.synthetic.dtype is the stored input's dtype; integers take many values, in range."""
    from distconv.batch.inputs import ensure_input

    doc = _demo_doc()
    doc["input"]["synthetic"]["dtype"] = dtype
    doc["steps"] = doc["steps"][:1]
    wf = _load_doc(tmp_path, doc)
    ensure_input(wf)
    data = read(wf.input["path"])
    assert data.dtype == np.dtype(dtype)
    if data.dtype.kind in "iu":
        assert len(np.unique(data)) > 50 and np.abs(data.astype(np.int64)).max() <= 1000
    gradient = yaml.safe_load((ROOT / "workflows" / "gradient.yaml").read_text())
    gradient["input"]["synthetic"].update(shape=[2, 9, 12], chunks=[1, 9, 12], dtype=dtype)
    (tmp_path / "ds").mkdir()
    wf = _load_doc(tmp_path / "ds", gradient)
    ensure_input(wf)
    import xarray as xr

    assert xr.open_zarr(wf.input["path"])[wf.input["variable"]].dtype == np.dtype(dtype)


def test_bad_synthetic_dtype_named_with_the_other_problems(tmp_path):
    """A misspelt dtype names its key and value, and the steps are still checked."""
    doc = _demo_doc(sigma=-1.0)
    doc["input"]["synthetic"]["dtype"] = "flaot32"
    with pytest.raises(workflow.WorkflowError) as e:
        _load_doc(tmp_path, doc)
    msg = str(e.value)
    assert "input.synthetic.dtype 'flaot32' is not a dtype (did you mean 'float32'?)" in msg
    assert "step 1 (gaussian_filter): sigma must be >= 0" in msg
    assert not any(tmp_path.rglob("*.zarr"))


def test_ragged_weights_name_the_step_and_key(tmp_path):
    doc = _demo_doc()
    doc["steps"][1]["weights"] = [[1, 2], [3]]
    with pytest.raises(workflow.WorkflowError, match=r"step 2 \(correlate\): weights must be a rectangular "
                                                     r"array \(every row of one length\), got \[\[1, 2\], \[3\]\]"):
        _load_doc(tmp_path, doc)


def test_float16_input_said_once(tmp_path):
    """An input of a dtype distconv does not process: one message (the steps are checked on a
    stand-in, not refused again for the same dtype)."""
    z = zarr.create_array(str(tmp_path / "half.zarr"), shape=(32, 32), chunks=(16, 16), dtype="float16")
    z[:] = 1
    doc = _demo_doc()
    doc["input"] = {"path": str(tmp_path / "half.zarr")}
    with pytest.raises(workflow.WorkflowError) as e:
        _load_doc(tmp_path, doc)
    assert str(e.value) == ("the input has dtype float16, which distconv does not process; use "
                            "float32/float64, integers or bool")
    doc["input"] = {"path": str(tmp_path / "h.zarr"), "synthetic": {"shape": [8, 8], "chunks": [8, 8],
                                                                    "dtype": "float16"}}
    with pytest.raises(workflow.WorkflowError) as e:
        _load_doc(tmp_path, doc)
    assert str(e.value).count("float16") == 1 and "input.synthetic.dtype 'float16'" in str(e.value)


def test_dataset_variable_and_dims_checked_at_load(tmp_path):
    doc = yaml.safe_load((ROOT / "workflows" / "gradient.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[2, 9, 12], chunks=[1, 9, 12])
    doc["steps"][0]["dim"] = "longitude"
    with pytest.raises(workflow.WorkflowError, match="'longitude' is not a dimension"):
        _load_doc(tmp_path, doc)
    doc["steps"][0]["dim"] = "lon"
    wf = _load_doc(tmp_path, doc)
    workflow.run(wf, progress=False)  # writes the input
    del doc["input"]["synthetic"]  # (another variable would be another synthetic input)
    doc["input"]["variable"] = "tempreature"
    with pytest.raises(workflow.WorkflowError, match="input.variable 'tempreature' is not in"):
        _load_doc(tmp_path, doc)


def test_dataset_workflow_output_opens_in_xarray_with_coords_and_units(tmp_path):
    import warnings

    import xarray as xr

    wf = small("gradient", tmp_path, shape=[3, 19, 36], chunks=[1, 19, 36])
    workflow.run(wf, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no consolidated-metadata warning either
        out = xr.open_zarr(wf.outputs["path"])
        src = xr.open_zarr(wf.input["path"])
    var = out["temperature"]
    assert var.dims == ("time", "lat", "lon")
    for d in var.dims:
        np.testing.assert_array_equal(out[d].values, src[d].values)
    assert var.attrs["units"] == "K / degrees_east"
    ref = src["temperature"].distconv.derivative("lon", accuracy=8, mode="wrap")
    np.testing.assert_allclose(var.values, ref.values, rtol=1e-4, atol=1e-4)
    again = workflow.load(Path(wf.source))
    workflow.run(again, overwrite=True, progress=False)  # its own dataset output is replaceable
