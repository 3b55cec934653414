"""A job's rehearsal (engine/rehearsal.py) builds every kernel its blocks launch: with a fresh
kernel cache, a process that rehearses the job builds kernels, and a second process that then
runs the job end to end (reads, decode, chain, scan carries, histogram, encode, writes) finds
them all in the cache and builds none. Each step runs in its own process, as the rehearsal and
the workers do, so nothing is remembered in memory between them."""

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml
import zarr

from ..helpers import assert_matches

pytestmark = pytest.mark.gpu

CHILD = """
import json, sys
from distconv.engine import plan
plan.GPU_CHUNK_BYTES = 40000  # many blocks: halos and scan carries cross them
from distconv import batch
from distconv.backends.cuda import loader
from distconv.batch import direct
wf = batch.load(sys.argv[2])
before = loader.cached_kernels()
if sys.argv[1] == "rehearse":
    from distconv.engine.rehearsal import rehearse
    job = direct.direct_job(wf, True)[0]
    assert job is not None and job.gpu
    out = rehearse(job)
else:
    out = {"path": batch.run(wf, progress=False)["path"]}
print(json.dumps({**out, "new": loader.cached_kernels() - before}))
"""

# A worker's first job on a node whose kernel cache is full: its warm-up (prewarm.warm) and its
# launch of the job (rehearse without a build, as prepare runs it) load every CuPy module the
# blocks launch, so the blocks load none (a load waits for the busy device: ~0.2 s in each I/O
# slot of the job). Prints the blocks' loads: [kernel names].
LAUNCH = """
import json, re, sys
from distconv.engine import plan
plan.GPU_CHUNK_BYTES = 40000
import cupy.cuda.compiler as cc
from distconv import batch
from distconv.batch import direct
from distconv.engine import prewarm
from distconv.engine.rehearsal import rehearse
wf = batch.load(sys.argv[1])
job = direct.direct_job(wf, True)[0]
prewarm.warm()
rehearse(job, build=False)
loads, real = [], cc._compile_with_cache_cuda
def counted(source, *a, **k):
    loads.append(re.findall(r"__global__\\s+void\\s+(\\w+)", source)[:2])
    return real(source, *a, **k)
cc._compile_with_cache_cuda = counted
assert batch.run(wf, progress=False)["path"] == "direct"
print(json.dumps(loads))
"""

CASES = {
    "conv5": ("float32", (203, 161), [{"op": "correlate", "weights": [[0.04] * 5] * 5}], {}),
    "chain_hist": ("float32", (190, 97), [{"op": "gaussian_filter", "sigma": 1.5}, {"op": "laplace"}],
                   {"histogram": {"bins": 64, "range": [-1.0, 1.0]}}),
    "cumsum0": ("float32", (211, 77), [{"op": "cumsum", "axis": 0}], {}),
    "median_u8": ("uint8", (177, 91), [{"op": "median_filter", "size": 3}], {}),
    "widening": ("int16", (150, 63), [{"op": "uniform_filter", "size": 3, "output": "float64"}], {}),
    "gauss3d": ("float32", (41, 37, 29), [{"op": "gaussian_filter", "sigma": 1.0}], {}),
}


def _child(mode: str, wf, cache) -> dict:
    """Run CHILD; with the sources CuPy saves beside each binary, the names of the kernels it built."""
    import os
    import re

    seen = set(os.listdir(cache)) if cache.exists() else set()
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(wf)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "CUPY_CACHE_DIR": str(cache), "CUPY_CACHE_SAVE_CUDA_SOURCE": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    kernels = [re.findall(r"(?:__global__|extern \"C\")[^(]*?(\w+)\s*\(", (cache / f).read_text())[:3]
               for f in sorted(set(os.listdir(cache)) - seen) if f.endswith(".cu")]
    return {**json.loads(res.stdout.strip().splitlines()[-1]), "kernels": kernels}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("layout", ["zarr chunks", "distconv shards"])
