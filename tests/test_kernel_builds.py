"""`distconv run`'s kernel builds beside its cluster's start (session/builds.py), where no GPU
is: nothing is started for a CPU cluster, and the rehearsal's own process reports that it built
nothing instead of failing (the GPU side: tests/gpu/test_rehearsal_gpu.py)."""

import json
import subprocess
import sys

from distconv.session import builds


def test_no_rehearsal_for_a_cluster_of_cpu_workers():
    assert builds.KernelBuilds.start(["wf.yaml"], {"type": "cpu"}) is None


def test_the_rehearsal_process_reports_nothing_built_where_it_cannot_build(tmp_path):
    wf = tmp_path / "wf.yaml"
    wf.write_text("input: {path: in.zarr, synthetic: {shape: [40, 30], chunks: [10, 30]}}\n"
                  "steps: [{op: gaussian_filter, sigma: 1.0}]\noutputs: {path: out.zarr}\n")
    res = subprocess.run([sys.executable, "-m", "distconv.session.builds", str(wf), str(tmp_path / "missing.yaml")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"built": 0, "seconds": 0, "skipped": 0}


def test_the_message_says_what_was_built_once():
    assert builds.message(None) is None and builds.message({"built": 0, "seconds": 0.4}) is None
    line = builds.message({"built": 6, "seconds": 4.52})
    assert "built 6 GPU kernels" in line and "4.5 s" in line and "later runs skip this" in line
