"""Scans and regions on the engine (distconv.engine through `distconv run`): values equal
numpy's and scipy's on odd shapes with many blocks and shards; a scan along the first axis
carries across blocks (and workers), with its blocks' scans held between their two parts or,
when dropped, computed again; a region is read as a window of the input, its edges taking the
steps' modes (``region_edges: mode``) or the data around it (``data``)."""

import dask
import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch
from distconv.batch import direct
from distconv import engine
from distconv.engine import carries, settings
from distconv.engine.marks import COMPLETE

from .helpers import leave_block_marks, small_engine_blocks


@pytest.fixture
def small_blocks(monkeypatch):
    small_engine_blocks(monkeypatch)


def _workflow(tmp_path, shape, chunks, steps, dtype="float32", inp=None, **outputs):
    doc = {"input": {"path": "in.zarr", **(inp or {})}, "steps": steps,
           "outputs": {"path": "out.zarr", **outputs}}
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 20).astype(dtype)
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=shape, chunks=chunks, dtype=dtype,
                          compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = x
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    return batch.load(p), x


def _out(wf):
    return zarr.open_array(str(wf.outputs["path"]), mode="r")[...]


def _scan_ref(x, op, axis, exclusive=False, dtype=None):
    uf = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    res = uf.accumulate(x, axis=axis, dtype=dtype)
    if exclusive:  # numpy has none: the identity, then the inclusive scan shifted by one
        first = np.full_like(np.take(res, [0], axis=axis), uf.reduce(np.empty(0, res.dtype))
                             if op in ("add", "mul") else (np.iinfo(res.dtype).max if op == "min"
                                                           else np.iinfo(res.dtype).min))
        res = np.concatenate([first, np.take(res, np.arange(res.shape[axis] - 1), axis=axis)], axis=axis)
    return res


@pytest.mark.parametrize("shape, chunks, step, params, scan_op, dtype", [
    ((97, 61), (8, 16), "cumsum", {"axis": 0}, "add", "float32"),
    ((97, 61), (8, 16), "cumsum", {"axis": 1}, "add", "float32"),
    ((83, 29), (10, 29), "cumsum", {"axis": 0}, "add", "int16"),      # widens to int64, exact
    ((45, 33, 20), (4, 11, 20), "cummax", {"axis": 0}, "max", "float64"),
    ((45, 33, 20), (4, 11, 20), "cumsum", {"axis": -1}, "add", "float64"),
    ((400, 17), (7, 17), "scan", {"axis": 0, "exclusive": True}, "add", "int32"),
    ((400, 17), (7, 17), "cummin", {"axis": 0}, "min", "int32"),
    ((400, 17), (7, 17), "cumprod", {"axis": 0, "dtype": "float64"}, "mul", "float32"),
])
def test_scan_equals_numpy_across_blocks(tmp_path, small_blocks, shape, chunks, step, params, scan_op, dtype):
    wf, x = _workflow(tmp_path, shape, chunks, [{"op": step, **params}], dtype)
    if scan_op == "mul":
        x = x / 20 + 1  # products that neither vanish nor overflow
        zarr.open_array(str(tmp_path / "in.zarr"), mode="r+")[...] = x
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct", s.get("why_general")
    out_dtype = params.get("dtype") or (np.int64 if dtype.startswith("int") and scan_op == "add" else None)
    ref = _scan_ref(x, scan_op, params["axis"], params.get("exclusive", False), out_dtype)
    got = _out(wf)
    assert got.dtype == ref.dtype
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(got, ref, rtol=1e-4 if ref.dtype == np.float32 else 1e-10,
                                   atol=1e-4 * np.abs(ref).max() if ref.dtype == np.float32 else 1e-9)
    else:
        np.testing.assert_array_equal(got, ref)
    job, _, _ = direct.direct_job(wf, False)
    assert len(job.row_blocks) > 2
    assert job.carried == (params["axis"] == 0)


def test_a_chain_then_a_scan_with_its_histogram(tmp_path, small_blocks):
    wf, x = _workflow(tmp_path, (71, 40), (9, 20), [{"op": "gaussian_filter", "sigma": 1.0},
                                                   {"op": "cumsum", "axis": 0}],
                      "float64", histogram={"bins": 16, "range": [-300.0, 300.0], "json": "h.json"})
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct"
    ref = np.cumsum(ndi.gaussian_filter(x, 1.0), axis=0)
    got = _out(wf)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-9)
    import json
    from pathlib import Path

    h = json.loads(Path(wf.outputs["histogram"]["json"]).read_text())
    assert h["counts"] == np.histogram(got, bins=16, range=(-300.0, 300.0))[0].tolist()


