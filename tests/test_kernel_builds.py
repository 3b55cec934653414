"""`distconv run`'s kernel builds beside its cluster's start (session/builds.py), where no GPU
is: a CPU cluster's compile of numba's kernels on a fresh machine, and the rehearsal's own
process reports that it built nothing instead of failing (the GPU side: tests/gpu/test_rehearsal_gpu.py)."""

import subprocess
import sys
import threading

import pytest

from distconv.session import builds


def test_a_cluster_of_cpu_workers_compiles_only_where_numba_has_compiled_nothing(tmp_path, monkeypatch):
    """A CPU cluster on a machine whose numba cache holds no kernel starts the compile's
    process (told so: its jobs are stencils, not GPU jobs); with any kernel cached, none."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # its mark goes there, not in this machine's cache
    monkeypatch.setattr(builds, "compiled_here", lambda: True)
    assert builds.KernelBuilds.start({"type": "cpu"}) is None
    monkeypatch.setattr(builds, "compiled_here", lambda: False)
    started = builds.KernelBuilds.start({"type": "cpu"})
    try:
        assert started is not None and started._gpu is False and started._process.args[-1] == "cpu"
    finally:
        started.stop()


CPU_WF = ("input: {path: in.zarr, synthetic: {shape: [300, 300], chunks: [100, 300], dtype: float64}}\n"
          "steps: [{op: correlate, weights: [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode: nearest}]\n"
          "outputs: {path: out.zarr}\n")


def test_the_cpu_compile_fills_the_cache_every_process_reads(tmp_path):
    """`python -m distconv.session.builds wf.yaml` (make's install) compiles the kernels the
    workflow's steps call, before its synthetic input exists, into numba's cache (here
    NUMBA_CACHE_DIR, as a read-only install would use the user's cache folder); cached_here then
    finds it, and the next process (a worker) compiles nothing."""
    import os

    (tmp_path / "wf.yaml").write_text(CPU_WF)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    probe = ("from distconv.backends.numpy import kernel_cache; import sys; "
             "print(kernel_cache.cached_here(), kernel_cache.cache_path() in kernel_cache.cache_dirs())")

    def run(*args):
        res = subprocess.run([sys.executable, *args], capture_output=True, cwd=tmp_path, env=env, timeout=600)
        assert res.returncode == 0, res.stderr.decode()
        return res.stdout.decode().strip().splitlines()[-1]

    assert run("-c", probe) == "False True"
    first = run("-m", "distconv.session.builds", "wf.yaml")
    assert first.startswith("distconv: compiled 1 CPU kernels in ") and str(tmp_path / "numba") in first
    assert not (tmp_path / "in.zarr").exists()
    assert run("-c", probe) == "True True"
    assert run("-m", "distconv.session.builds", "wf.yaml").startswith("distconv: compiled 0 CPU kernels")


def test_the_cpu_compile_takes_the_stencils_of_the_checked_workflows(tmp_path):
    """send() hands the compile's process each workflow's fused stencil and input dtype."""
    from distconv import batch

    (tmp_path / "wf.yaml").write_text(CPU_WF)
    stencil, dtype = builds.stencil_of(batch.load(tmp_path / "wf.yaml"))
    assert dtype == "float64" and stencil.depth == ((1, 1), (1, 1))


def test_the_rehearsal_process_reports_nothing_built_where_it_cannot_build(tmp_path):
    """Handed a checked workflow's job on a machine without a GPU, it fails its CUDA context and
    the run gets None: the blocks build what they need, as before."""
    import pickle

    from distconv import batch
    from distconv.batch import direct
    from distconv.batch.inputs import ensure_input

    wf = tmp_path / "wf.yaml"
    wf.write_text("input: {path: in.zarr, synthetic: {shape: [40, 30], chunks: [10, 30]}}\n"
                  "steps: [{op: gaussian_filter, sigma: 1.0}]\noutputs: {path: out.zarr}\n")
    loaded = batch.load(wf)
    ensure_input(loaded)
    job = direct.direct_job(loaded, True)[0]
    assert job is not None and job.gpu
    res = subprocess.run([sys.executable, "-m", "distconv.session.builds"], input=pickle.dumps([job]),
                         capture_output=True, cwd=tmp_path, timeout=300)
    assert res.returncode != 0 and not res.stdout.strip()  # no result: KernelBuilds.wait gives None
    kept = builds.KernelBuilds(subprocess.Popen([sys.executable, "-c", "print('not json')"],
                                                stdout=subprocess.PIPE))
    assert kept.wait() is None


def test_the_message_says_what_was_built_once():
    assert builds.message(None) is None and builds.message({"built": 0, "seconds": 0.4}) is None
    line = builds.message({"built": 6, "seconds": 4.52})
    assert "built 6 GPU kernels" in line and "4.5 s" in line and "later runs skip this" in line
    line = builds.message({"built": 3, "seconds": 7.04, "cache": "/c", "device": "cpu"})
    assert line.startswith("distconv: compiled 3 CPU kernels (first run) in 7.0 s") and "/c" in line


def test_the_kernel_log_says_which_process_loaded_which_kernel(tmp_path, monkeypatch):
    """DISTCONV_KERNEL_LOG: a tab-separated line a kernel loaded (pid, process, seconds,
    pattern, name expression); unset, nothing is written."""
    import os

    from distconv.backends.cuda import loader

    log = tmp_path / "kernels.log"
    monkeypatch.delenv("DISTCONV_KERNEL_LOG", raising=False)
    loader._log_load("convolve", "distconv_separable2d<float, 17, 17, 1, 1, -1, float>", 0.25)
    assert not log.exists()
    monkeypatch.setenv("DISTCONV_KERNEL_LOG", str(log))
    loader._log_load("convolve", "distconv_separable2d<float, 17, 17, 1, 1, -1, float>", 0.25)
    loader._log_load("zstd", "distconv_pack_frames", 0.001)
    rows = [ln.split("\t") for ln in log.read_text().splitlines()]
    assert rows == [[str(os.getpid()), "MainProcess", "0.250", "convolve",
                     "distconv_separable2d<float, 17, 17, 1, 1, -1, float>"],
                    [str(os.getpid()), "MainProcess", "0.001", "zstd", "distconv_pack_frames"]]


def test_blocks_run_scipy_while_a_live_compile_is_marked(tmp_path, monkeypatch):
    """kernel_cache.COMPILING is locked by the compiling process: while it holds it, reason() sends
    the blocks to scipy; a marker of this process itself (the compile's own calls), or one no
    process holds (a killed compile's, whatever process has its pid now), counts for nothing;
    the mark is gone once its block ends."""
    import os

    from distconv.backends.numpy import compiled, kernel_cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not kernel_cache.compiling() and compiled.reason("linear", "f4") is None
    with builds.compiling_mark():
        marker = os.path.join(kernel_cache.cache_dirs()[0], kernel_cache.COMPILING)
        assert open(marker).read() == str(os.getpid()) and not kernel_cache.compiling()
    assert not os.path.exists(marker)
    # a marker left by a compile that was killed: its pid may belong to a live process since
    for pid in (os.getppid(), 2 ** 22 + 17):
        with open(marker, "w") as f:
            f.write(str(pid))
        assert not kernel_cache.compiling() and compiled.reason("linear", "f4") is None
    # a compile under way in another process holds the marker's lock
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               f"f = open({marker!r}, 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
                               "f.write(str(os.getpid())); f.flush(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert kernel_cache.compiling() and compiled.reason("linear", "f4") is not None
    finally:
        holder.kill()
        holder.wait()
    assert not kernel_cache.compiling()
    os.remove(marker)


def test_a_cpu_compile_is_not_waited_for_and_is_left_to_finish():
    """The run goes on with scipy while the compile runs (the line says so), and a compile that
    was handed its stencils is not killed when the run ends."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(60)"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        b = builds.KernelBuilds(proc, gpu=False)
        b.send([])
        built = b.wait()
        assert built["running"] and built["waited_s"] == 0.0
        assert "compiling CPU kernels (first run" in builds.message(built) and "scipy meanwhile" in builds.message(built)
        b.stop()
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    unsent = builds.KernelBuilds(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]), gpu=False)
    unsent.stop()  # the run failed before its check handed anything over: ended
    assert unsent._process.poll() is not None


def test_no_second_compile_while_one_runs(tmp_path, monkeypatch):
    """A run that starts while a first run's compile still fills the cache starts none."""
    import os

    from distconv.backends.numpy import compiled, kernel_cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "cached_here", lambda: False)
    assert not builds.compiled_here()
    os.makedirs(kernel_cache.cache_dirs()[0])
    marker = os.path.join(kernel_cache.cache_dirs()[0], kernel_cache.COMPILING)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, time\n"  # a compile under way
                               f"f = open({marker!r}, 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
                               "f.write(str(os.getpid())); f.flush(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert builds.compiled_here()
    finally:
        holder.kill()
        holder.wait()


def test_a_worker_launches_a_jobs_kernels_once_before_its_blocks(tmp_path, monkeypatch):
    """rehearsal.prepare: the first job of its kernels in a worker process runs block 0's stage
    on zeros (not a build: the warm-up made the codec's first calls); the same job again, or a
    job of the same steps and shapes on other paths and runs, runs nothing; the node's cache is
    built only where asked (one worker a host)."""
    import dataclasses

    import zarr

    from distconv import batch
    from distconv.batch import direct
    from distconv.engine import rehearsal

    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=(50, 40), chunks=(10, 40), dtype="float32")
    z[...] = 1.0
    (tmp_path / "wf.yaml").write_text(f"input: {{path: {tmp_path / 'in.zarr'}}}\n"
                                      "steps: [{op: gaussian_filter, sigma: 1.0}]\n"
                                      f"outputs: {{path: {tmp_path / 'out.zarr'}}}\n")
    job = direct.direct_job(batch.load(str(tmp_path / "wf.yaml")), False)[0]
    assert job is not None
    ran, built = [], []
    monkeypatch.setattr(rehearsal, "_launched", {})

    def rehearse(j, build=True):
        ran.append(build)

    monkeypatch.setattr(rehearsal, "rehearse", rehearse)
    (tmp_path / "mark").touch()  # the host's build is done: nothing to wait for
    monkeypatch.setattr(rehearsal, "_mark", lambda kernels: tmp_path / "mark")
    monkeypatch.setattr(rehearsal, "rehearse_once",
                        lambda j, mark: built.append(j) or {"built": 3, "seconds": 0.1, "skipped": False})
    assert rehearsal.prepare(job, False)["skipped"] and ran == [False] and built == []
    again = dataclasses.replace(job, src="elsewhere.zarr", dst="other.zarr", run="r2")
    assert rehearsal.prepare(again, False)["skipped"] and ran == [False]
    assert rehearsal.prepare(again, True)["built"] == 3 and built == [again] and ran == [False]
    other = dataclasses.replace(job, in_shape=(60, 40))
    rehearsal.prepare(other, False)
    assert ran == [False, False]
    # a host's builder whose node had the job built (its mark) still launches it in its process
    monkeypatch.setattr(rehearsal, "rehearse_once", lambda j, mark: {"built": 0, "seconds": 0.0, "skipped": True})
    third = dataclasses.replace(job, in_shape=(70, 40))
    assert rehearsal.prepare(third, True)["skipped"] and ran == [False, False, False]
    # a builder's own build launched the job in its process: remembered, not launched again
    monkeypatch.setattr(rehearsal, "rehearse_once", lambda j, mark: {"built": 2, "seconds": 0.1, "skipped": False})
    fourth = dataclasses.replace(job, in_shape=(80, 40))
    assert not rehearsal.prepare(fourth, True)["skipped"]
    assert rehearsal.prepare(fourth, False)["skipped"] and ran == [False, False, False]


