"""Workflows on S3-compatible object storage: a local S3 server (moto) on 127.0.0.1, Zarr in and
out through fsspec, values checked against scipy, and the ownership rules (never delete what
distconv did not write, resume) holding on object keys as they do on folders."""

import json
import subprocess
import sys
import uuid

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch as workflow
from distconv.batch import direct
from distconv.engine.fencing import block_name
from distconv.engine.marks import BLOCKS, COMPLETE, OWNER

from .helpers import claims_at_once, small_engine_blocks

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")


@pytest.fixture(scope="module")
def endpoint():
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    yield f"http://{host}:{port}"
    srv.stop()


@pytest.fixture
def s3(endpoint, monkeypatch):
    """A fresh bucket; the environment points boto (here and in worker processes) at the server."""
    import s3fs

    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    bucket = f"dc-{uuid.uuid4().hex[:12]}"
    fs = s3fs.S3FileSystem(use_listings_cache=False, skip_instance_cache=True)
    fs.mkdir(bucket)
    return f"s3://{bucket}", fs, env


def _input(url, rng, shape=(70, 45), chunks=(16, 45)):
    a = rng.standard_normal(shape).astype(np.float32)
    z = zarr.create_array(url, shape=shape, chunks=chunks, dtype=a.dtype)
    z[...] = a
    return a


def _workflow(tmp_path, base, **outputs):
    doc = {"input": {"path": f"{base}/in.zarr"}, "chunks": [35, 45],
           "steps": [{"op": "gaussian_filter", "sigma": 1.5},
                     {"op": "correlate", "weights": [[0, 1, 0], [1, -4, 1], [0, 1, 0]], "mode": "nearest"}],
           "outputs": {"path": f"{base}/out.zarr", **outputs}}
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _expected(a):
    return ndi.correlate(ndi.gaussian_filter(a, 1.5), [[0, 1, 0], [1, -4, 1], [0, 1, 0]], mode="nearest")


def test_cli_runs_a_workflow_from_s3_to_s3_on_worker_processes(tmp_path, s3, rng):
    base, fs, env = s3
    a = _input(f"{base}/in.zarr", rng)
    wf = _workflow(tmp_path, base, histogram={"bins": 16, "range": [-3.0, 3.0], "json": "hist.json"})
    c = tmp_path / "cluster.yaml"
    c.write_text("cluster:\n  type: cpu\n  n_workers: 2\n  threads_per_worker: 1\n  processes: true\n"
                 "  dashboard_address: '127.0.0.1:0'\n")
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(wf), "--cluster", str(c), "--no-progress"]
    import os

    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, **env})
    assert res.returncode == 0, res.stderr
    out = zarr.open_array(f"{base}/out.zarr", mode="r")
    got = out[...]
    np.testing.assert_allclose(got, _expected(a), rtol=1e-5, atol=1e-5)
    # every storage chunk was written (a missing one would read back as the fill value)
    bucket = base.removeprefix("s3://")
    assert len(fs.find(f"{bucket}/out.zarr/c")) == out.nchunks
    assert fs.isfile(f"{bucket}/out.zarr/{COMPLETE}") and not fs.exists(f"{bucket}/out.zarr/{BLOCKS}")
    hist = yaml.safe_load((tmp_path / "hist.json").read_text())
    np.testing.assert_array_equal(hist["counts"], np.histogram(got, bins=16, range=(-3, 3))[0])
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, **env})
    assert again.returncode == 2 and "exists" in again.stderr  # no overwrite by default


def test_overwrite_on_s3_deletes_only_what_distconv_wrote(tmp_path, s3, rng):
    base, fs, _ = s3
    bucket = base.removeprefix("s3://")
    _input(f"{base}/in.zarr", rng)
    # someone else's store at the output path: refused, untouched
    theirs = zarr.create_array(f"{base}/out.zarr", shape=(4,), chunks=(4,), dtype="i4")
    theirs[...] = 7
    wf = workflow.load(_workflow(tmp_path, base))
    with pytest.raises(workflow.WorkflowError, match="not written by distconv"):
        workflow.run(wf, progress=False, overwrite=True)
    assert (zarr.open_array(f"{base}/out.zarr", mode="r")[...] == 7).all()
    fs.rm(f"{bucket}/out.zarr", recursive=True)
    # our own output is replaced by --overwrite, but not once a foreign key lies in it
    workflow.run(wf, progress=False)
    workflow.run(wf, progress=False, overwrite=True)
    fs.pipe_file(f"{bucket}/out.zarr/notes.txt", b"mine")
    with pytest.raises(workflow.WorkflowError, match="also holds 'notes.txt'"):
        workflow.run(wf, progress=False, overwrite=True)
    assert fs.cat_file(f"{bucket}/out.zarr/notes.txt") == b"mine"


