"""The direct path (Zarr -> fused stencil chain -> sharded Zarr, one task per block): values
equal scipy's on odd shapes with many blocks and shards, plain zarr reads the output, the
histogram is counted in the same pass, resume writes only missing blocks."""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch
from distconv.engine.shards import FRAME_ALIGN
from distconv.batch import direct
from distconv import engine
from distconv.engine import read, shards, slots
from distconv.engine.marks import COMPLETE

from .helpers import leave_block_marks, read_rows, small_engine_blocks, write_block


def _workflow(tmp_path, shape, chunks, steps, **outputs):
    doc = {"input": {"path": "in.zarr", "synthetic": {"shape": list(shape), "chunks": list(chunks), "seed": 3}},
           "steps": steps, "outputs": {"path": "out.zarr", **outputs}}
    p = tmp_path / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    return batch.load(p)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few shard rows, so a small array has many blocks and halos cross them."""
    small_engine_blocks(monkeypatch)


def _stored(path):
    return zarr.open_array(str(path), mode="r")


@pytest.mark.parametrize("shape, chunks", [((97, 61), (8, 16)), ((45, 33, 20), (4, 11, 20))])
def test_chain_equals_scipy_across_blocks_and_shards(tmp_path, small_blocks, shape, chunks):
    steps = [{"op": "gaussian_filter", "sigma": 1.5},
             {"op": "laplace", "mode": "nearest"},
             {"op": "correlate1d", "weights": [1.0, -2.0, 0.5, 3.0], "axis": 0, "mode": "mirror"}]
    wf = _workflow(tmp_path, shape, chunks, steps)
    assert direct.why_not(wf) is None
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct"
    x = _stored(wf.input["path"])[...]
    ref = ndi.correlate1d(ndi.laplace(ndi.gaussian_filter(x, 1.5), mode="nearest"),
                          [1.0, -2.0, 0.5, 3.0], axis=0, mode="mirror")
    out = _stored(wf.outputs["path"])
    assert out.shards is not None and out.shards != out.chunks  # sharded, small inner chunks
    got = out[...]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-4)
    job, _, _ = direct.direct_job(wf, False)
    assert len(job.row_blocks) > 2


def test_urls_run_on_the_engine_for_both_input_layouts(tmp_path, small_blocks):
    """Stores reached by URL (fsspec's memory://, as object storage is): zarr's plain chunks in,
    then distconv's shards in, every chunk and shard byte range read and written through
    fsspec; values equal scipy's."""
    import uuid

    root = f"memory://{uuid.uuid4().hex}"
    x = np.random.default_rng(5).standard_normal((83, 29)).astype(np.float32)
    zarr.create_array(f"{root}/in.zarr", shape=x.shape, chunks=(8, 16), dtype=x.dtype)[...] = x
    first = batch.run(_url_workflow(tmp_path, root, "in", "a", [{"op": "gaussian_filter", "sigma": 1.5}]), progress=False)
    smooth = _stored(f"{root}/a.zarr")
    assert first["path"] == "direct" and smooth.shards is not None
    np.testing.assert_allclose(smooth[...], ndi.gaussian_filter(x, 1.5), rtol=2e-5, atol=2e-5)
    second = batch.run(_url_workflow(tmp_path, root, "a", "b", [{"op": "laplace", "mode": "mirror"}]), progress=False)
    assert second["path"] == "direct"
    np.testing.assert_allclose(_stored(f"{root}/b.zarr")[...], ndi.laplace(smooth[...], mode="mirror"),
                               rtol=2e-5, atol=2e-4)


def _url_workflow(tmp_path, root, src, dst, steps):
    p = tmp_path / f"{dst}.yaml"
    p.write_text(yaml.safe_dump({"input": {"path": f"{root}/{src}.zarr"}, "steps": steps,
                                 "outputs": {"path": f"{root}/{dst}.zarr"}}))
    return batch.load(p)


def test_histogram_counted_in_the_same_pass(tmp_path, small_blocks):
    wf = _workflow(tmp_path, (70, 50), (10, 25), [{"op": "gaussian_filter", "sigma": 1.0}],
                   histogram={"bins": 32, "range": [-2.0, 2.0], "json": "h.json"})
    assert direct.why_not(wf) is None
    batch.run(wf, progress=False)
    h = json.loads(Path(wf.outputs["histogram"]["json"]).read_text())
    ref, edges = np.histogram(_stored(wf.outputs["path"])[...], bins=32, range=(-2.0, 2.0))
    assert h["counts"] == ref.tolist()
    np.testing.assert_allclose(h["edges"], edges)


def test_resume_writes_only_missing_blocks(tmp_path, small_blocks):
    wf = _workflow(tmp_path, (64, 40), (8, 40), [{"op": "gaussian_filter", "sigma": 1.0}])
    batch.run(wf, progress=False)
    out = Path(wf.outputs["path"])
    clean = _stored(out)[...]
    (out / COMPLETE).unlink()
    x = _stored(wf.input["path"])
    job, _, _ = direct.direct_job(wf, False)
    leave_block_marks(out, [engine.block_mark(job, i) for i in range(1, len(job.row_blocks))])
    victim = next((out / "c").iterdir())
    for f in victim.rglob("*"):
        if f.is_file():
            f.unlink()
    s = batch.run(wf, progress=False, resume=True)
    np.testing.assert_array_equal(_stored(out)[...], clean)
    r0, r1 = job.row_blocks[0]
    assert s["bytes_out"] == s["bytes_in"] == (r1 - r0) * 40 * clean.itemsize  # only block 0 ran
    assert s["resumed_bytes"] == (64 - (r1 - r0)) * 40 * clean.itemsize


@pytest.mark.parametrize("key", ["distconv.io-slots", "distconv.device-blocks", "distconv.decode-batch-bytes",
                                 "distconv.scan-hold-bytes"])
def test_bad_io_slots_config_is_refused_before_any_work(tmp_path, key):
    import dask

    wf = _workflow(tmp_path, (40, 30), (10, 30), [{"op": "gaussian_filter", "sigma": 1.0}])
    for bad in (0, "2", True):
        with dask.config.set({key: bad}):
            with pytest.raises(batch.WorkflowError, match=key.replace(".", r"\.") + ".*" + repr(bad).replace("'", ".")):
                batch.run(wf, progress=False)
    assert not Path(wf.outputs["path"]).exists() and not Path(wf.input["path"]).exists()


@pytest.mark.parametrize("bad", [0, "yes", None])
def test_bad_prewarm_config_is_refused_before_any_work(tmp_path, bad):
    import dask

    wf = _workflow(tmp_path, (40, 30), (10, 30), [{"op": "gaussian_filter", "sigma": 1.0}])
    with dask.config.set({"distconv.prewarm": bad}):
        with pytest.raises(batch.WorkflowError, match=r"distconv\.prewarm.*true or false"):
            batch.run(wf, progress=False)
    assert not Path(wf.outputs["path"]).exists() and not Path(wf.input["path"]).exists()


def test_wrap_and_non_stencil_steps_take_the_general_path(tmp_path):
    wf = _workflow(tmp_path, (40, 30), (10, 30), [{"op": "gaussian_filter", "sigma": 1.0, "mode": "wrap"}])
    s = batch.run(wf, progress=False)
    assert s.get("path") != "direct"
    np.testing.assert_allclose(_stored(wf.outputs["path"])[...],
                               ndi.gaussian_filter(_stored(wf.input["path"])[...], 1.0, mode="wrap"), atol=1e-5)
    (tmp_path / "b").mkdir()
    wf2 = _workflow(tmp_path / "b", (40, 30), (10, 30), [{"op": "cumsum", "axis": 0}, {"op": "laplace"}])
    assert direct.why_not(wf2) == "a step is neither a stencil nor a scan as the last step"


@pytest.mark.parametrize("shape, shard", [((50, 37), (16, 20)), ((9, 10, 11), (4, 10, 8))])
def test_shard_writer_read_by_plain_zarr_and_read_back(tmp_path, shape, shard):
    from distconv.backends.numpy import zstd

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    layout = shards.Layout(shape, shard, shards.inner_shape(shard, 4, 256), "<f4")
    p = str(tmp_path / "s.zarr")
    engine.create_output(p, shape, np.float32, layout, {})
    for r0 in range(0, shape[0], 2 * shard[0]):
        write_block(p, layout, x[r0:r0 + 2 * shard[0]], r0, zstd.encode_frames)
    np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], x)
    rows = min(2 * shard[0], shape[0] - shard[0])
    fr = shards.read_frames(p, layout, shard[0], shard[0] + rows)
    assert not (fr.starts % FRAME_ALIGN).any()  # frames read in place on a GPU
    flat = zstd.decode_frames(fr.buf, fr.starts, fr.sizes, layout.frame_nbytes, np.float32)
    got = shards.from_chunk_major(flat, fr.layout, fr.rows)[shard[0] - fr.row0:shard[0] - fr.row0 + rows]
    np.testing.assert_array_equal(got, x[shard[0]:shard[0] + rows])
    meta = zarr.open_array(p, mode="r").metadata.to_dict()
    assert shards.layout_of(meta, shape, np.float32) == layout
    for lo, hi in [(0, shape[0]), (1, shape[0] - 2), (shard[0] - 1, shard[0] + 2)]:
        got = read_rows(p, layout, lo, hi, zstd.decode_frames)
        np.testing.assert_array_equal(got, x[lo:hi])