def test_a_rehearsed_job_builds_no_kernel_in_its_blocks(tmp_path, case, layout):
    dtype, shape, steps, outputs = CASES[case]
    rng = np.random.default_rng(7)
    data = (rng.integers(0, 200, shape) if np.dtype(dtype).kind in "iu" else rng.standard_normal(shape))
    src = tmp_path / "in.zarr"
    chunks = (16,) + shape[1:]
    if layout == "zarr chunks":
        z = zarr.create_array(str(src), shape=shape, chunks=chunks, dtype=dtype)
    else:  # distconv's own layout, whose shards the blocks read in place
        z = zarr.create_array(str(src), shape=shape, chunks=(8,) + shape[1:], shards=(32,) + shape[1:], dtype=dtype)
    z[...] = data.astype(dtype)
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": str(src)}, "steps": steps, "device": "gpu",
                                  "outputs": {"path": str(tmp_path / "out.zarr"), **outputs}}))
    cache = tmp_path / "kernel-cache"
    rehearsed = _child("rehearse", wf, cache)
    assert rehearsed["built"] > 0 and rehearsed["new"] == rehearsed["built"], rehearsed
    print(case, layout, "rehearsal built", rehearsed["kernels"])
    ran = _child("run", wf, cache)
    assert (ran["path"], ran["new"], ran["kernels"]) == ("direct", 0, []), \
        f"the blocks built kernels the rehearsal did not: {ran}"


def test_distconv_run_builds_a_fresh_node_s_kernels_beside_its_cluster_and_says_so_once(tmp_path):
    """The first `distconv run` on an empty kernel cache rehearses its job while its cluster
    starts, says once what it built, and its workers load no kernel it did not build (the
    kernel log: DISTCONV_KERNEL_LOG); the second builds nothing."""
    import os

    shape = (300, 257)
    src = tmp_path / "in.zarr"
    z = zarr.create_array(str(src), shape=shape, chunks=(64, 257), dtype="float32")
    z[...] = np.random.default_rng(3).standard_normal(shape, dtype=np.float32)
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": str(src)}, "steps": [{"op": "gaussian_filter", "sigma": 2.0}],
                                  "outputs": {"path": str(tmp_path / "out.zarr")}, "device": "gpu"}))
    (tmp_path / "cluster.yaml").write_text("cluster:\n  type: cuda\n  n_workers: 1\n  dashboard_address: null\n")
    cache = tmp_path / "kernel-cache"
    log = tmp_path / "kernels.log"
    env = {**os.environ, "CUPY_CACHE_DIR": str(cache), "DISTCONV_KERNEL_LOG": str(log)}
    lines = []
    for k in range(2):
        res = subprocess.run([sys.executable, "-m", "distconv.cli", "run", str(wf), "--overwrite", "--no-progress",
                              "--cluster", str(tmp_path / "cluster.yaml"), "--json", str(tmp_path / f"{k}.json")],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        lines.append([ln for ln in res.stdout.splitlines() if "GPU kernels" in ln])
        summary = json.loads((tmp_path / f"{k}.json").read_text())
        assert summary["path"] == "direct"
        binaries = len([f for f in cache.iterdir() if f.is_file()])
        if k == 0:
            assert summary["kernel_builds"]["built"] > 0, summary.get("kernel_builds")
            files = binaries
            loaded = [ln.split("\t") for ln in log.read_text().splitlines()]
            rehearsed = {(pat, name) for _, proc, _, pat, name in loaded if proc == "MainProcess"}
            in_workers = {(pat, name) for _, proc, _, pat, name in loaded if proc != "MainProcess"}
            assert rehearsed and in_workers <= rehearsed, (in_workers - rehearsed, loaded)
        else:  # not a fresh node any more: no rehearsal of its own, the job looked up on the host
            assert "kernel_builds" not in summary and binaries == files
    assert len(lines[0]) == 1 and "built" in lines[0][0] and lines[1] == [], lines
    import scipy.ndimage as ndi

    np.testing.assert_allclose(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...],
                               ndi.gaussian_filter(z[...], 2.0), rtol=1e-5, atol=1e-5)


