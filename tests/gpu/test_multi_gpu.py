"""Every GPU of the node through dask-cuda (issue 52): scan carries, histogram merges and k-means
fits across all GPUs, every face (the CLI, ``dc.to_zarr``, the accessor) on all of them, a worker
killed mid-run and an interrupted run resumed, each against numpy/scipy computed on the host
from the same input: bit for bit where the op is exact (integer scans, counts, min/max, median),
within tight tolerances for float sums. Device memory is poisoned on every worker first.

One LocalCUDACluster (one worker per GPU) serves the module; the worker-kill test starts its own,
and the CLI starts its own for each command. The engine's blocks are made small in the process
that plans them (the client, or the CLI process: ``_SMALL_BLOCKS_CLI``) so that every GPU gets
several of a ~100 MB input; workers never read those sizes."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

import distconv as dc
from distconv import batch
from distconv.engine.marks import BLOCKS, COMPLETE

from ..helpers import assert_matches, small_engine_blocks

pytestmark = pytest.mark.multi_gpu

BLOCK = 4 << 20          # the engine's block size in these tests: ~30 blocks of a 128 MiB input
POISON = 4 << 30         # bytes of NaN left in each worker's cupy pool before a test's work
LAPLACIAN = [[0, 1, 0], [1, -4, 1], [0, 1, 0]]


# ---- the cluster, its workers, poisoned memory ------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    """One LocalCUDACluster for the module: a worker per GPU, every GPU of the node."""
    import cupy

    with dc.cluster({"type": "cuda", "dashboard_address": "127.0.0.1:0"}, quiet=True) as client:
        assert len(_workers(client)) == cupy.cuda.runtime.getDeviceCount() >= 2
        yield client


@pytest.fixture
def client(cluster):
    """The module's client, current for the test, with every worker's device memory poisoned."""
    with cluster.as_current():
        _poison(cluster)
        yield cluster


def _workers(client) -> list:
    return sorted(client.scheduler_info()["workers"])


def _poison(client, nbytes=POISON):
    """NaN left in each worker's cupy pool (tests/helpers.py poison_gpu_pool, on the workers): an
    element a kernel fails to write shows up."""

    def poison(n):
        import cupy

        blk = cupy.full(n // 4 + 1024, np.nan, dtype=np.float32)
        cupy.cuda.Device().synchronize()
        del blk

    client.run(poison, nbytes)


@contextlib.contextmanager
def _every_worker_runs_blocks(client, also=()):
    """Asserts that distconv's block tasks (not carries or merges; ``also``: other task name
    prefixes that count) ran on every worker."""
    from dask.utils import key_split
    from distributed import get_task_stream

    with get_task_stream(client) as ts:
        yield
    ran = {}
    for t in ts.data:
        name = key_split(t["key"])
        # the engine's blocks: <steps>-<tag>-<token>-<i> (a carried scan's own part scan_...);
        # dask's path: distconv-<step>-...
        engine = re.fullmatch(r"(scan_)?[A-Za-z]\w*(-[A-Za-z]+)*-[0-9a-f]{32}-\d+", str(t["key"]))
        if (engine or name.startswith(("distconv-", *also))) and \
                not name.startswith(("merge_", "carry_")) and name not in ("distconv-carry", "distconv-merge"):
            ran.setdefault(t["worker"], set()).add(name)
    assert set(ran) == set(_workers(client)), f"blocks ran on {sorted(ran)} of {_workers(client)}: {ran}"


# ---- dask arrays of cupy chunks spread over every GPU ------------------------------------------

def _spread(client, make, n: int):
    """(a dask array of cupy chunks ``make(0)``, ..., ``make(n - 1)`` along axis 0, chunk i made
    on the GPU of worker i * W // n and persisted there; the same array in numpy)."""
    import cupy
    from distributed import wait

    workers = _workers(client)

    def on_gpu(i):
        import cupy

        return cupy.asarray(make(i))

    host = [make(i) for i in range(n)]
    futures = [client.submit(on_gpu, i, workers=[workers[i * len(workers) // n]], allow_other_workers=False,
                             pure=False) for i in range(n)]
    parts = [da.from_delayed(f, h.shape, h.dtype, meta=cupy.empty((0,) * h.ndim, h.dtype))
             for f, h in zip(futures, host)]
    x = client.persist(da.concatenate(parts, axis=0))
    wait(x)
    held = {min(ws) for ws in client.who_has(x).values() if ws}
    assert held == set(workers), f"chunks on {sorted(held)} of {workers}"
    del futures
    return x, np.concatenate(host)


def _fetch(client, y):
    """A lazy result, computed on the cluster and brought to the host as numpy."""
    import cupy

    y = da.asarray(y)
    return client.compute(y.map_blocks(cupy.asnumpy, dtype=y.dtype,
                                       meta=np.empty((0,) * y.ndim, y.dtype))).result()


def _rows(dtype, cols, rows, seed, lo=None, hi=None):
    """make(i): chunk i, (rows, cols) (1-D when cols is None), the same wherever it is made."""

    def make(i):
        g = np.random.default_rng([seed, i])
        shape = (rows,) if cols is None else (rows, cols)
        if np.dtype(dtype).kind in "iu":
            return g.integers(lo, hi, shape, dtype=dtype)
        return g.standard_normal(shape).astype(dtype)

    return make


# ---- Zarr inputs and workflows ----------------------------------------------------------------

def _zarr(path, x, chunks):
    z = zarr.create_array(str(path), shape=x.shape, chunks=chunks, dtype=x.dtype,
                          compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = x
    return str(path)


def _read(path):
    return zarr.open_array(str(path), mode="r")[...]


def _workflow_file(tmp_path, name, src, steps, **outputs) -> Path:
    doc = {"name": name, "input": {"path": str(src)}, "steps": steps,
           "outputs": {"path": str(tmp_path / f"{name}.zarr"), **outputs}}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


# ---- 1. a scan along axis 0 carried across every GPU, on the engine -----------------------------

@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_engine_cumsum_carries_across_every_gpu(tmp_path, monkeypatch, client, rng, dtype):
    """cumsum along axis 0 of a Zarr array, through a workflow and through dc.to_zarr: 32 blocks
    of 256 rows, 8 per GPU, each block's carry the sum of every block before it, across GPUs."""
    small_engine_blocks(monkeypatch, BLOCK, 1 << 20)
    shape, chunks = (8192, 2048), (256, 2048)
    x = (rng.integers(-1000, 1000, shape, dtype=np.int32) if dtype == "int32"
         else rng.standard_normal(shape)).astype(dtype)
    src = _zarr(tmp_path / "in.zarr", x, chunks)
    ref = np.cumsum(x, axis=0)  # int32 -> int64, as numpy
    blocks = shape[0] // chunks[0]

    def check(got):
        assert got.dtype == ref.dtype
        if ref.dtype.kind == "f":
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
        else:
            np.testing.assert_array_equal(got, ref)

    wf = batch.load(_workflow_file(tmp_path, "scan", src, [{"op": "cumsum", "axis": 0}]))
    with _every_worker_runs_blocks(client):
        s = batch.run(wf, client, progress=False)
    assert s["path"] == "direct", s.get("why_general")
    assert any(k.startswith("cumsum-") for k in s["step_seconds"]), s["step_seconds"]  # the job's own blocks
    check(_read(wf.outputs["path"]))

    _poison(client)
    with _every_worker_runs_blocks(client):
        report = dc.to_zarr(dc.cumsum(da.from_zarr(src), axis=0), str(tmp_path / "py.zarr"), client=client)
    assert report["path"] == "engine" and report["tasks"] == blocks, report
    check(_read(tmp_path / "py.zarr"))


# ---- 2. a scan of a dask array of cupy chunks spread over every GPU -----------------------------

def test_dask_of_cupy_scans_across_every_gpu(client):
    """16 chunks, 4 per GPU on 4 GPUs: along axis 0 each chunk's carry crosses the GPUs; along
    axis 1 a GPU's chunks run as one task. Integer sums, min and max are exact."""
    xi, ai = _spread(client, _rows(np.int32, 1024, 1024, 1, -1000, 1000), 16)
    with _every_worker_runs_blocks(client):
        got = _fetch(client, dc.cumsum(xi, axis=0))
    np.testing.assert_array_equal(got, np.cumsum(ai, axis=0))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(_fetch(client, dc.cumsum(xi, axis=1)), np.cumsum(ai, axis=1))
    np.testing.assert_array_equal(_fetch(client, dc.cummax(xi, axis=0)), np.maximum.accumulate(ai, axis=0))
    np.testing.assert_array_equal(_fetch(client, dc.cummin(xi, axis=0)), np.minimum.accumulate(ai, axis=0))
    xf, af = _spread(client, _rows(np.float64, 512, 1024, 2), 16)
    ref = np.cumsum(af, axis=0)
    np.testing.assert_allclose(_fetch(client, dc.cumsum(xf, axis=0)), ref, rtol=1e-10,
                               atol=1e-10 * np.abs(ref).max())
    np.testing.assert_array_equal(_fetch(client, dc.cummax(xf, axis=0)), np.maximum.accumulate(af, axis=0))


def test_filter_halos_cross_every_gpu(client):
    """correlate with mode wrap (the first and last chunks' halos come from the far GPUs), and a
    gaussian-then-Laplacian with its histogram counted in the stencil's own tasks on each GPU:
    values equal scipy's, counts equal numpy's of the chain's result, exactly."""
    x, a = _spread(client, _rows(np.float32, 512, 1024, 8), 16)
    w = np.random.default_rng(8).standard_normal((5, 5))
    with _every_worker_runs_blocks(client):
        got = _fetch(client, dc.correlate(x, w, mode="wrap"))
    np.testing.assert_allclose(got, ndi.correlate(a.astype(np.float64), w, mode="wrap"), rtol=1e-4, atol=1e-4)

    chain = dc.laplace(dc.gaussian_filter(x, 1.0))  # laplace: second differences, mode nearest
    values = _fetch(client, chain)
    g = ndi.gaussian_filter(a, 1.0)
    ref = sum(ndi.correlate1d(g, [1.0, -2.0, 1.0], axis=k, mode="nearest") for k in range(2))
    assert_matches(values, ref)
    with _every_worker_runs_blocks(client):
        h, _ = dc.histogram(dc.laplace(dc.gaussian_filter(x, 1.0)), bins=64, range=(-1.0, 1.0))
        counts = _fetch(client, h)
    np.testing.assert_array_equal(counts, np.histogram(values, bins=64, range=(-1.0, 1.0))[0])


# ---- 3. histograms merged across every GPU ------------------------------------------------------

def test_histograms_merge_across_every_gpu(client):
    """dc.histogram (counts exact, weighted sums close), dc.bincount and dc.histogram2d of data
    spread over every GPU: per-chunk counts on each GPU, tree-merged, equal numpy's."""
    n = 16
    x, a = _spread(client, _rows(np.float32, None, 1 << 20, 3), n)
    y, b = _spread(client, _rows(np.float32, None, 1 << 20, 4), n)
    w, wa = _spread(client, _rows(np.float64, None, 1 << 20, 5), n)
    k, ka = _spread(client, _rows(np.int32, None, 1 << 20, 6, 0, 1000), n)

    with _every_worker_runs_blocks(client):
        h, edges = dc.histogram(x, bins=256, range=(-4.0, 4.0))
        counts = _fetch(client, h)
    ref, ref_edges = np.histogram(a, bins=256, range=(-4.0, 4.0))
    np.testing.assert_array_equal(counts, ref)
    np.testing.assert_array_equal(edges, ref_edges)

    hw, _ = dc.histogram(x, bins=64, range=(-3.0, 3.0), weights=w)
    np.testing.assert_allclose(_fetch(client, hw), np.histogram(a, bins=64, range=(-3.0, 3.0), weights=wa)[0],
                               rtol=1e-9, atol=1e-9)

    with pytest.warns(UserWarning, match="bincount computes"):
        bc = dc.bincount(k, minlength=1200)
    got = _fetch(client, bc)
    np.testing.assert_array_equal(got, np.bincount(ka, minlength=1200))
    assert got.shape == (1200,)

    h2, xe, ye = dc.histogram2d(x, y, bins=(32, 16), range=((-4.0, 4.0), (-3.0, 3.0)))
    r2, rxe, rye = np.histogram2d(a, b, bins=(32, 16), range=((-4.0, 4.0), (-3.0, 3.0)))
    np.testing.assert_array_equal(_fetch(client, h2), r2)
    np.testing.assert_array_equal(xe, rxe)
    np.testing.assert_array_equal(ye, rye)


def test_workflow_histogram_on_the_engine_across_every_gpu(tmp_path, monkeypatch, client, rng):
    """outputs.histogram counted by the engine's blocks on every GPU as they write the result,
    merged: numpy's counts of the written output, exactly."""
    small_engine_blocks(monkeypatch, BLOCK, 1 << 20)
    x = rng.standard_normal((8192, 2048)).astype(np.float32)
    src = _zarr(tmp_path / "in.zarr", x, (256, 2048))
    hist = {"bins": 64, "range": [-2.0, 2.0], "json": str(tmp_path / "h.json")}
    wf = batch.load(_workflow_file(tmp_path, "hist", src, [{"op": "gaussian_filter", "sigma": 1.0}],
                                   histogram=hist))
    with _every_worker_runs_blocks(client):
        s = batch.run(wf, client, progress=False)
    assert s["path"] == "direct", s.get("why_general")
    out = _read(wf.outputs["path"])
    assert_matches(out, ndi.gaussian_filter(x, 1.0))
    h = json.loads(Path(hist["json"]).read_text())
    ref, edges = np.histogram(out, bins=64, range=(-2.0, 2.0))
    assert h["counts"] == ref.tolist()
    assert sum(h["counts"]) > 0.9 * out.size
    np.testing.assert_allclose(h["edges"], edges, rtol=1e-7)


# ---- 4. k-means across every GPU ----------------------------------------------------------------

def _blobs(k: int, d: int, rows: int, seed: int):
    """make(i) of (rows, d) float32 descriptors around ``k`` well-separated centres (no row
    near a tie between two centres), and the centres; make_groups(i): an image id per row."""
    centres = np.random.default_rng(seed).uniform(-10, 10, (k, d))

    def make(i):
        g = np.random.default_rng([seed, i])
        return (centres[g.integers(0, k, rows)] + 0.5 * g.standard_normal((rows, d))).astype(np.float32)

    def make_groups(i):
        return np.random.default_rng([seed, i, 1]).integers(0, 5, rows, dtype=np.int32)

    return make, make_groups, centres


def test_kmeans_fit_assign_and_bovw_across_every_gpu(client):
    """Lloyd's iterations with each GPU's partial sums tree-merged: the same centres (close) and
    labels (equal) as dc.KMeans on numpy with the same seed; assignment and per-group counts
    of dask-of-cupy descriptors equal numpy's."""
    make, make_groups, centres = _blobs(8, 16, 32768, 7)
    X, Xh = _spread(client, make, 16)
    G, Gh = _spread(client, make_groups, 16)

    ref = dc.KMeans(n_clusters=8, seed=0, max_iter=50).fit(Xh)
    # the partial sums' tasks are named after their function (_host_partials, which dask's
    # key_split reads as host_partials), not distconv-...
    with _every_worker_runs_blocks(client, also=("host_partials",)):
        km = dc.KMeans(n_clusters=8, seed=0, max_iter=50).fit(X)
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-4, atol=1e-4)
    labels = _fetch(client, dc.kmeans_assign(X, km.cluster_centers_))
    np.testing.assert_array_equal(labels, np.asarray(ref.labels_))
    assert len(np.unique(labels)) == 8

    C = centres + 0.1  # fixed centroids: assignments and counts exact
    np.testing.assert_array_equal(_fetch(client, dc.kmeans_assign(X, C)), dc.kmeans_assign(Xh, C))
    with _every_worker_runs_blocks(client):
        got = _fetch(client, dc.bovw_histogram(X, C, groups=G, n_groups=5))
    want = dc.bovw_histogram(Xh, C, groups=Gh, n_groups=5)
    np.testing.assert_array_equal(got, want)
    assert got.sum() == len(Xh)


# ---- 5. every face on every GPU: the CLI, dc.to_zarr, the accessor -------------------------------

# `distconv run` (cli.entry, the function the `distconv` command runs) with the engine's blocks
# made small in its own process, which plans them (no dask config reaches that size)
_SMALL_BLOCKS_CLI = ("import sys\n"
                     "from distconv.engine import output, plan\n"
                     "plan.GPU_CHUNK_BYTES = int(sys.argv.pop(1))\n"
                     "output.SHARD_MIN_BYTES = 0\n"
                     "from distconv.cli import entry\n"
                     "entry()\n")


def _cli(tmp_path, wf, *flags, threads=None, block=BLOCK, popen=False):
    """`distconv run wf --cluster <a cuda cluster on every GPU> --json` (started, with popen, in
    a process group of its own, as a terminal's job is)."""
    cfg = {"type": "cuda", "dashboard_address": "127.0.0.1:0"}
    if threads:
        cfg["threads_per_worker"] = threads
    c = tmp_path / "cluster.yaml"
    c.write_text(yaml.safe_dump({"cluster": cfg}))
    cmd = [sys.executable, "-c", _SMALL_BLOCKS_CLI, str(block), "run", str(wf), "--cluster", str(c),
           "--no-progress", "--json", str(tmp_path / "summary.json"), *flags]
    env = {**os.environ, "DASK_DISTCONV__CLUSTER_STATE": str(tmp_path / "state" / "cluster.json")}
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                env=env, start_new_session=True)
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The README's input as a Zarr array and as a dataset, and scipy's gaussian-then-Laplacian."""
    import dask
    import xarray as xr

    root = tmp_path_factory.mktemp("demo")
    x = np.random.default_rng(52).standard_normal((8192, 4096)).astype(np.float32)
    src = _zarr(root / "in.zarr", x, (256, 4096))
    ds = xr.Dataset({"v": (("y", "x"), x, {"units": "K"})},
                    coords={"y": np.arange(x.shape[0]), "x": np.arange(x.shape[1]) * 0.5})
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():  # here, not on the cluster
        warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")
        ds.chunk({"y": 256}).to_zarr(root / "ds.zarr", zarr_format=3, consolidated=True)
    ref = ndi.correlate(ndi.gaussian_filter(x, 2.0), np.array(LAPLACIAN, float), mode="nearest")
    return {"x": x, "src": src, "ds": str(root / "ds.zarr"), "ref": ref}


def test_cli_runs_the_demo_on_every_gpu(tmp_path, demo):
    steps = [{"op": "gaussian_filter", "sigma": 2.0}, {"op": "correlate", "weights": LAPLACIAN, "mode": "nearest"}]
    wf = _workflow_file(tmp_path, "demo", demo["src"], steps)
    res = _cli(tmp_path, wf)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["path"] == "direct", s.get("why_general")
    assert "path: direct" in res.stdout
    assert_matches(_read(tmp_path / "demo.zarr"), demo["ref"])


def test_dc_to_zarr_runs_the_readme_snippet_on_every_gpu(tmp_path, monkeypatch, client, demo):
    small_engine_blocks(monkeypatch, BLOCK, 1 << 20)
    y = dc.gaussian_filter(da.from_zarr(demo["src"]), sigma=2.0)
    z = dc.correlate(y, LAPLACIAN, mode="nearest")
    with _every_worker_runs_blocks(client):
        report = dc.to_zarr(z, str(tmp_path / "out.zarr"), client=client)
    assert report["path"] == "engine" and report["tasks"] == 8192 // 256, report
    assert_matches(_read(tmp_path / "out.zarr"), demo["ref"])
    assert (tmp_path / "out.zarr" / COMPLETE).exists()


def test_accessor_to_zarr_runs_on_every_gpu(tmp_path, monkeypatch, client, demo):
    import xarray as xr

    small_engine_blocks(monkeypatch, BLOCK, 1 << 20)
    ds = xr.open_zarr(demo["ds"])
    smooth = ds.distconv.gaussian_filter({"y": 2.0, "x": 2.0})
    lap = smooth.distconv.correlate(LAPLACIAN, dims=["y", "x"], mode="nearest")
    with _every_worker_runs_blocks(client):
        report = lap.distconv.to_zarr(str(tmp_path / "out.zarr"), client=client)
    assert report["v"]["path"] == "engine", report
    back = xr.open_zarr(tmp_path / "out.zarr")
    assert back.v.dims == ("y", "x") and back.v.attrs["units"] == "K"
    np.testing.assert_array_equal(back.x.values, ds.x.values)
    assert_matches(back.v.values, demo["ref"])


# ---- 6. a worker killed mid-run; an interrupted run resumed ------------------------------------

MEDIAN_SHAPE, MEDIAN_CHUNKS = (8192, 2048), (64, 2048)  # 128 blocks of 512 KiB


@pytest.fixture(scope="module")
def median_case(tmp_path_factory):
    """A Zarr input and scipy's 5x5 median of it (a selection: the GPU's is exact)."""
    root = tmp_path_factory.mktemp("median")
    x = np.random.default_rng(53).standard_normal(MEDIAN_SHAPE).astype(np.float32)
    return {"src": _zarr(root / "in.zarr", x, MEDIAN_CHUNKS), "ref": ndi.median_filter(x, size=5)}


def _first_mark(marks: Path, deadline_s: float = 120) -> int:
    """Waits for the first block mark of a run; the number written by then."""
    deadline = time.time() + deadline_s
    while time.time() < deadline and not (marks.is_dir() and any(marks.iterdir())):
        time.sleep(0.002)
    return len(list(marks.iterdir())) if marks.is_dir() else 0


def test_worker_killed_mid_run_on_every_gpu_output_identical(tmp_path, monkeypatch, median_case):
    """A worker of the four killed once the first block is written: its blocks run on the
    others or on the worker its nanny restarts; the output equals a clean run's and scipy's."""
    import cupy

    small_engine_blocks(monkeypatch, MEDIAN_CHUNKS[0] * MEDIAN_CHUNKS[1] * 4, 1 << 20)
    blocks = MEDIAN_SHAPE[0] // MEDIAN_CHUNKS[0]
    wf = batch.load(_workflow_file(tmp_path, "median", median_case["src"],
                                   [{"op": "median_filter", "size": 5}]))
    marks = Path(wf.outputs["path"]) / BLOCKS
    cfg = {"type": "cuda", "threads_per_worker": 1, "dashboard_address": "127.0.0.1:0"}
    with dc.cluster(cfg, quiet=True) as client:
        assert len(_workers(client)) == cupy.cuda.runtime.getDeviceCount()
        _poison(client)
        s = batch.run(wf, client, progress=False)
        assert s["path"] == "direct", s.get("why_general")
        clean = _read(wf.outputs["path"])
        np.testing.assert_array_equal(clean, median_case["ref"])
        pids = list(client.run(os.getpid).values())
        seen = []

        def kill_one():
            seen.append(_first_mark(marks, 60))
            os.kill(pids[0], signal.SIGKILL)

        _poison(client)
        killer = threading.Thread(target=kill_one)
        killer.start()
        s = batch.run(wf, client, overwrite=True, progress=False)
        killer.join()
        assert s["path"] == "direct"
    assert 0 < seen[0] < blocks, f"the kill must land mid-run: {seen[0]} of {blocks} blocks written"
    np.testing.assert_array_equal(_read(wf.outputs["path"]), clean)


def test_ctrl_c_mid_run_on_every_gpu_then_resume_finishes_bit_for_bit(tmp_path, median_case):
    """`distconv run` on every GPU, Ctrl-C (SIGINT to its process group) once the first block is
    written: one line, exit 130; `--resume` writes only the missing blocks, and the output
    equals scipy's exactly."""
    blocks = MEDIAN_SHAPE[0] // MEDIAN_CHUNKS[0]
    block = MEDIAN_CHUNKS[0] * MEDIAN_CHUNKS[1] * 4
    wf = _workflow_file(tmp_path, "median", median_case["src"], [{"op": "median_filter", "size": 5}])
    proc = _cli(tmp_path, wf, threads=1, block=block, popen=True)
    try:
        written = _first_mark(tmp_path / "median.zarr" / BLOCKS)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert 0 < written < blocks, f"the interrupt must land mid-run: {written} of {blocks} blocks written"
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert "--resume" in err
    assert not (tmp_path / "median.zarr" / COMPLETE).exists()

    res = _cli(tmp_path, wf, "--resume", threads=1, block=block)
    assert res.returncode == 0, res.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["path"] == "direct", s.get("why_general")
    total = int(np.prod(MEDIAN_SHAPE)) * 4
    resumed = s.get("resumed_bytes", 0)  # written by the interrupted run, kept
    assert 0 < resumed < total and s["bytes_out"] + resumed == total, s
    np.testing.assert_array_equal(_read(tmp_path / "median.zarr"), median_case["ref"])
    assert (tmp_path / "median.zarr" / COMPLETE).exists()