def test_encoded_frames_lie_end_to_end_on_aligned_starts():
    """The encoders' layout the shard writer relies on (one piece per shard file): frame i at
    starts[i], a multiple of FRAME_ALIGN, each following the last one's padded end, zero bytes
    between; every frame a standard zstd frame of its slice of the input (the last one short)."""
    from numcodecs import Zstd

    from distconv.backends.numpy import zstd

    raw = np.random.default_rng(2).integers(0, 7, 10_007, dtype=np.uint8)
    buf, starts, sizes = zstd.encode_frames(raw, 1000, FRAME_ALIGN)
    assert len(starts) == len(sizes) == 11 and not (starts % FRAME_ALIGN).any()
    ends = starts + -(-sizes // FRAME_ALIGN) * FRAME_ALIGN
    assert (starts[1:] == ends[:-1]).all() and ends[-1] == buf.size
    gaps = np.ones(buf.size, bool)
    for i, (a, n) in enumerate(zip(starts, sizes)):
        gaps[a:a + n] = False
        assert Zstd().decode(buf[a:a + n].tobytes()) == raw[1000 * i:1000 * (i + 1)].tobytes()
    assert not buf[gaps].any()


def test_shards_written_by_zarr_read_back(tmp_path):
    """zarr's own sharded zstd arrays (frames not aligned, chunks left out where all fill)
    read through the direct reader, or None where a chunk is absent."""
    from distconv.backends.numpy import zstd

    shape, shard, inner = (64, 48), (16, 48), (8, 12)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x[16:24] = 0  # one inner-chunk row of fill values: zarr leaves those chunks out
    p = str(tmp_path / "z.zarr")
    zarr.create_array(p, shape=shape, shards=shard, chunks=inner, dtype="f4", fill_value=0,
                      compressors=zarr.codecs.ZstdCodec(level=3))[...] = x
    layout = shards.layout_of(zarr.open_array(p, mode="r").metadata.to_dict(), shape, np.float32)
    assert layout == shards.Layout(shape, shard, inner, "<f4")
    for lo, hi in [(0, 16), (5, 15), (30, 64), (31, 33)]:
        np.testing.assert_array_equal(read_rows(p, layout, lo, hi, zstd.decode_frames), x[lo:hi])
    assert read_rows(p, layout, 14, 30, zstd.decode_frames) is None


def test_distconv_output_as_input_reads_its_shards(tmp_path, small_blocks):
    """Layout (b): a run's sharded output feeds the next run (on a GPU its inner chunks are
    decoded by nvCOMP straight from the shard files)."""
    wf = _workflow(tmp_path, (90, 44), (9, 44), [{"op": "gaussian_filter", "sigma": 1.0}])
    batch.run(wf, progress=False)
    first = _stored(wf.outputs["path"])[...]
    (tmp_path / "b").mkdir()
    doc = {"input": {"path": str(wf.outputs["path"])}, "outputs": {"path": "out2.zarr"},
           "steps": [{"op": "correlate", "weights": np.ones((5, 5)).tolist(), "mode": "constant"}]}
    p = tmp_path / "b" / "wf.yaml"
    p.write_text(yaml.safe_dump(doc))
    wf2 = batch.load(p)
    src = _stored(wf.outputs["path"])
    job, _, _ = direct.direct_job(wf2, False)
    assert job.src_layout is not None
    s = batch.run(wf2, progress=False)
    assert s["path"] == "direct"
    np.testing.assert_allclose(_stored(wf2.outputs["path"])[...],
                               ndi.correlate(first, np.ones((5, 5)), mode="constant"), rtol=2e-5, atol=2e-4)


def _edge_job(tmp_path, n=40, width=7, depth=(2, 3)):
    x = np.random.default_rng(5).standard_normal((n, width)).astype(np.float32)
    # uncompressed, so no halo comes from chunk heads (tests/test_chunk_heads.py): these test
    # the rows handed between blocks
    z = zarr.create_array(str(tmp_path / "e.zarr"), shape=x.shape, chunks=(10, width), dtype="f4",
                          compressors=None)
    z[...] = x
    return x, z, depth


def _recording(monkeypatch, delay=0.0, fail=None):
    """Record every row range _decode_into decodes (optionally slowly, or failing on one)."""
    import threading
    import time

    seen, lock, real = [], threading.Lock(), read.decode_into

    def decode(src, a, b, dest):
        with lock:
            seen.append((a, b))
        time.sleep(delay)
        if fail == (a, b):
            raise OSError("unreadable chunk")
        real(src, a, b, dest)

    monkeypatch.setattr(read, "decode_into", decode)
    return seen


def _block(x, z, r0, r1, depth, run, edges):
    lo, hi = max(0, r0 - depth[0]), min(x.shape[0], r1 + depth[1])
    host = np.full((hi - lo, x.shape[1]), np.nan, np.float32)  # poisoned: every row must be written
    edges.read(run, z, host, (lo, r0, r1, hi), depth)
    np.testing.assert_array_equal(host, x[lo:hi])


def test_edge_rows_of_a_finished_neighbour_are_not_decoded_again(tmp_path, monkeypatch):
    x, z, depth = _edge_job(tmp_path)
    seen = _recording(monkeypatch)
    edges = read.EdgeRows()
    _block(x, z, 0, 20, depth, "r", edges)
    _block(x, z, 20, 40, depth, "r", edges)
    # block 0 decodes its rows and (its neighbour not started) its lower halo; block 1 takes its
    # upper halo from block 0's published edge
    assert seen == [(0, 20), (20, 23), (20, 40)]
    _block(x, z, 20, 40, depth, "other run", edges)  # edges never cross runs
    assert seen[-2:] == [(20, 40), (18, 20)]


def test_edge_rows_of_a_neighbour_in_flight_are_awaited(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    x, z, depth = _edge_job(tmp_path, n=60)
    seen = _recording(monkeypatch, delay=0.2)
    edges = read.EdgeRows()
    blocks = [(0, 20), (20, 40), (40, 60)]
    with ThreadPoolExecutor(3) as ex:
        list(ex.map(lambda b: _block(x, z, *b, depth, "r", edges), blocks))
    assert sorted(seen) == blocks  # each row decoded once: every halo came from a neighbour


def test_a_failed_neighbour_leaves_the_halo_to_storage(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    x, z, depth = _edge_job(tmp_path)
    seen = _recording(monkeypatch, delay=0.2, fail=(20, 40))
    edges = read.EdgeRows()
    with ThreadPoolExecutor(2) as ex:
        ok = ex.submit(_block, x, z, 0, 20, depth, "r", edges)
        bad = ex.submit(_block, x, z, 20, 40, depth, "r", edges)
        ok.result()  # its lower halo is decoded from storage once the neighbour has failed
        with pytest.raises(OSError, match="unreadable"):
            bad.result()
    assert (20, 23) in seen


def test_blocks_run_in_contiguous_ranges_per_worker(tmp_path, small_blocks):
    from distributed import Client, LocalCluster

    wf = _workflow(tmp_path, (400, 30), (6, 30), [{"op": "gaussian_filter", "sigma": 1.0}])
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        with __import__("distributed").get_task_stream(client) as ts:
            s = batch.run(wf, client, progress=False)
    assert s["path"] == "direct"
    ran = {int(t["key"].rsplit("-", 1)[1]): t["worker"] for t in ts.data
           if str(t["key"]).startswith("gaussian-")}  # the blocks (merge_gaussian-... the merges)
    order = [ran[i] for i in sorted(ran)]
    assert len(order) > 4 and len(set(order)) == 2
    assert sum(a != b for a, b in zip(order, order[1:])) == 1  # worker A's blocks, then B's
    np.testing.assert_allclose(_stored(wf.outputs["path"])[...],
                               ndi.gaussian_filter(_stored(wf.input["path"])[...], 1.0), rtol=2e-5, atol=2e-5)


def test_io_slots_are_taken_in_block_order():
    import threading
    import time

    queue = slots.Slots(1)
    held = queue.get(7)
    got, lock, threads = [], threading.Lock(), []

    def take(b):
        s = queue.get(b)
        with lock:
            got.append(b)
        queue.put(s)

    for block in (5, 2, 9, 3):
        threads.append(threading.Thread(target=take, args=(block,)))
        threads[-1].start()
        time.sleep(0.05)  # all four wait before the slot is given back
    queue.put(held)
    for t in threads:
        t.join(5)
    assert got == [2, 3, 5, 9]


@pytest.mark.parametrize("shape", [(0, 37), (19, 0)])
def test_an_empty_input_writes_the_empty_output(tmp_path, monkeypatch, shape):
    """An input with an empty axis has no blocks to cut: dask's path writes the empty output
    (plain zarr reads it; every chunk side positive), the summary says why, a histogram
    counts nothing."""
    monkeypatch.chdir(tmp_path)
    zarr.create_array("in.zarr", shape=shape, chunks=(16, 16), dtype="f4")
    doc = {"input": {"path": "in.zarr"}, "steps": [{"op": "gaussian_filter", "sigma": 1.0}, {"op": "laplace"}],
           "outputs": {"path": "out.zarr", "histogram": {"bins": 4, "range": [0, 1], "json": "h.json"}}}
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(doc))
    s = batch.run(batch.load(tmp_path / "wf.yaml"), progress=False)
    assert s["path"] == "general" and "empty" in s["why_general"]
    out = _stored(tmp_path / "out.zarr")
    assert out.shape == shape and out.dtype == np.float32 and min(out.chunks) >= 1
    assert out[...].shape == shape
    assert json.loads((tmp_path / "h.json").read_text())["counts"] == [0, 0, 0, 0]


def test_cpu_blocks_give_each_worker_eight_where_the_data_allow():
    """Blocks small enough for progress to move and for --resume to keep work: on a cluster of
    4 workers a 1 GiB CPU job is cut into 32 blocks, not 16 of 64 MiB; a tiny one is not cut
    below 4 MiB blocks; without a cluster the most stays 64 MiB."""
    from distributed import Client, LocalCluster

    from distconv.engine.plan import MIN_CPU_BLOCK_BYTES, cpu_block_bytes

    most = 64 * 2**20
    assert cpu_block_bytes(2**30, most) == most
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=False, dashboard_address=None) as c, Client(c):
        assert cpu_block_bytes(2**30, most) == 2**30 // 32
        assert cpu_block_bytes(2**20, most) == MIN_CPU_BLOCK_BYTES
        assert cpu_block_bytes(2**20, 6000) == 6000  # never above the most asked for