def test_the_python_face_rehearses_once_a_host_before_its_blocks(tmp_path):
    """dc.to_zarr on a cluster: one worker of each host builds the job's kernels first (a mark
    in the kernel cache says so), the first call says so once, and the result is scipy's."""
    import os

    import scipy.ndimage as ndi

    shape = (300, 211)
    src = tmp_path / "in.zarr"
    x = np.random.default_rng(5).standard_normal(shape, dtype=np.float32)
    z = zarr.create_array(str(src), shape=shape, chunks=(64, 211), dtype="float32")
    z[...] = x
    cache = tmp_path / "kernel-cache"
    code = f"""
import json, os
import dask.array as da
import distconv as dc

if __name__ == "__main__":
    with dc.cluster({{"type": "cuda", "n_workers": 1, "dashboard_address": None}}, quiet=True) as client:
        for out in ("a.zarr", "b.zarr"):
            dc.to_zarr(dc.gaussian_filter(da.from_zarr({str(src)!r}), 2.0), out)
        marks = os.listdir(os.path.join(os.environ["CUPY_CACHE_DIR"], "distconv-rehearsed"))
        print(json.dumps(len(marks)))
"""
    (tmp_path / "face.py").write_text(code)
    res = subprocess.run([sys.executable, str(tmp_path / "face.py")], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "CUPY_CACHE_DIR": str(cache)}, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.strip().splitlines()[-1]) == 1
    said = [ln for ln in res.stdout.splitlines() if "GPU kernels" in ln]
    assert len(said) == 1 and "built" in said[0], res.stdout  # the first to_zarr says so, once
    for out in ("a.zarr", "b.zarr"):
        np.testing.assert_allclose(zarr.open_array(str(tmp_path / out), mode="r")[...], ndi.gaussian_filter(x, 2.0),
                                   rtol=1e-5, atol=1e-5)


def test_a_rehearsal_leaves_the_frames_slot_0_holds_alone(tmp_path):
    """A worker rehearses a job of new kernels while a block of another job may hold I/O slot 0's
    encoded frames until they are written (a kept cluster, two clients): the rehearsal's encode
    goes to pinned memory of its own, and slot 0's frames stay as they were."""
    from distconv import batch
    from distconv.backends.cuda import transfer, zstd
    from distconv.batch import direct
    from distconv.engine.rehearsal import rehearse

    if not zstd.available():  # the host's encoder has no slots: nothing to show
        pytest.skip("nvCOMP is not installed")

    src = tmp_path / "in.zarr"
    z = zarr.create_array(str(src), shape=(203, 161), chunks=(16, 161), dtype="float32")
    z[...] = np.random.default_rng(5).standard_normal((203, 161), dtype=np.float32)
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": str(src)}, "steps": CASES["conv5"][2], "device": "gpu",
                                  "outputs": {"path": str(tmp_path / "out.zarr")}}))
    job = direct.direct_job(batch.load(str(wf)), True)[0]
    held = transfer.staging(0, "encoded", 1 << 20)
    held[:] = 7
    rehearse(job)
    assert (held == 7).all()


@pytest.mark.parametrize("case", ["conv5", "gauss3d", "chain_hist"])
def test_a_worker_s_launch_of_a_job_loads_every_kernel_its_blocks_launch(tmp_path, case):
    import os

    dtype, shape, steps, outputs = CASES[case]
    src = tmp_path / "in.zarr"
    z = zarr.create_array(str(src), shape=shape, chunks=(16,) + shape[1:], dtype=dtype)
    z[...] = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    wf = tmp_path / "wf.yaml"
    wf.write_text(yaml.safe_dump({"input": {"path": str(src)}, "steps": steps, "device": "gpu",
                                  "outputs": {"path": str(tmp_path / "out.zarr"), **outputs}}))
    cache = tmp_path / "kernel-cache"
    _child("rehearse", wf, cache)  # the node's build: the cache holds every kernel the blocks launch
    res = subprocess.run([sys.executable, "-c", LAUNCH, str(wf)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "CUPY_CACHE_DIR": str(cache)})
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.strip().splitlines()[-1]) == [], "the blocks loaded kernels the launch did not"
    from distconv import batch  # the blocks' values: the CPU path's (numpy's kernels) on the same workflow

    cpu = tmp_path / "cpu.yaml"
    cpu.write_text(yaml.safe_dump({"input": {"path": str(src)}, "steps": steps, "device": "cpu",
                                   "outputs": {"path": str(tmp_path / "cpu.zarr")}}))
    batch.run(batch.load(str(cpu)), progress=False)
    assert_matches(zarr.open_array(str(tmp_path / "out.zarr"))[...], zarr.open_array(str(tmp_path / "cpu.zarr"))[...])
