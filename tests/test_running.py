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
    assert res.returncode == 0 and "cluster started at tls://" in res.stdout, res.stderr
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
        assert "joined the running cluster at tls://" in run.stdout, run.stdout
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


def _handed(tmp_path, *args, env=None, **kw):
    env = {**os.environ, "DASK_DISTCONV__CLUSTER_STATE": str(tmp_path / "state" / "cluster.json"), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "distconv.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env, **kw)


@pytest.mark.slow
def test_runs_on_a_kept_cluster_are_handed_to_its_warm_process(tmp_path):
    """The kept cluster's warm process runs `distconv run` for it (distconv/session/handoff.py, warm.py): in the
    caller's directory and environment, with its messages, exit codes and Ctrl-C."""
    import json
    import signal
    import time

    from distconv.engine.marks import BLOCKS, OWNER

    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    assert _cli(tmp_path, "cluster", "start", "--cluster", str(c)).returncode == 0
    state = tmp_path / "state" / "cluster.json"
    sock = json.loads(state.read_text())["handoff"]
    try:
        assert os.path.exists(sock)  # listening once `cluster start` returns: the first run is handed too
        x = np.random.default_rng(3).standard_normal((1536, 384)).astype(np.float32)
        zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(64, 384))
        wf = tmp_path / "wf.yaml"  # relative paths: the caller's directory, not the server's
        wf.write_text("input: {path: in.zarr}\nsteps:\n  - {op: median_filter, size: 7}\n"
                      "outputs: {path: out.zarr}\n")
        proc = _handed(tmp_path, "run", "wf.yaml", "--cluster", str(c), "--no-progress", "--json", "s.json")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "joined the running cluster" in out and "median_filter" in out, out
        assert json.loads((tmp_path / "s.json").read_text())["handed_off"] is True
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.median_filter(x, 7))

        # the caller's dask settings reach the run: a bad one is named, exit 2, nothing written
        proc = _handed(tmp_path, "run", "wf.yaml", "--cluster", str(c), "--overwrite",
                       env={"DASK_DISTCONV__IO_SLOTS": "0"})
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2 and "distconv.io-slots" in err and len(err.strip().splitlines()) == 1, err

        # Ctrl-C at the caller's terminal interrupts the handed run: one line, 130, --resume after
        proc = _handed(tmp_path, "run", "wf.yaml", "--cluster", str(c), "--overwrite", "--no-progress",
                       start_new_session=True)
        marks = tmp_path / "out.zarr" / BLOCKS
        deadline = time.time() + 120
        while time.time() < deadline and not (marks.is_dir() and any(marks.iterdir())):
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (out, err)
        assert "Traceback" not in err and "--resume" in err, err
        proc = _handed(tmp_path, "run", "wf.yaml", "--cluster", str(c), "--resume", "--no-progress")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "out.zarr"))[...], ndi.median_filter(x, 7))

        # Ctrl-C mid-job, then at once another job --overwrite into the same output: the first
        # run's blocks were stopped before the command returned, so the output is the second's
        (tmp_path / "a.yaml").write_text("input: {path: in.zarr}\nchunks: [64, 384]\nsteps:\n"
                                         "  - {op: median_filter, size: 9, mode: wrap}\noutputs: {path: out.zarr}\n")
        (tmp_path / "b.yaml").write_text("input: {path: in.zarr}\nchunks: [64, 384]\nsteps:\n"
                                         "  - {op: gaussian_filter, sigma: 3.0, mode: wrap}\noutputs: {path: out.zarr}\n")
        proc = _handed(tmp_path, "run", "a.yaml", "--cluster", str(c), "--overwrite", "--no-progress",
                       start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline and not (marks.is_dir() and any(marks.iterdir())):
            time.sleep(0.002)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (out, err)
        owner = json.loads((tmp_path / "out.zarr" / OWNER).read_text())
        assert owner["run"] is None, owner  # stopped before the command returned
        proc = _handed(tmp_path, "run", "b.yaml", "--cluster", str(c), "--overwrite", "--no-progress")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        time.sleep(1.0)  # anything of a's still running would have written by now
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...],
                                   ndi.gaussian_filter(x, 3.0, mode="wrap"), rtol=1e-5, atol=1e-6)
    finally:
        assert _cli(tmp_path, "cluster", "stop").returncode == 0
    deadline = time.time() + 30  # the warm process ends with the cluster's
    while time.time() < deadline and os.path.exists(sock):
        time.sleep(0.05)
    assert not os.path.exists(sock)


def test_the_warm_process_removes_only_a_socket_at_its_path(tmp_path):
    """A stale socket of an earlier server goes; a file of the user's at that path stays (and
    the server then does not listen: runs are not handed over)."""
    import socket

    from distconv.session import warm

    mine = tmp_path / "cluster.sock"
    mine.write_text("the user's")
    warm._remove_socket(str(mine))
    assert mine.read_text() == "the user's"
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.bind(str(stale))
    warm._remove_socket(str(stale))
    assert not stale.exists()
    warm._remove_socket(str(tmp_path / "absent.sock"))
