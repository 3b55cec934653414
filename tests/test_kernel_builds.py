"""`distconv run`'s kernel builds beside its cluster's start (session/builds.py), where no GPU
is: nothing is started for a CPU cluster, and the rehearsal's own process reports that it built
nothing instead of failing (the GPU side: tests/gpu/test_rehearsal_gpu.py)."""

import subprocess
import sys

from distconv.session import builds


def test_no_rehearsal_for_a_cluster_of_cpu_workers():
    assert builds.KernelBuilds.start({"type": "cpu"}) is None


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