@pytest.mark.parametrize("outputs, match", [
    ({"path": "{base}/in.zarr/out"}, "lies inside the input"),
    ({"path": "{base}/in.zarr"}, "is the input path"),
    ({"histogram": {"bins": 4, "range": [0, 1], "json": "{base}/h.json"}}, "written as a local file"),
])
def test_bad_object_paths_refused_at_load(tmp_path, s3, rng, outputs, match):
    base, _, _ = s3
    _input(f"{base}/in.zarr", rng)
    outputs = yaml.safe_load(yaml.safe_dump(outputs).replace("{base}", base))
    with pytest.raises(workflow.WorkflowError, match=match):
        workflow.load(_workflow(tmp_path, base, **outputs))


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_resume_on_s3_writes_the_missing_blocks(tmp_path, s3, rng, monkeypatch, codec):
    """zstd: the engine's blocks (object storage reads and writes the same byte ranges as
    files); lz4: the general path's dask chunks."""
    import dask

    monkeypatch.setitem(dask.config.config, "distconv", {**dask.config.get("distconv", {}), "block-bytes": 0})
    small_engine_blocks(monkeypatch, block_bytes=16 * 45 * 4)
    base, fs, _ = s3
    bucket = base.removeprefix("s3://")
    a = _input(f"{base}/in.zarr", rng, shape=(64, 45))
    wf = workflow.load(_workflow(tmp_path, base, codec=codec))
    wf.chunks = [16, 45]
    first = workflow.run(wf, progress=False)
    assert first["path"] == ("direct" if codec == "zstd" else "general")
    if codec == "zstd":
        job, _, _ = direct.direct_job(wf, False)
        blocks = job.row_blocks
        assert len(blocks) == 4 and zarr.open_array(f"{base}/out.zarr", mode="r").shards is not None
    else:
        blocks = [(16 * i, 16 * i + 16) for i in range(4)]
    # as an interrupted run leaves it: no completion mark, rows 16:32 never written
    fs.rm(f"{bucket}/out.zarr/{COMPLETE}")
    token = json.loads(fs.cat_file(f"{bucket}/out.zarr/{OWNER}"))["token"]
    for r0, r1 in blocks[:1] + blocks[2:]:
        fs.pipe_file(f"{bucket}/out.zarr/{BLOCKS}/{block_name([(r0, r1), (0, 45)])}.{token}", b"")
    zarr.open_array(f"{base}/out.zarr", mode="r+")[16:32] = 0
    with pytest.raises(workflow.WorkflowError, match="incomplete"):
        workflow.run(wf, progress=False)
    s = workflow.run(wf, progress=False, resume=True)
    np.testing.assert_allclose(zarr.open_array(f"{base}/out.zarr", mode="r")[...], _expected(a), rtol=1e-5, atol=1e-5)
    assert s["bytes_out"] == 16 * 45 * 4 and s["resumed_bytes"] == 48 * 45 * 4


def test_python_and_xarray_faces_run_on_the_engine_from_s3_to_s3(s3, rng):
    """dc.to_zarr and .distconv.to_zarr over da.from_zarr / xr.open_zarr of URLs: the engine's
    blocks, values equal scipy's, and the DataArray comes back with its dims."""
    import dask.array as da
    import xarray as xr

    import distconv as dc

    base, _, _ = s3
    a = _input(f"{base}/in.zarr", rng, chunks=(35, 45))
    w = [[0, 1, 0], [1, -4, 1], [0, 1, 0]]
    y = dc.correlate(dc.gaussian_filter(da.from_zarr(f"{base}/in.zarr"), 1.5), w, mode="nearest")
    report = dc.to_zarr(y, f"{base}/out.zarr")
    assert report["path"] == "engine", report
    got = zarr.open_array(f"{base}/out.zarr", mode="r")[...]
    np.testing.assert_allclose(got, _expected(a), rtol=1e-5, atol=1e-5)

    ds = xr.Dataset({"v": (("y", "x"), a)}, coords={"y": np.arange(a.shape[0]), "x": np.arange(a.shape[1]) * 0.5})
    ds.chunk({"y": 35}).to_zarr(f"{base}/ds.zarr", zarr_format=3, consolidated=False)
    v = xr.open_zarr(f"{base}/ds.zarr", consolidated=False).v
    report = v.distconv.gaussian_filter({"y": 1.5, "x": 1.5}).distconv.to_zarr(f"{base}/smooth.zarr")
    assert report["path"] == "engine", report
    back = xr.open_zarr(f"{base}/smooth.zarr")
    assert back.v.dims == ("y", "x")
    np.testing.assert_array_equal(back.x.values, ds.x.values)
    np.testing.assert_allclose(back.v.values, ndi.gaussian_filter(a, 1.5), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["plain", "sharded", "uncompressed"])
