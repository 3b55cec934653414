"""Data integrity of `distconv run` outputs: the result dtype on every path, resume only of the
same job, overwrite only of distconv's own files at any depth, interrupted overwrites taken up
again, regions checked, every problem of the workflow and cluster files at once, exit codes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr
from click.testing import CliRunner

from distconv import batch
from distconv.cli import main
from distconv.engine.marks import BLOCKS, COMPLETE, OWNER
from distconv.engine.location import Location

from .helpers import small_engine_blocks


def _input(tmp_path, data, chunks, name="in.zarr"):
    z = zarr.create_array(str(tmp_path / name), shape=data.shape, chunks=chunks, dtype=data.dtype)
    z[...] = data
    return name


def _wf(tmp_path, steps, chunks="auto", inp="in.zarr", **extra):
    doc = {"input": {"path": inp, **extra.pop("input", {})}, "chunks": chunks, "steps": steps,
           "outputs": {"path": "out.zarr", **extra.pop("outputs", {})}, **extra}
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _read(path):
    return zarr.open_array(str(path), mode="r")[...]


def _cluster(tmp_path, processes=False, workers=1):
    c = tmp_path / "cluster.yaml"
    c.write_text(yaml.safe_dump({"cluster": {"type": "cpu", "n_workers": workers, "threads_per_worker": 1,
                                             "processes": processes, "dashboard_address": "127.0.0.1:0"}}))
    return c


def _cli(tmp_path, wf, *flags, processes=False):
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress",
           "--cluster", str(_cluster(tmp_path, processes)), *flags]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


# 0. every output dtype rule of the Python API holds on the direct and the general path

DTYPE_CASES = [
    ("int32", [{"op": "gaussian_filter", "sigma": 1.5, "output": "float32"}],
     lambda x: ndi.gaussian_filter(x, 1.5, output=np.float32)),
    ("uint16", [{"op": "sobel", "axis": 0, "output": "float32"}, {"op": "gaussian_filter", "sigma": 1.0}],
     lambda x: ndi.gaussian_filter(ndi.sobel(x, 0, output=np.float32), 1.0)),
    ("int32", [{"op": "uniform_filter", "size": 3}, {"op": "correlate", "weights": [[1, 2], [3, -4]],
                                                      "output": "float64"}],
     lambda x: ndi.correlate(ndi.uniform_filter(x, 3), np.array([[1, 2], [3, -4]], float), output=np.float64)),
    ("uint16", [{"op": "gaussian_filter", "sigma": 1.0}], lambda x: ndi.gaussian_filter(x, 1.0)),
]


@pytest.mark.parametrize("codec, path", [("zstd", "direct"), ("lz4", "general")])
@pytest.mark.parametrize("dtype, steps, ref", DTYPE_CASES)
def test_step_output_dtypes_hold_on_every_path(tmp_path, monkeypatch, codec, path, dtype, steps, ref):
    small_engine_blocks(monkeypatch, 40_000, 4000)  # several blocks and shards
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1000, (203, 151)).astype(dtype)
    _input(tmp_path, x, (32, 64))
    hist = {"bins": 16, "range": [0.0, 1000.0], "json": "h.json"}
    wf = batch.load(_wf(tmp_path, steps, outputs={"histogram": hist, "codec": codec}))
    s = batch.run(wf, progress=False)
    assert s["path"] == path
    want = ref(x)
    got = _read(tmp_path / "out.zarr")
    assert got.dtype == want.dtype and s["dtype"] == str(want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3 if want.dtype.kind == "f" else 1)
    counts = json.loads((tmp_path / "h.json").read_text())["counts"]
    assert counts == np.histogram(got, bins=16, range=(0.0, 1000.0))[0].tolist()


# 1. and 5. resume continues only the same job; a finished one is nothing to do

def _interrupted(tmp_path, steps):
    """A finished run, made to look interrupted: no completion mark, no block marks (so a
    resume writes every block)."""
    x = np.random.default_rng(1).standard_normal((96, 64)).astype(np.float32)
    _input(tmp_path, x, (16, 64))
    wf = _wf(tmp_path, steps, None)
    batch.run(batch.load(wf), progress=False)
    (tmp_path / "out.zarr" / COMPLETE).unlink()
    return x, wf


def test_resume_after_the_steps_changed_is_refused_naming_the_change(tmp_path):
    x, wf = _interrupted(tmp_path, [{"op": "gaussian_filter", "sigma": 4.0}])
    before = _read(tmp_path / "out.zarr")
    wf.write_text(wf.read_text().replace("sigma: 4.0", "sigma: 1.0"))
    with pytest.raises(batch.WorkflowError, match=r"another job.*steps\[0\]\[1\]\.sigma: 4\.0 then, 1\.0 now"):
        batch.run(batch.load(wf), progress=False, resume=True)
    np.testing.assert_array_equal(_read(tmp_path / "out.zarr"), before)  # untouched
    res = _cli(tmp_path, wf, "--resume")
    assert res.returncode == 2 and "sigma" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    # --resume --overwrite: resume when it is this job's, else start again
    batch.run(batch.load(wf), progress=False, resume=True, overwrite=True)
    np.testing.assert_allclose(_read(tmp_path / "out.zarr"), ndi.gaussian_filter(x, 1.0), rtol=1e-5, atol=1e-5)
    assert (tmp_path / "out.zarr" / COMPLETE).exists()


def test_resume_after_the_input_changed_is_refused(tmp_path):
    _, wf = _interrupted(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}])
    time.sleep(0.01)
    z = zarr.open_array(str(tmp_path / "in.zarr"), mode="r+")
    z[0:16] = 0.0
    with pytest.raises(batch.WorkflowError, match=r"another job.*input\.stamp"):
        batch.run(batch.load(wf), progress=False, resume=True)


def test_resume_of_the_same_job_finishes_and_a_finished_one_is_nothing_to_do(tmp_path):
    x, wf = _interrupted(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}])
    s = batch.run(batch.load(wf), progress=False, resume=True)
    np.testing.assert_allclose(_read(tmp_path / "out.zarr"), ndi.gaussian_filter(x, 1.0), rtol=1e-5, atol=1e-5)
    assert s["path"] == "direct" and s["bytes_out"] == x.nbytes
    res = _cli(tmp_path, wf, "--resume")
    assert res.returncode == 0 and "nothing to do" in res.stdout and not res.stderr.strip(), res
    res = _cli(tmp_path, wf, "--resume", "--overwrite")
    assert res.returncode == 0 and "nothing to do" in res.stdout, res


def test_an_output_of_an_older_distconv_is_not_resumed(tmp_path):
    _, wf = _interrupted(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}])
    mark = tmp_path / "out.zarr" / OWNER
    mark.write_text(json.dumps({"by": "distconv", "created": 0}))
    with pytest.raises(batch.WorkflowError, match="records no job"):
        batch.run(batch.load(wf), progress=False, resume=True)


# 2. --overwrite removes only distconv's own files, at any depth

@pytest.mark.parametrize("planted", ["c/NOTES.txt", "c/0/NOTES.txt", "c/99/0", ".distconv-blocks/mine.txt",
                                     "c/0/0.bak"])
def test_overwrite_refuses_a_user_file_at_any_depth_before_deleting_anything(tmp_path, planted):
    x = np.random.default_rng(2).standard_normal((64, 40)).astype(np.float32)
    _input(tmp_path, x, (16, 40))
    wf = batch.load(_wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}], None))
    batch.run(wf, progress=False)
    out = tmp_path / "out.zarr"
    (out / planted).parent.mkdir(parents=True, exist_ok=True)
    (out / planted).write_text("important")
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    with pytest.raises(batch.WorkflowError, match=f"holds {planted!r}"):
        batch.run(wf, progress=False, overwrite=True)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert (out / planted).read_text() == "important"


def test_overwrite_of_a_dataset_output_checks_inside_every_array(tmp_path):
    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflows" / "gradient.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[4, 10, 12], chunks=[2, 10, 12])
    doc["input"]["path"], doc["outputs"]["path"] = "ds.zarr", "out.zarr"
    p = tmp_path / "g.yaml"
    p.write_text(yaml.safe_dump(doc))
    wf = batch.load(p)
    batch.run(wf, progress=False)
    var = doc["input"]["variable"]
    batch.run(wf, progress=False, overwrite=True)  # its own files only: replaced
    (tmp_path / "out.zarr" / var / "c" / "keep.txt").write_text("x")
    with pytest.raises(batch.WorkflowError, match="keep.txt"):
        batch.run(wf, progress=False, overwrite=True)
    assert (tmp_path / "out.zarr" / var / "c" / "keep.txt").exists()


# 3. an interrupted --overwrite leaves an output that --resume or --overwrite takes up again

@pytest.mark.parametrize("stop_after", [1, 2, 3])
@pytest.mark.parametrize("then", ["resume", "overwrite"])
def test_an_interrupted_overwrite_is_taken_up_again(tmp_path, monkeypatch, stop_after, then):
    x = np.random.default_rng(3).standard_normal((64, 40)).astype(np.float32)
    _input(tmp_path, x, (16, 40))
    wf = batch.load(_wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}], None))
    batch.run(wf, progress=False)
    real, calls = Location.remove_files, []

    def interrupted(self, rels):
        calls.append(rels)
        if len(calls) > stop_after:
            raise KeyboardInterrupt
        real(self, rels)

    monkeypatch.setattr(Location, "remove_files", interrupted)
    with pytest.raises(KeyboardInterrupt):
        batch.run(wf, progress=False, overwrite=True)
    monkeypatch.setattr(Location, "remove_files", real)
    out = tmp_path / "out.zarr"
    assert (out / OWNER).is_file() and not (out / COMPLETE).exists()
    with pytest.raises(batch.WorkflowError, match="half removed"):
        batch.run(wf, progress=False)
    batch.run(wf, progress=False, **{then: True})
    np.testing.assert_allclose(_read(out), ndi.gaussian_filter(x, 1.0), rtol=1e-5, atol=1e-5)
    assert (out / COMPLETE).exists()


# 4. regions are checked against the array; cut before or after the steps

@pytest.mark.parametrize("region, match", [
    ({5: [0, 10]}, r"input.region\[5\]: the key must be an axis 0..1"),
    ({"y": [0, 10]}, r"input.region\['y'\].*names need input.variable"),
    ({0: [10, 5000]}, r"input.region\[0\] is \[10, 5000\]; it needs 0 <= start < stop <= 48"),
    ({0: [10, 5]}, r"input.region\[0\] is \[10, 5\]"),
    ({0: "all"}, r"input.region\[0\] must be \[start, stop\]"),
])
def test_a_region_that_does_not_fit_is_refused(tmp_path, region, match):
    _input(tmp_path, np.zeros((48, 40), np.float32), (16, 40))
    with pytest.raises(batch.WorkflowError, match=match):
        batch.load(_wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}], input={"region": region}))


def test_every_region_problem_at_once(tmp_path):
    _input(tmp_path, np.zeros((48, 40), np.float32), (16, 40))
    with pytest.raises(batch.WorkflowError) as e:
        batch.load(_wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}],
                       input={"region": {0: [0, 100], 7: [0, 1]}, "region_edges": "edges"}))
    msg = str(e.value)
    assert "input.region[0]" in msg and "input.region[7]" in msg and "region_edges" in msg


@pytest.mark.parametrize("edges", ["mode", "data"])
def test_region_cut_before_or_after_the_steps(tmp_path, edges):
    x = np.random.default_rng(4).standard_normal((80, 60)).astype(np.float32)
    _input(tmp_path, x, (16, 32))
    steps = [{"op": "gaussian_filter", "sigma": 2.0}, {"op": "cumsum", "axis": 0}]
    wf = batch.load(_wf(tmp_path, steps, None, input={"region": {0: [20, 57], 1: [None, 41]},
                                                       "region_edges": edges}))
    s = batch.run(wf, progress=False)
    if edges == "mode":
        ref = np.cumsum(ndi.gaussian_filter(x[20:57, :41], 2.0), axis=0)
    else:
        ref = np.cumsum(ndi.gaussian_filter(x, 2.0), axis=0)[20:57, :41]
    np.testing.assert_allclose(_read(tmp_path / "out.zarr"), ref, rtol=1e-4, atol=1e-4)
    assert s["bytes_in"] == 37 * 41 * 4


# 6. Ctrl-C: one line, no traceback, exit 130; the run is taken up again by --resume

def _slow_workflow(tmp_path):
    x = np.random.default_rng(5).standard_normal((2048, 512)).astype(np.float32)
    _input(tmp_path, x, (64, 512))
    return x, _wf(tmp_path, [{"op": "median_filter", "size": 7}], [64, 512])


def _started(tmp_path, wf):
    """`distconv run` on two worker processes, in a process group of its own as a terminal's
    job is (Ctrl-C there reaches every process of the group)."""
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress",
           "--cluster", str(_cluster(tmp_path, processes=True, workers=2))]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            start_new_session=True)


@pytest.mark.slow
def test_ctrl_c_mid_job_is_one_line_and_resume_finishes(tmp_path):
    x, wf = _slow_workflow(tmp_path)
    proc = _started(tmp_path, wf)
    marks = tmp_path / "out.zarr" / BLOCKS
    deadline = time.time() + 120
    while time.time() < deadline and not (marks.is_dir() and any(marks.iterdir())):
        time.sleep(0.005)
    written = len(list(marks.iterdir()))
    assert 0 < written < 32, "the interrupt must land mid-job"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert "--resume" in err
    res = _cli(tmp_path, wf, "--resume")
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(_read(tmp_path / "out.zarr"), ndi.median_filter(x, 7))


@pytest.mark.slow
def test_early_ctrl_c_is_one_line(tmp_path):
    import psutil

    _, wf = _slow_workflow(tmp_path)
    proc = _started(tmp_path, wf)
    deadline = time.time() + 60  # the command has started the server workers fork from
    while time.time() < deadline and not psutil.Process(proc.pid).children():
        time.sleep(0.002)
    time.sleep(0.3)  # past that start (cluster.py says why a Ctrl-C in its few ms may be lost)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err


# 7. every problem of the workflow file and the cluster file, in one message

def test_every_problem_of_the_workflow_and_cluster_files_at_once(tmp_path):
    _input(tmp_path, np.zeros((48, 40), np.float32), (16, 40))
    wf = _wf(tmp_path, [{"op": "gaussian_filter", "sigma": -1}, {"op": "cumsum", "axis": 5},
                        {"op": "gaussian_filter", "sigma": "two"}],
             outputs={"codec": "brotli", "histogram": {"bins": 0, "range": [0, 1]}}, device="tpu")
    cluster = tmp_path / "bad-cluster.yaml"
    cluster.write_text("cluster:\n  tpye: cpu\n  n_wrokers: 2\n")
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(cluster)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    for part in ("outputs.codec", "bins must be", "device must be", "step 1 (gaussian_filter): sigma",
                 "step 2 (cumsum): axis", "step 3 (gaussian_filter): sigma", "'tpye'", "'n_wrokers'"):
        assert part in res.stderr, (part, res.stderr)
    assert not (tmp_path / "out.zarr").exists()


# 8. an internal failure says so and keeps its traceback

def test_an_internal_error_during_a_run_is_not_reported_as_the_users(tmp_path, monkeypatch):
    _input(tmp_path, np.zeros((48, 40), np.float32), (16, 40))
    wf = _wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}])

    def broken(*a, **k):
        raise ValueError("a bug deep in a worker")

    monkeypatch.setattr(batch, "run", broken)
    res = CliRunner().invoke(main, ["run", str(wf), "--cluster", str(_cluster(tmp_path))])
    assert res.exit_code == 1, res.output
    assert "internal error" in res.output and "Traceback" in res.output and "a bug deep" in res.output


# 9. smaller ones

def test_the_summary_names_the_path_its_reason_and_the_derivative_step(tmp_path):
    _input(tmp_path, np.random.default_rng(6).standard_normal((64, 40)).astype(np.float32), (16, 40))
    wf = _wf(tmp_path, [{"op": "derivative", "axis": 1}], None)
    res = _cli(tmp_path, wf)
    assert res.returncode == 0, res.stderr
    assert "path: direct" in res.stdout and "stages (s, summed over blocks)" in res.stdout
    assert "  derivative-" in res.stdout, res.stdout  # the job's task prefix: its steps
    res = _cli(tmp_path, _wf(tmp_path, [{"op": "derivative", "axis": 1}], None, outputs={"codec": "lz4"}),
               "--overwrite")
    assert "path: general (outputs.codec is 'lz4')" in res.stdout, res.stdout
    assert "  distconv-derivative" in res.stdout, res.stdout  # the general path: the ops' own names


def test_a_dataset_output_keeps_the_datasets_attributes(tmp_path):
    import xarray as xr

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflows" / "gradient.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[4, 10, 12], chunks=[2, 10, 12])
    p = tmp_path / "workflows" / "g.yaml"  # its paths say ../demo-data/
    p.parent.mkdir()
    p.write_text(yaml.safe_dump(doc))
    wf = batch.load(p)
    batch.run(wf, progress=False)
    assert xr.open_zarr(wf.outputs["path"]).attrs["title"] == xr.open_zarr(wf.input["path"]).attrs["title"]


def test_hist_workflow_prints_no_warning(tmp_path):
    import warnings

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflows" / "hist.yaml").read_text())
    doc["input"]["synthetic"].update(shape=[64, 64], chunks=[32, 32])
    p = tmp_path / "workflows" / "h.yaml"  # its paths say ../demo-data/
    p.parent.mkdir()
    p.write_text(yaml.safe_dump(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        batch.run(batch.load(p), progress=False)


def test_bincount_warning_asks_for_nothing_bincount_does_not_take():
    import dask.array as da

    import distconv as dc

    with pytest.warns(UserWarning) as got:
        dc.bincount(da.from_array(np.array([1, 2, 2, 5]), chunks=2))
    assert all("range=" not in str(w.message) for w in got)
