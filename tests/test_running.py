"""A cluster kept running between runs: `distconv cluster start` once, runs with the same
cluster config join it (no start-up of their own), `stop` ends it and its workers."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr


def _cli(tmp_path, *args):
    env = {**os.environ, "DASK_DISTCONV__CLUSTER_STATE": str(tmp_path / "state" / "cluster.json")}
    return subprocess.run([sys.executable, "-m", "distconv.cli", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)


@pytest.mark.slow
def test_a_kept_cluster_serves_runs_and_stops(tmp_path):
    import json

    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    res = _cli(tmp_path, "cluster", "start", "--cluster", str(c))
    assert res.returncode == 0 and "cluster started at tcp://" in res.stdout, res.stderr
    pid = json.loads((tmp_path / "state" / "cluster.json").read_text())["pid"]
    try:
        again = _cli(tmp_path, "cluster", "start", "--cluster", str(c))
        assert again.returncode == 0 and "already running" in again.stdout
        status = _cli(tmp_path, "cluster", "status")
        assert "1 workers" in status.stdout and "2 threads" in status.stdout, status.stdout
        wf = tmp_path / "wf.yaml"
        wf.write_text("input:\n  path: in.zarr\n  synthetic: {shape: [64, 40], chunks: [16, 40]}\n"
                      "steps:\n  - {op: gaussian_filter, sigma: 1.5}\noutputs:\n  path: out.zarr\n")
        run = _cli(tmp_path, "run", str(wf), "--cluster", str(c), "--no-progress")
        assert run.returncode == 0, run.stderr
        assert "joined the running cluster at tcp://" in run.stdout, run.stdout
        x = zarr.open_array(str(tmp_path / "in.zarr"))[...]
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 1.5),
                                   rtol=1e-5, atol=1e-5)
        other = tmp_path / "other.yaml"
        other.write_text("cluster:\n  type: cpu\n  n_workers: 2\n  processes: false\n")
        refused = _cli(tmp_path, "cluster", "start", "--cluster", str(other))
        assert refused.returncode == 2 and "of another config is running" in refused.stderr
    finally:
        stop = _cli(tmp_path, "cluster", "stop")
    assert stop.returncode == 0 and "stopped the cluster" in stop.stdout, stop.stderr
    assert not (tmp_path / "state" / "cluster.json").exists()
    with pytest.raises(OSError):
        os.kill(pid, 0)
    assert "no cluster is kept running" in _cli(tmp_path, "cluster", "status").stdout