@pytest.mark.parametrize("region", [None, {0: [9, 61], 1: [None, 40]}])
def test_every_input_layout_with_and_without_a_region_runs_on_the_engine(tmp_path, s3, rng, layout, region):
    """zarr's plain zstd chunks, shards, uncompressed chunks; the whole array or a region (its
    edges taking the steps' modes): the engine's blocks on S3, values equal scipy's."""
    base, _, _ = s3
    a = rng.standard_normal((70, 45)).astype(np.float32)
    kw = {"plain": {}, "sharded": {"shards": (32, 45), "chunks": (8, 15)},
          "uncompressed": {"compressors": None}}[layout]
    z = zarr.create_array(f"{base}/in.zarr", shape=a.shape, dtype=a.dtype, **{"chunks": (16, 45), **kw})
    z[...] = a
    doc = yaml.safe_load(_workflow(tmp_path, base).read_text())
    if region is not None:
        doc["input"]["region"] = region
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc))
    s = workflow.run(workflow.load(tmp_path / "wf.yaml"), progress=False)
    assert s["path"] == "direct", s
    ref = _expected(a[9:61, :40]) if region is not None else _expected(a)
    np.testing.assert_allclose(zarr.open_array(f"{base}/out.zarr", mode="r")[...], ref, rtol=1e-5, atol=1e-5)


def test_marks_change_by_compare_and_swap_on_s3(s3):
    """A conditional put: a mark is created once, replaced only while it is the version read;
    of two runs claiming one output at once one gets it; a completion mark written after
    another run claimed the output is refused and taken back."""
    from distconv.engine import atomic, fencing, marks, ownership

    base, fs, _ = s3
    bucket = base.removeprefix("s3://")
    p = f"{base}/m"
    assert atomic.create(p, b"one") and not atomic.create(p, b"two")
    _, version = atomic.read(p)
    assert atomic.replace(p, b"three", version) and not atomic.replace(p, b"four", version)
    assert fs.cat_file(f"{bucket}/m") == b"three"

    out = f"{base}/out.zarr"
    got, refused = claims_at_once(out)
    assert len(got) == 1 and "another run is writing it" in refused[0], (got, refused)
    first = got[0]
    fencing.stop(first)
    second = ownership.claim(out, resume=True)
    with pytest.raises(marks.Superseded, match="not marked complete"):
        marks.mark_complete(out, {}, first)
    assert not fs.exists(f"{bucket}/out.zarr/{COMPLETE}")
    marks.mark_complete(out, {}, second)
    assert marks.finished(out)


def test_a_block_of_a_stopped_run_lands_nothing_on_s3(s3):
    from distconv.engine import fencing, marks, ownership

    base, fs, _ = s3
    bucket = base.removeprefix("s3://")
    out = f"{base}/out.zarr"
    c = ownership.claim(out)
    with fencing.block_write(c, out, "0-1") as aside:
        fs.pipe_file(aside(f"{out}/c/0").removeprefix("s3://"), b"mine")
    assert fs.cat_file(f"{bucket}/out.zarr/c/0") == b"mine"
    with pytest.raises(marks.Superseded):
        with fencing.block_write(c, out, "1-2") as aside:
            fs.pipe_file(aside(f"{out}/c/1").removeprefix("s3://"), b"late")
            fencing.stop(c)
    assert not fs.exists(f"{bucket}/out.zarr/c/1")
    assert fs.find(f"{bucket}/out.zarr/{BLOCKS}") == [f"{bucket}/out.zarr/{BLOCKS}/0-1.{c.token}"]
    fencing.settle(out, c)  # block 0's file is the one its mark records


def test_no_completion_on_s3_while_a_stopped_runs_writes_may_still_land(s3, monkeypatch):
    """A stop that could not confirm its writes ended (a server-side move may outlast it): no
    run marks the output complete until marks.SETTLE_S have passed, and it says until when."""
    from distconv.engine import fencing, marks, ownership

    base, fs, _ = s3
    out = f"{base}/out.zarr"
    first = ownership.claim(out)
    fencing.stop(first)
    line = fencing.unsettled(first, ["tcp://10.0.0.7:4000"])
    assert "no run marks complete before" in line
    second = ownership.claim(out, resume=True)
    with pytest.raises(marks.Superseded, match=r"did not confirm its writes ended \(tcp://10.0.0.7:4000\).*--resume after"):
        marks.mark_complete(out, {}, second)
    assert not marks.finished(out)
    monkeypatch.setattr(marks, "SETTLE_S", 0.0)
    marks.mark_complete(out, {}, second)
    assert marks.finished(out) and "unsettled" not in marks.owner(out)
