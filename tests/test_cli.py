"""The distconv command: one-line errors with exit code 2, info, run."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import zarr
from click.testing import CliRunner

from distconv.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_info_lists_versions_and_cluster():
    res = CliRunner().invoke(main, ["info"])
    assert res.exit_code == 0, res.output
    assert "numpy:" in res.output and "cluster: type" in res.output and "gpus:" in res.output


def test_missing_workflow_exit_2_one_line():
    res = CliRunner().invoke(main, ["run", "no/such.yaml"])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0 and "does not exist" in res.output


def test_the_command_exits_with_its_code_and_its_output_flushed(tmp_path):
    """The process entry (cli.entry) ends without finalizing the interpreter: its exit code
    and every line it printed still reach a pipe."""
    run = lambda *a: subprocess.run([sys.executable, "-m", "distconv.cli", *a], capture_output=True,  # noqa: E731
                                    text=True, timeout=120, cwd=tmp_path)
    res = run("run", "no/such.yaml")
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0 and "does not exist" in res.stderr
    res = run("--help")
    assert res.returncode == 0 and "Usage:" in res.stdout and res.stdout.rstrip().splitlines()[-1].split()[0] == "run"
    res = run("no-such-command")
    assert res.returncode == 2 and "No such command" in res.stderr


def test_cluster_typo_exit_2(tmp_path):
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  tpye: cpu\n")
    res = CliRunner().invoke(main, ["run", str(ROOT / "workflows" / "demo.yaml"), "--cluster", str(c)])
    assert res.exit_code == 2 and "unknown cluster key 'tpye'" in res.output


def test_run_small_workflow_end_to_end(tmp_path):
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        "input:\n  path: in.zarr\n  synthetic: {shape: [64, 40], chunks: [16, 40]}\n"
        "chunks: [32, 40]\nsteps:\n  - op: gaussian_filter\n    sigma: 1.0\n"
        "outputs:\n  path: out.zarr\n")
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(c), "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "GB/s" in res.stdout and "dashboard at http://127.0.0.1" in res.stdout
    # busy time per task name of the job's own tasks, named as the dashboard names them
    assert re.search(r"\n  gaussian-[a-z]{3}: [0-9.]+ s busy", res.stdout), res.stdout
    assert "dashboard at http://127.0.0.1" in res.stdout and "/distconv\n" in res.stdout  # the job page
    import numpy as np
    import scipy.ndimage as ndi

    src = zarr.open_array(str(tmp_path / "in.zarr"))[:]
    out = zarr.open_array(str(tmp_path / "out.zarr"))[:]
    np.testing.assert_allclose(out, ndi.gaussian_filter(src, 1.0), rtol=1e-6, atol=1e-6)
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 2 and "exists" in again.stderr  # no overwrite by default


def test_bench_without_gpu_is_a_one_line_error():
    import shutil

    if shutil.which("nvidia-smi"):
        import pytest

        pytest.skip("a GPU machine runs the table")
    res = CliRunner().invoke(main, ["bench"])
    assert res.exit_code == 2 and res.output.startswith("distconv: error:") and "GPU" in res.output


def test_progress_on_a_pipe_is_a_few_plain_lines(tmp_path):
    wf = tmp_path / "wf.yaml"
    wf.write_text("input:\n  path: in.zarr\n  synthetic: {shape: [64, 40], chunks: [8, 40]}\n"
                  "steps:\n  - {op: gaussian_filter, sigma: 1.0}\noutputs:\n  path: out.zarr\n"
                  "  histogram: {bins: 8, range: [-3, 3], json: h.json}\n")
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(c)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("distconv: wf: ")]
    # a short run: its one closing line (a line every distconv.progress-every seconds before it)
    assert lines and lines[-1].startswith("distconv: wf: 0.01 of 0.01 MB (1 block)") and "\r" not in res.stdout
    assert f"json: {tmp_path / 'h.json'}" in res.stdout  # the summary says where outputs went


def test_several_workflows_run_on_one_cluster_after_one_check(tmp_path):
    import json

    import numpy as np
    import scipy.ndimage as ndi

    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    files = []
    for name, sigma in (("a", 1.0), ("b", 2.0)):
        wf = tmp_path / f"{name}.yaml"
        wf.write_text(f"input:\n  path: in.zarr\n  synthetic: {{shape: [64, 40], chunks: [16, 40]}}\n"
                      f"steps:\n  - op: gaussian_filter\n    sigma: {sigma}\noutputs:\n  path: {name}.zarr\n")
        files.append(str(wf))
    bad = tmp_path / "bad.yaml"
    bad.write_text("input:\n  path: in.zarr\nsteps:\n  - op: blur\noutputs:\n  path: c.zarr\n")
    cmd = [sys.executable, "-m", "distconv.cli", "run", *files, str(bad), "--cluster", str(c), "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 2 and "bad.yaml: " in res.stderr and "unknown op 'blur'" in res.stderr, res.stderr
    assert not (tmp_path / "a.zarr").exists()  # nothing runs while any file has a problem
    cmd = [sys.executable, "-m", "distconv.cli", "run", *files, "--cluster", str(c), "--no-progress",
           "--json", str(tmp_path / "s.json")]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("dashboard at") == 1  # one cluster for both
    src = zarr.open_array(str(tmp_path / "in.zarr"))[:]
    for name, sigma in (("a", 1.0), ("b", 2.0)):
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / f"{name}.zarr"))[:],
                                   ndi.gaussian_filter(src, sigma), rtol=1e-5, atol=1e-5)
    summaries = json.loads((tmp_path / "s.json").read_text())
    assert [s["output"] for s in summaries] == [str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr")]
    same = subprocess.run([sys.executable, "-m", "distconv.cli", "run", files[0], files[0], "--cluster", str(c)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert same.returncode == 2 and "two workflows write the output" in same.stderr


def test_json_into_a_missing_folder_refused_before_the_run(tmp_path):
    """--json is checked with the workflow, before the cluster starts: exit 2, one line naming
    --json and the path, nothing written."""
    wf = tmp_path / "wf.yaml"
    wf.write_text("input:\n  path: in.zarr\n  synthetic: {shape: [16, 16], chunks: [8, 16]}\n"
                  "steps:\n  - op: gaussian_filter\n    sigma: -1.0\noutputs:\n  path: out.zarr\n")
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 1\n  processes: false\n")
    missing = tmp_path / "no" / "such" / "s.json"
    res = CliRunner().invoke(main, ["run", str(wf), "--cluster", str(c), "--json", str(missing)])
    assert res.exit_code == 2 and res.output.strip().count("\n") == 0, res.output
    assert f"--json {str(missing)!r}: the folder {str(missing.parent)!r} does not exist" in res.output
    assert "sigma must be >= 0" in res.output  # with the file's own problems, at once
    res = CliRunner().invoke(main, ["run", str(wf), "--cluster", str(c), "--json", str(tmp_path)])
    assert res.exit_code == 2 and "is a folder" in res.output
    assert not (tmp_path / "in.zarr").exists() and not (tmp_path / "out.zarr").exists()


def test_a_run_on_a_terminal_that_succeeds_prints_no_error(tmp_path):
    """On a terminal the run draws a progress bar and ends without an error (closing the
    cluster right after distributed's bar once logged `distributed.scheduler - ERROR ...
    CancelledError`). Run under a pseudo-terminal that reports no size, twice."""
    import os
    import pty
    import select
    import time

    wf = tmp_path / "wf.yaml"
    wf.write_text("input:\n  path: in.zarr\n  synthetic: {shape: [256, 256], chunks: [64, 256]}\n"
                  "steps:\n  - op: gaussian_filter\n    sigma: 1.0\noutputs:\n  path: out.zarr\n")
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 2\n  processes: false\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    for _ in range(2):
        leader, follower = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(c),
                                 "--overwrite"], stdin=follower, stdout=follower, stderr=follower, cwd=tmp_path)
        os.close(follower)
        out, deadline = b"", time.monotonic() + 120
        while time.monotonic() < deadline:
            if select.select([leader], [], [], 1.0)[0]:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed: the command ended
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        os.close(leader)
        text = out.decode(errors="replace")
        assert proc.wait(timeout=30) == 0, text
        assert "distconv: wf: 100%" in text and "B/s" in text, text  # tqdm's bar was drawn: a terminal
        assert "ERROR" not in text and "CancelledError" not in text and "Traceback" not in text, text


def test_info_names_the_cluster_file_and_what_a_run_starts(tmp_path, monkeypatch):
    c = tmp_path / "c.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 3\n  threads_per_worker: 2\n  memory_limit: 4GiB\n")
    res = CliRunner().invoke(main, ["info", "--cluster", str(c)])
    assert res.exit_code == 0, res.output
    assert f"cluster config: {c.resolve()}" in res.output
    assert "starts 3 workers x 2 threads, memory 4GiB" in res.output, res.output
    monkeypatch.chdir(tmp_path)  # no cluster.yaml here: the defaults, said so
    res = CliRunner().invoke(main, ["info"])
    assert "cluster config: the defaults (no --cluster, and no cluster.yaml in this folder)" in res.output
    assert "starts " in res.output and " worker" in res.output and "memory " in res.output


def test_progress_lines_arrive_while_the_run_runs(tmp_path):
    """Piped, a run says how far it is as its blocks finish: lines with rising byte counts
    before the summary (dask config distconv.progress-every: how often)."""
    import os
    import re
    import subprocess
    import sys

    import zarr

    x = np.random.default_rng(53).standard_normal((2048, 512)).astype(np.float32)
    zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(64, 512))
    wf = tmp_path / "wf.yaml"  # wrap: dask's path, a task per 64-row chunk
    wf.write_text("input: {path: in.zarr}\nchunks: [64, 512]\nsteps:\n  - {op: median_filter, size: 5, mode: wrap}\n"
                  "outputs: {path: out.zarr}\n")
    c = tmp_path / "c.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 1\n  threads_per_worker: 1\n  processes: false\n"
                 "  dashboard_address: null\n")
    env = {**os.environ, "DASK_DISTCONV__PROGRESS_EVERY": "0"}
    res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(c), "--json",
                          str(tmp_path / "s.json")], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    done = [float(m.group(1)) for m in (re.search(r"distconv: wf: ([\d.]+) of 4\.19 MB", ln) for ln in lines) if m]
    summary = next(i for i, ln in enumerate(lines) if ln.startswith("wf: median_filter"))
    first = next(i for i, ln in enumerate(lines) if "of 4.19 MB" in ln)
    assert len(done) >= 5 and first < summary, res.stdout
    assert done == sorted(done) and done[-1] == 4.19 and done[0] < done[-1], done
    progress = json.loads((tmp_path / "s.json").read_text())["progress"]
    assert progress["blocks"] == 32 and progress["bytes"] == x.nbytes
    assert [b for _, b in progress["samples"]] == sorted(b for _, b in progress["samples"])


def test_python_face_shows_progress_when_asked(tmp_path, capsys):
    import dask
    import dask.array as da

    import distconv as dc

    x = np.random.default_rng(54).standard_normal((256, 64)).astype(np.float32)
    import zarr

    zarr.create_array(str(tmp_path / "in.zarr"), data=x, chunks=(16, 64))
    with dask.config.set({"distconv.progress-every": 0}):
        dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), 1.0, mode="wrap"),
                   str(tmp_path / "out.zarr"), progress=True)
    out = capsys.readouterr().out
    assert "of 0.07 MB" in out and "MB/s" in out, out
    dc.to_zarr(dc.gaussian_filter(da.from_zarr(str(tmp_path / "in.zarr")), 1.0), str(tmp_path / "quiet.zarr"))
    assert capsys.readouterr().out == ""  # progress=False (the default) prints nothing


def test_a_synthetic_input_is_announced_and_timed_on_its_own(tmp_path):
    """`distconv run` says when it writes a synthetic input, on a cluster of its own, and
    --json keeps those seconds apart from the run's; the next run finds it written."""
    import yaml

    c = tmp_path / "cluster.yaml"
    c.write_text(yaml.safe_dump({"cluster": {"type": "cpu", "n_workers": 1, "threads_per_worker": 2, "processes": False,
                                             "dashboard_address": "127.0.0.1:0"}}))
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": "in.zarr", "synthetic": {"shape": [64, 40], "chunks": [16, 40]}},
                                  "steps": [{"op": "gaussian_filter", "sigma": 1.0}], "outputs": {"path": "out.zarr"}}))
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(c), "--json", str(tmp_path / "s.json")]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"distconv: writing the synthetic input {tmp_path / 'in.zarr'} (64 x 40 float32, 0.0 MB)" in res.stdout
    assert "distconv: synthetic input: 0.01 of 0.01 MB (4 blocks)" in res.stdout
    assert "synthetic input written first:" in res.stdout
    summary = json.loads((tmp_path / "s.json").read_text())  # one workflow: its summary
    assert summary["synthetic_input_seconds"] > 0
    res = subprocess.run(cmd + ["--overwrite"], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0 and "synthetic input" not in res.stdout, res.stdout