def test_a_worker_waits_for_its_hosts_build_only_while_one_runs(tmp_path, monkeypatch):
    """rehearsal._wait_for_build: back at once where the mark exists; while the host's builder
    works (its file beside the mark) the wait goes on until the mark comes; a builder that ended
    without a mark (it failed), or never started, or left a stale file (it died), is waited for
    no longer than it takes to see that."""
    import os
    import time

    from distconv.engine import rehearsal

    monkeypatch.setattr(rehearsal, "BUILD_START_S", 0.3)
    mark = tmp_path / "mark"
    building = mark.with_suffix(".building")
    mark.touch()
    t = time.monotonic()
    rehearsal._wait_for_build(mark)
    assert time.monotonic() - t < 0.1
    mark.unlink()
    t = time.monotonic()
    rehearsal._wait_for_build(mark)  # no build started: the start's grace only
    assert 0.3 <= time.monotonic() - t < 1.0
    building.touch()
    threading.Timer(0.8, mark.touch).start()
    t = time.monotonic()
    rehearsal._wait_for_build(mark)  # a build that ends with its mark
    assert 0.75 <= time.monotonic() - t < 2.0 and mark.exists()
    mark.unlink()
    threading.Timer(0.6, building.unlink).start()
    t = time.monotonic()
    rehearsal._wait_for_build(mark)  # a build that failed: its file gone, no mark
    assert 0.55 <= time.monotonic() - t < 1.5
    building.touch()
    old = time.time() - rehearsal.BUILD_WAIT_S - 5
    os.utime(building, (old, old))
    t = time.monotonic()
    rehearsal._wait_for_build(mark)  # a builder that died long ago
    assert time.monotonic() - t < 1.0


