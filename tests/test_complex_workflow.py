"""A workflow on complex data runs the steps that take complex data (as the Python functions
do, matching scipy) and names precisely the steps, or the histogram, that cannot."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch


@pytest.fixture
def complex_input(tmp_path):
    x = (np.random.default_rng(3).standard_normal((96, 64))
         + 1j * np.random.default_rng(4).standard_normal((96, 64))).astype(np.complex64)
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(32, 64), dtype=x.dtype)
    z[...] = x
    return x


def _wf(tmp_path, steps, **outputs):
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump({"input": {"path": "in.zarr"}, "steps": steps,
                                 "outputs": {"path": "out.zarr", **outputs}}))
    return p


def test_steps_that_cannot_take_complex_data_are_named_and_the_others_are_not(tmp_path, complex_input):
    wf = _wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}, {"op": "median_filter", "size": 3},
                        {"op": "uniform_filter", "size": 3}], histogram={"bins": 4, "range": [0, 1], "json": "h.json"})
    with pytest.raises(batch.WorkflowError) as e:
        batch.load(wf)
    msg = str(e.value)
    assert "step 2 (median_filter)" in msg and "complex64" in msg, msg
    assert "step 1" not in msg and "step 3" not in msg and "does not process" not in msg, msg
    assert "outputs.histogram" in msg and "real values only" in msg, msg


def test_a_workflow_of_steps_that_take_complex_data_runs_and_matches_scipy(tmp_path, complex_input):
    wf = _wf(tmp_path, [{"op": "gaussian_filter", "sigma": 1.0}])
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"cluster": {"type": "cpu", "n_workers": 1, "threads_per_worker": 1,
                                                   "processes": False, "dashboard_address": "127.0.0.1:0"}}))
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress", "--cluster",
                          str(cluster)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr
    got = zarr.open_array(str(tmp_path / "out.zarr"))[...]
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, ndi.gaussian_filter(complex_input, 1.0), rtol=1e-5, atol=1e-5)
