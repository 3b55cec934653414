"""`distconv run --dry-run`: the run's check, then what it would do; no cluster, nothing written."""

import json
import subprocess
import sys

import numpy as np
import zarr

CLUSTER = "cluster:\n  type: cpu\n  n_workers: 1\n  dashboard_address: '127.0.0.1:0'\n"


def _dry(tmp_path, *names, extra=()):
    code = ("import json, sys\nfrom distconv.session import command\n"
            f"params = dict(workflow_paths={list(names)!r}, cluster_path='cluster.yaml', overwrite={'--overwrite' in extra},"
            f" resume={'--resume' in extra}, no_progress=True, json_path=None, report_dir=None, dry_run=True)\n"
            "code = command.run(params)\n"
            "print(json.dumps({'code': code, 'loaded': [m for m in ('distributed', 'dask_cuda') if m in sys.modules]}))\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    *lines, last = res.stdout.strip().splitlines()
    return json.loads(last), "\n".join(lines), res.stderr


def _setup(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    x = np.random.default_rng(0).random((300, 70), dtype=np.float32)
    zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(100, 70))
    (tmp_path / "engine.yaml").write_text(
        "input:\n  path: in.zarr\nsteps:\n  - {op: gaussian_filter, sigma: 1.0}\n  - {op: cumsum, axis: 0}\n"
        "outputs:\n  path: out.zarr\n")
    (tmp_path / "general.yaml").write_text(
        "input:\n  path: in.zarr\nsteps:\n  - {op: uniform_filter, size: 3, mode: wrap}\noutputs:\n  path: wrap.zarr\n")


def test_dry_run_says_the_plan_and_starts_nothing(tmp_path):
    _setup(tmp_path)
    info, out, err = _dry(tmp_path, "engine.yaml", "general.yaml")
    assert info == {"code": 0, "loaded": []}, (info, err)  # distributed never imported: no cluster
    assert "CPU workers" in out
    assert "engine: gaussian_filter -> cumsum on (300, 70) float32" in out
    assert "out.zarr: a new output" in out
    assert "path: the engine" in out and "then cumsum along axis 0" in out
    assert "halo (4, 4) x (4, 4)" in out  # sigma 1, truncate 4
    assert "blocks: 1 of 300 rows" in out
    assert "path: dask (general)" in out and "wrap" in out
    assert not (tmp_path / "out.zarr").exists() and not (tmp_path / "wrap.zarr").exists()


def test_dry_run_checks_as_the_run_does(tmp_path):
    _setup(tmp_path)
    (tmp_path / "bad.yaml").write_text(
        "input:\n  path: in.zarr\nsteps:\n  - {op: gaussian_filter, sigma: -1}\noutputs:\n  path: bad.zarr\n")
    info, _, err = _dry(tmp_path, "bad.yaml", "engine.yaml")
    assert info["code"] == 2 and "sigma" in err
    # an output already there: said as the run would do it
    zarr.create_array(str(tmp_path / "out.zarr"), shape=(3,), dtype="f4")
    info, _, err = _dry(tmp_path, "engine.yaml")
    assert info["code"] == 2 and "out.zarr" in err
