"""The cluster a `distconv run` starts for itself runs in a process of its own, started before
the check, stopped with the command however it ends; its workers import no dask.array."""

import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr

CLUSTER = ("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n"
           "  dashboard_address: '127.0.0.1:0'\n")


def _env(tmp_path):
    return {**os.environ, "TMPDIR": str(tmp_path), "DASK_DISTCONV__CLUSTER_STATE": str(tmp_path / "state.json")}


def _launched(tmp_path) -> list[int]:
    """Pids of live cluster processes whose log lies in ``tmp_path``, with their process groups."""
    pids = []
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            with open(f"{proc}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"{proc}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"distconv.session.launch" in cmd and any(str(tmp_path).encode() in c for c in cmd):
            pids.append(int(proc.rsplit("/", 1)[1]))
    return pids


def _group(pgid: int) -> list[int]:
    out = []
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            with open(f"{proc}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(proc.rsplit("/", 1)[1]))
    return out


def _gone(pids, timeout=60.0) -> list[int]:
    deadline = time.time() + timeout
    alive = list(pids)
    while alive and time.time() < deadline:
        time.sleep(0.2)
        alive = [p for p in alive if os.path.exists(f"/proc/{p}") and
                 open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
    return alive


def _workflow(tmp_path, step="{op: gaussian_filter, sigma: 1.5}", shape=(64, 40)):
    wf = tmp_path / "wf.yaml"
    wf.write_text(f"input:\n  path: in.zarr\n  synthetic: {{shape: {list(shape)}, chunks: [16, 40]}}\n"
                  f"steps:\n  - {step}\noutputs:\n  path: out.zarr\n")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    return wf


@pytest.mark.slow
def test_a_failed_check_stops_the_cluster_it_started(tmp_path):
    wf = _workflow(tmp_path, step="{op: gaussian_filter, sigma: -1}")
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress"], cwd=tmp_path,
                         env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "sigma" in res.stderr, res.stderr
    # the cluster's process ends on its own once the command is gone, its workers with it, and
    # cleanly: its log is removed
    assert _gone(_launched(tmp_path)) == []
    assert glob.glob(str(tmp_path / "distconv-cluster-*.log")) == []
    assert not (tmp_path / "out.zarr").exists()


@pytest.mark.slow
def test_the_cluster_starts_beside_the_check_and_ends_with_the_run(tmp_path):
    wf = _workflow(tmp_path)
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress", "--json", "run.json"],
                         cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    import json

    startup = json.loads((tmp_path / "run.json").read_text())["startup"]
    assert startup["cluster_started"] < startup["checked"] < startup["first_task"], startup
    assert "distconv: dashboard at http://127.0.0.1:" in res.stdout
    assert res.stderr == "", res.stderr  # the cluster's logs go to its own log, not the terminal
    x = zarr.open_array(str(tmp_path / "in.zarr"))[...]
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 1.5),
                               rtol=1e-5, atol=1e-5)
    assert _launched(tmp_path) == []  # the command waited for its cluster to stop
    assert glob.glob(str(tmp_path / "distconv-cluster-*.log")) == []  # a clean stop leaves no log


@pytest.mark.slow
def test_killing_the_command_stops_its_cluster_and_workers(tmp_path):
    wf = _workflow(tmp_path, step="{op: median_filter, size: 9}", shape=(3000, 2000))
    proc = subprocess.Popen([sys.executable, "-m", "distconv.cli", "run", str(wf), "--no-progress"], cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        while line and "dashboard at" not in line:
            line = proc.stdout.readline()
        assert "dashboard at" in line, proc.stderr.read()
        launched = _launched(tmp_path)
        assert len(launched) == 1
        group = _group(launched[0])  # the cluster's process, its workers' server, nannies and workers
        assert len(group) >= 3
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _gone(group) == []
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_workers_run_engine_blocks_without_dask_array(tmp_path):
    import dask.array as da

    import distconv as dc

    src = tmp_path / "in.zarr"
    x = np.random.default_rng(0).random((96, 70), dtype=np.float32)
    zarr.create_array(str(src), data=x, chunks=(32, 70))
    cfg = {"type": "cpu", "n_workers": 1, "threads_per_worker": 2, "dashboard_address": "127.0.0.1:0"}
    with dc.cluster(cfg, quiet=True) as client:
        out = dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(src)), 1.0), str(tmp_path / "out.zarr"))
        assert out["path"] == "engine"
        loaded = client.run(lambda: sorted(m for m in ("dask.array", "xarray", "pandas") if m in sys.modules))
    assert list(loaded.values()) == [[]], loaded
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.gaussian_filter(x, 1.0),
                               rtol=1e-5, atol=1e-6)


def test_one_plan_per_workflow_in_a_command(tmp_path, monkeypatch, capsys):
    from distconv.batch import direct
    from distconv.session import command

    x = np.random.default_rng(1).random((80, 50), dtype=np.float32)
    zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(40, 50))
    paths = []
    for name, sigma in (("a", 1.0), ("b", 2.0)):
        wf = tmp_path / f"{name}.yaml"
        wf.write_text(f"input:\n  path: in.zarr\nsteps:\n  - {{op: gaussian_filter, sigma: {sigma}}}\n"
                      f"  - {{op: correlate, weights: [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode: nearest}}\n"
                      f"outputs:\n  path: {name}.zarr\n")
        paths.append(str(wf))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("cluster:\n  type: cpu\n  processes: false\n  n_workers: 1\n  dashboard_address: 127.0.0.1:0\n")
    planned = []
    real = direct._planned
    monkeypatch.setattr(direct, "_planned", lambda wf: planned.append(wf.name) or real(wf))
    params = dict(workflow_paths=paths, cluster_path=str(cluster), overwrite=False, resume=False, no_progress=True,
                  json_path=None, report_dir=None)
    assert command.run(params) == 0, capsys.readouterr().err
    # the identity the output records, the kernel builds and the run all read one plan
    assert sorted(planned) == ["a", "b"], planned
    w = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
    for name, sigma in (("a", 1.0), ("b", 2.0)):
        want = ndi.correlate(ndi.gaussian_filter(x, sigma), w, mode="nearest")
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / f"{name}.zarr"))[...], want, rtol=1e-4, atol=1e-4)
