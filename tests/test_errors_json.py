"""--json carries each run's lines of the cluster's log, and is written when a run fails: the
runs that finished, then the failed one's line, exit code and log."""

import json
import os
import subprocess
import sys

import numpy as np
import yaml
import zarr


def test_a_failed_run_is_in_the_json_with_its_log_after_the_runs_that_finished(tmp_path):
    x = np.random.default_rng(0).standard_normal((128, 100)).astype(np.float32)
    for name in ("good", "bad"):
        zarr.create_array(str(tmp_path / f"{name}.zarr"), shape=x.shape, chunks=(32, 100), dtype=x.dtype)[...] = x
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({
            "name": name, "input": {"path": f"{name}.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}],
            "outputs": {"path": f"{name}-out.zarr"}}))
    chunk = tmp_path / "bad.zarr" / "c" / "2" / "0"
    chunk.write_bytes(chunk.read_bytes()[:20])  # a truncated zstd frame
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"cluster": {
        "type": "cpu", "n_workers": 1, "threads_per_worker": 1, "processes": False,
        "dashboard_address": "127.0.0.1:0"}}))
    env = {**os.environ, "DASK_DISTCONV__CLUSTER_STATE": str(tmp_path / "state" / "cluster.json")}
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", "good.yaml", "bad.yaml", "--no-progress",
                          "--cluster", "cluster.yaml", "--json", "run.json"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 2, res.stderr
    good, bad = json.loads((tmp_path / "run.json").read_text())
    assert good["workflow"] == "good" and good["bytes_out"] > 0 and isinstance(good["log"], list)
    assert bad["workflow"] == "bad" and bad["exit_code"] == 2
    assert "'c/2/0'" in bad["error"] and bad["error"] in res.stderr
    assert any("Compute Failed" in line for line in bad["log"]), bad["log"]
    assert not any("Compute Failed" in line for line in good["log"])  # the run's own lines only
