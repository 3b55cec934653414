"""What a command pays before its first block: workers that run engine blocks import no
dask.array, xarray or pandas, and a command plans each workflow's steps once and reads its cluster config once."""

import importlib.util
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr


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


@pytest.mark.slow
def test_a_local_cluster_imports_the_first_write_s_modules_as_it_starts(tmp_path):
    """zarr and its codec pipeline are imported in a thread while the workers start, not
    between a job's submission and its first block (a fresh interpreter: pytest's has them)."""
    script = tmp_path / "start.py"
    script.write_text(textwrap.dedent("""
        import sys, threading
        import distconv as dc
        from distconv.session.cluster import CLIENT_IMPORTS_THREAD
        from distconv.session.worker_imports import CLIENT_IMPORTS

        if __name__ == "__main__":
            before = [m for m in CLIENT_IMPORTS if m in sys.modules]
            with dc.cluster({"type": "cpu", "n_workers": 1, "dashboard_address": None}, quiet=True):
                started = [t for t in threading.enumerate() if t.name == CLIENT_IMPORTS_THREAD]
                for t in started:
                    t.join(60)
                print(before, [m for m in CLIENT_IMPORTS if m in sys.modules])
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    installed = [m for m in ("zarr", "zarrs", "fsspec") if importlib.util.find_spec(m) is not None]
    assert done.stdout.strip().splitlines()[-1] == f"[] {installed}"


def test_one_plan_per_workflow_in_a_command(tmp_path, monkeypatch, capsys):
    from distconv.batch import direct
    from distconv.session import command, config

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
    reads = []  # the cluster config's file, parsed
    monkeypatch.setattr(config, "yaml", types.SimpleNamespace(
        YAMLError=yaml.YAMLError, safe_load=lambda text: reads.append(text) or yaml.safe_load(text)))
    params = dict(workflow_paths=paths, cluster_path=str(cluster), overwrite=False, resume=False, no_progress=True,
                  json_path=None, report_dir=None)
    assert command.run(params) == 0, capsys.readouterr().err
    # the identity the output records, the kernel builds and the run all read one plan
    assert sorted(planned) == ["a", "b"], planned
    assert len(reads) == 1, reads  # the cluster config too: read once, held for the command
    w = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
    for name, sigma in (("a", 1.0), ("b", 2.0)):
        want = ndi.correlate(ndi.gaussian_filter(x, sigma), w, mode="nearest")
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / f"{name}.zarr"))[...], want, rtol=1e-4, atol=1e-4)


def test_a_synthetic_input_is_planned_once_more_after_it_is_written(tmp_path, monkeypatch, capsys):
    """The demo's shape of workflow: its synthetic input is planned from its definition for the
    check, and once more when the run has written it (the engine's job reads the stored
    metadata); nothing else plans it again, a dry run plans it once."""
    from distconv.batch import direct
    from distconv.session import command

    (tmp_path / "wf.yaml").write_text(
        "name: demo\ninput:\n  path: in.zarr\n  synthetic: {shape: [64, 48], chunks: [16, 48], seed: 0}\n"
        "steps:\n  - {op: gaussian_filter, sigma: 2.0}\n"
        "  - {op: correlate, weights: [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode: nearest}\noutputs:\n  path: out.zarr\n")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("cluster:\n  type: cpu\n  processes: false\n  n_workers: 1\n  dashboard_address: 127.0.0.1:0\n")
    planned = []
    real = direct._planned
    monkeypatch.setattr(direct, "_planned", lambda wf: planned.append(wf.name) or real(wf))
    params = _params(tmp_path, cluster)
    assert command.run({**params, "dry_run": True}) == 0, capsys.readouterr().err
    assert planned == ["demo"]
    planned.clear()
    assert command.run(params) == 0, capsys.readouterr().err
    assert planned == ["demo", "demo"], planned  # the definition's plan, then the written input's
    x = zarr.open_array(str(tmp_path / "in.zarr"))[...]
    want = ndi.correlate(ndi.gaussian_filter(x, 2.0), np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32),
                         mode="nearest")
    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"))[...], want, rtol=1e-4, atol=1e-4)


def test_a_failed_check_leaves_no_workers_server(tmp_path, capsys):
    """The workers' server started beside the check ends with a command whose check failed (its
    cluster never started), so the process is left as found."""
    from multiprocessing import forkserver as mp_forkserver

    from distconv.session import command, forkserver

    before = getattr(mp_forkserver._forkserver, "_forkserver_pid", None)
    (tmp_path / "wf.yaml").write_text("input:\n  path: in.zarr\n  synthetic: {shape: [8, 8], chunks: [4, 8]}\n"
                                      "steps:\n  - {op: gaussian_filter, sigma: -1}\noutputs:\n  path: out.zarr\n")
    (tmp_path / "cluster.yaml").write_text("cluster:\n  type: cpu\n  n_workers: 1\n  dashboard_address: '127.0.0.1:0'\n")
    params = _params(tmp_path, tmp_path / "cluster.yaml")
    assert command.run(params) == 2 and "sigma" in capsys.readouterr().err
    assert forkserver._ours is None
    assert getattr(mp_forkserver._forkserver, "_forkserver_pid", None) == before


@pytest.mark.slow
def test_killing_a_command_ends_its_cluster(tmp_path):
    """SIGKILL of `distconv run` while its cluster writes its synthetic input
    leaves none of its processes: the workers' server and the workers go with it."""
    import os
    import signal
    import subprocess
    import time

    import psutil

    (tmp_path / "wf.yaml").write_text("input:\n  path: in.zarr\n"
                                      "  synthetic: {shape: [4096, 4096], chunks: [256, 4096]}\n"
                                      "steps:\n  - {op: median_filter, size: 9}\noutputs:\n  path: out.zarr\n")
    (tmp_path / "cluster.yaml").write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 1\n"
                                           "  dashboard_address: '127.0.0.1:0'\n")
    cmd = subprocess.Popen([sys.executable, "-m", "distconv.cli", "run", "wf.yaml", "--cluster", "cluster.yaml"],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in cmd.stdout:  # the synthetic input is written by the cluster's workers
            if "synthetic input" in line:
                break
        family = psutil.Process(cmd.pid).children(recursive=True)
        assert family, "the command started no processes"
        os.kill(cmd.pid, signal.SIGKILL)
        cmd.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        cmd.kill()


@pytest.mark.slow
def test_a_failure_as_the_kernel_builds_start_ends_the_workers_server(tmp_path, monkeypatch):
    """The workers' server started ahead is ended even where the command stops before its check
    (here the kernels' build process could not start)."""
    from distconv.session import builds, command, forkserver, interrupt

    (tmp_path / "wf.yaml").write_text("input:\n  path: in.zarr\n  synthetic: {shape: [8, 8], chunks: [4, 8]}\n"
                                      "steps:\n  - {op: gaussian_filter, sigma: 1}\noutputs:\n  path: out.zarr\n")
    (tmp_path / "cluster.yaml").write_text("cluster:\n  type: cpu\n  n_workers: 1\n  dashboard_address: '127.0.0.1:0'\n")
    params = _params(tmp_path, tmp_path / "cluster.yaml")

    def no_process(cfg):
        raise OSError("no process")

    monkeypatch.setattr(builds.KernelBuilds, "start", staticmethod(no_process))
    try:
        with interrupt.cli_policy(), pytest.raises(OSError, match="no process"):
            command.run(params)
        assert forkserver._ours is None
    finally:  # the old code's leftovers
        forkserver.release_unheld()


def _params(tmp_path, cluster) -> dict:
    """`distconv run wf.yaml --cluster CLUSTER`'s parsed arguments (wf.yaml in ``tmp_path``)."""
    return dict(workflow_paths=[str(tmp_path / "wf.yaml")], cluster_path=str(cluster), overwrite=False,
                resume=False, no_progress=True, json_path=None, report_dir=None)