def test_a_jobs_prepare_is_cancelled_on_ctrl_c_and_not_waited_for_past_its_bound(monkeypatch):
    """compute.prepare_workers on a cluster: a Ctrl-C while it waits cancels every prepare task
    of the run on the scheduler before it returns (a kept cluster keeps nothing of a stopped
    run); tasks still running after PREPARE_WAIT_S are cancelled and count as not prepared,
    those that ended give their results."""
    import time
    import types

    import distributed
    from distributed import Client, LocalCluster

    from distconv.engine import compute

    def run_keys(client, run):
        keys = client.run_on_scheduler(lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks])
        return [k for k in keys if k.startswith(f"distconv-kernels-{run}-")]

    monkeypatch.setattr(compute, "_prepared", _prepared)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        try:
            # both workers of one host: one builds, and each gives its result
            assert sorted(map(str, compute.prepare_workers(client, types.SimpleNamespace(run="fast")))) == \
                sorted(map(str, [{"built": 1, "seconds": 0.0, "skipped": False},
                                 {"built": 0, "seconds": 0.0, "skipped": True}]))
            monkeypatch.setattr(compute, "PREPARE_WAIT_S", 0.5)
            t = time.monotonic()
            assert compute.prepare_workers(client, types.SimpleNamespace(run="slow")) == [None, None]
            assert time.monotonic() - t < 5
            deadline = time.monotonic() + 10
            while run_keys(client, "slow") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert run_keys(client, "slow") == []

            def interrupted(*args, **kwargs):
                raise KeyboardInterrupt

            monkeypatch.setattr(distributed, "wait", interrupted)
            with pytest.raises(KeyboardInterrupt) as stopped:  # (its traceback holds the run's futures)
                compute.prepare_workers(client, types.SimpleNamespace(run="stopped"))
            deadline = time.monotonic() + 10
            while run_keys(client, "stopped") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert run_keys(client, "stopped") == [] and stopped.type is KeyboardInterrupt
        finally:
            _RELEASE.set()


_RELEASE = threading.Event()  # lets the prepare tasks of the test above end


def _prepared(job, build):
    """compute._prepared in that test: its runs other than "fast" wait (the workers are threads
    of the test's process, so they share the event)."""
    if job.run != "fast":
        _RELEASE.wait(30)
    return {"built": int(build), "seconds": 0.0, "skipped": not build}