def test_dropped_held_scans_are_computed_again(tmp_path, small_blocks):
    wf, x = _workflow(tmp_path, (90, 30), (8, 30), [{"op": "cumsum", "axis": 0}], "float64")
    with dask.config.set({settings.HOLD_KEY: 1}):  # every held block but the newest dropped
        s = batch.run(wf, progress=False)
    assert s["path"] == "direct"
    np.testing.assert_allclose(_out(wf), np.cumsum(x, axis=0), rtol=1e-12, atol=1e-9)


def test_resume_of_a_carried_scan_writes_only_missing_blocks(tmp_path, small_blocks):
    wf, x = _workflow(tmp_path, (64, 40), (8, 40), [{"op": "cumsum", "axis": 0}], "float64")
    batch.run(wf, progress=False)
    out = tmp_path / "out.zarr"
    clean = _out(wf)
    (out / COMPLETE).unlink()
    job, _, _ = direct.direct_job(wf, False)
    last = len(job.row_blocks) - 1
    leave_block_marks(out, [engine.block_mark(job, i) for i in range(last)])
    z = zarr.open_array(str(out), mode="r+")
    r0, r1 = job.row_blocks[last]
    z[r0:r1] = -1.0  # the last block's rows lost: its carry needs every block before it
    s = batch.run(wf, progress=False, resume=True)
    np.testing.assert_array_equal(_out(wf), clean)
    assert s["bytes_out"] == (r1 - r0) * 40 * 8


def test_carried_scan_across_worker_processes(tmp_path, small_blocks):
    from distributed import Client, LocalCluster

    wf, x = _workflow(tmp_path, (150, 30), (6, 30), [{"op": "cumsum", "axis": 0}], "float64")
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=":0") as c, \
            Client(c) as client:
        with __import__("distributed").get_task_stream(client) as ts:
            s = batch.run(wf, client, progress=False)
    assert s["path"] == "direct"
    names = {str(t["key"]).split("-")[0] for t in ts.data}
    assert {"cumsum", "scan_cumsum", "carry_cumsum"} <= names
    np.testing.assert_allclose(_out(wf), np.cumsum(x, axis=0), rtol=1e-12, atol=1e-9)


REGIONS = [({0: [11, 80], 1: [5, 50]}, "reflect"), ({0: [None, 40]}, "nearest"), ({1: [20, None]}, "mirror"),
           ({0: [1, 96], 1: [1, 60]}, "constant")]


@pytest.mark.parametrize("region, mode", REGIONS)
@pytest.mark.parametrize("edges", ["mode", "data"])
def test_region_equals_scipy_on_the_cut(tmp_path, small_blocks, region, mode, edges):
    steps = [{"op": "gaussian_filter", "sigma": 1.5, "mode": mode}, {"op": "laplace", "mode": "nearest"}]
    wf, x = _workflow(tmp_path, (97, 61), (8, 16), steps, "float64",
                      inp={"region": region, "region_edges": edges})
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct", s.get("why_general")
    cut = tuple(slice(*region.get(a, [None, None])) for a in range(2))
    chain = lambda v: ndi.laplace(ndi.gaussian_filter(v, 1.5, mode=mode), mode="nearest")  # noqa: E731
    ref = chain(x[cut]) if edges == "mode" else chain(x)[cut]
    got = _out(wf)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-9)


def test_region_of_a_3d_array_then_a_scan(tmp_path, small_blocks):
    region = {0: [3, 40], 2: [2, 17]}
    wf, x = _workflow(tmp_path, (45, 33, 20), (4, 11, 20), [{"op": "uniform_filter", "size": 3},
                                                             {"op": "cumsum", "axis": 0}],
                      "float64", inp={"region": region})
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct"
    v = x[3:40, :, 2:17]
    np.testing.assert_allclose(_out(wf), np.cumsum(ndi.uniform_filter(v, 3), axis=0), rtol=1e-10, atol=1e-8)


def test_a_scan_with_data_edges_takes_the_general_path(tmp_path):
    wf, x = _workflow(tmp_path, (40, 30), (10, 30), [{"op": "cumsum", "axis": 0}], "float64",
                      inp={"region": {0: [10, 30]}, "region_edges": "data"})
    s = batch.run(wf, progress=False)
    assert s["path"] == "general" and "region_edges" in s["why_general"]
    np.testing.assert_allclose(_out(wf), np.cumsum(x, axis=0)[10:30], rtol=1e-12)


def test_held_scans_of_another_run_are_dropped():
    held = carries.Held()
    a, b = np.arange(4.0), np.arange(3.0)
    held.put(("run-a", 0), a, 2**20)
    held.put(("run-b", 0), b, 2**20)  # a failed run's blocks do not stay in a kept worker
    assert held.pop(("run-a", 0)) is None
    np.testing.assert_array_equal(held.pop(("run-b", 0)), b)
