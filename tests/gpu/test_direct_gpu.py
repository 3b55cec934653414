"""The direct path on GPU blocks (pinned staging, edge rows shared between blocks, nvCOMP
encode and decode where installed) against scipy, for both input layouts: zarr's chunks and
distconv's own shards. GPU memory is poisoned first; the output store starts empty, so a block
or shard left unwritten reads back as fill values and fails the comparison."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import yaml
import zarr

from distconv import batch
from distconv import engine
from distconv.core.frames import aligned_up
from distconv.engine import output, plan, shards, storage

from ..helpers import poison_gpu_pool, read_rows, write_block

pytestmark = pytest.mark.gpu


def _run(tmp_path, name, inp, steps, root=""):
    doc = {"input": inp, "steps": steps, "outputs": {"path": f"{root}{name}.zarr"}}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc))
    wf = batch.load(p)
    poison_gpu_pool(1 << 26)
    s = batch.run(wf, progress=False)
    assert s["path"] == "direct"
    return wf, s


@pytest.mark.parametrize("where", ["folder", "url"])
@pytest.mark.parametrize("shape, chunks", [((203, 61), (8, 16)), ((37, 33, 20), (4, 11, 20))])
def test_direct_path_on_the_gpu_equals_scipy(tmp_path, monkeypatch, shape, chunks, where):
    """where=url: the stores are fsspec URLs (memory://), so chunk and shard byte ranges are
    read and written through fsspec as on object storage."""
    import uuid

    root = f"memory://{uuid.uuid4().hex}/" if where == "url" else ""
    monkeypatch.setattr(plan, "GPU_CHUNK_BYTES", 9000)  # many blocks: halos cross them
    monkeypatch.setattr(output, "SHARD_MIN_BYTES", 0)
    monkeypatch.setattr(shards, "INNER_BYTES", 300)
    steps = [{"op": "gaussian_filter", "sigma": 1.5}, {"op": "laplace", "mode": "nearest"}]
    wf, s = _run(tmp_path, "a", {"path": f"{root}in.zarr", "synthetic": {"shape": list(shape),
                                                                          "chunks": list(chunks), "seed": 7}},
                 steps, root)
    from distconv.backends.cuda import zstd as gpu_zstd

    # zarr's chunks decoded by nvCOMP in batches where installed, else by zarr into pinned memory
    assert ("batches decoded" in s["stage_seconds"]) == gpu_zstd.available()
    assert ("upload" in s["stage_seconds"]) == (not gpu_zstd.available())
    x = zarr.open_array(wf.input["path"], mode="r")[...]
    first = zarr.open_array(wf.outputs["path"], mode="r")[...]
    np.testing.assert_allclose(first, ndi.laplace(ndi.gaussian_filter(x, 1.5), mode="nearest"),
                               rtol=2e-5, atol=2e-4)
    # layout (b): distconv's shards in; decoded by nvCOMP on the GPU when it is installed
    w = np.arange(15, dtype=np.float64).reshape(3, 5) / 10 - 0.7
    wf2, s2 = _run(tmp_path, "b", {"path": wf.outputs["path"]},
                   [{"op": "correlate", "weights": (w if len(shape) == 2 else w[None]).tolist(), "mode": "mirror"}],
                   root)
    assert ("upload" not in s2["stage_seconds"]) == gpu_zstd.available()
    np.testing.assert_allclose(zarr.open_array(wf2.outputs["path"], mode="r")[...],
                               ndi.correlate(first, w if len(shape) == 2 else w[None], mode="mirror"),
                               rtol=2e-5, atol=2e-4)


@pytest.mark.parametrize("writer", ["distconv", "zarr"])
def test_nvcomp_reads_shards_in_place_or_gathered(tmp_path, writer):
    """distconv's shards align every frame (decoded where the file read put it); shards zarr
    wrote do not (frames moved to aligned places on the device first): both equal zarr's read."""
    from distconv.backends.cuda import transfer
    from distconv.backends.cuda import zstd as gpu_zstd
    from distconv.backends.numpy import zstd as cpu_zstd

    if not gpu_zstd.available():
        pytest.skip("nvCOMP not installed")
    shape, shard = (90, 70), (30, 70)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32).round(2)
    layout = shards.Layout(shape, shard, (10, 35), "<f4")
    p = str(tmp_path / "s.zarr")
    if writer == "distconv":
        engine.create_output(p, shape, np.float32, layout, {})
        write_block(p, layout, x, 0, cpu_zstd.encode_frames)
    else:
        zarr.create_array(p, shape=shape, shards=shard, chunks=layout.inner, dtype="f4",
                          compressors=zarr.codecs.ZstdCodec(level=3))[...] = x
        assert shards.layout_of(zarr.open_array(p, mode="r").metadata.to_dict(), shape, np.float32) == layout
    fr = shards.read_frames(p, layout, 0, shape[0])
    assert (fr.starts % gpu_zstd.FRAME_ALIGN).any() == (writer == "zarr")
    for lo, hi in [(0, 90), (7, 52), (29, 31)]:
        poison_gpu_pool(1 << 24)
        got = read_rows(p, layout, lo, hi, gpu_zstd.decode_frames,
                               alloc=lambda n: transfer.staging("test", "frames", n))
        np.testing.assert_array_equal(got.get(), x[lo:hi])


@pytest.mark.parametrize("frame", [65536, 65537])
def test_nvcomp_frames_round_trip_with_cpu_zstd(frame):
    """nvCOMP's frames (through the C API) lie as the CPU encoder lays them (aligned starts,
    end to end, zero bytes between) and are standard zstd frames numcodecs decodes, the last
    one short; frames the CPU wrote decode on the GPU; a frame that decodes short raises. An
    odd frame size (a uint8 array's odd inner chunk) is coded from and into spread places."""
    import cupy
    from numcodecs import Zstd

    from distconv.backends.cuda import zstd as gpu_zstd
    from distconv.backends.numpy import zstd as cpu_zstd

    if not gpu_zstd.available():
        pytest.skip("nvCOMP not installed")
    raw = np.random.default_rng(5).integers(0, 7, 15 * frame + 4099, dtype=np.uint8)
    poison_gpu_pool(1 << 26)
    buf, starts, sizes = gpu_zstd.encode_frames(cupy.asarray(raw), frame, 8)
    assert len(starts) == 16 and not (starts % gpu_zstd.FRAME_ALIGN).any()
    ends = starts + aligned_up(sizes, gpu_zstd.FRAME_ALIGN)
    assert (starts[1:] == ends[:-1]).all() and ends[-1] == buf.size
    gaps = np.ones(buf.size, bool)
    for i, (a, n) in enumerate(zip(starts, sizes)):
        gaps[a:a + n] = False
        assert Zstd().decode(buf[a:a + n].tobytes()) == raw[i * frame:(i + 1) * frame].tobytes()
    assert not buf[gaps].any()
    whole = raw[:15 * frame]
    cbuf, cstarts, csizes = cpu_zstd.encode_frames(whole, frame, gpu_zstd.FRAME_ALIGN)
    poison_gpu_pool(1 << 26)
    np.testing.assert_array_equal(gpu_zstd.decode_frames(cbuf, cstarts, csizes, frame, np.uint8).get(), whole)
    with pytest.raises(ValueError, match="did not decode"):
        gpu_zstd.decode_frames(cbuf, cstarts, csizes, 2 * frame, np.uint8)


@pytest.mark.parametrize("steps, ref", [
    ([{"op": "correlate", "weights": (np.arange(25).reshape(5, 5) % 7 / 10 - 0.3).tolist()}],
     lambda x: ndi.correlate(x, np.arange(25).reshape(5, 5) % 7 / 10 - 0.3, mode="reflect")),
    ([{"op": "gaussian_filter", "sigma": 3.0}], lambda x: ndi.gaussian_filter(x, 3.0))])
def test_zarr_chunks_decoded_in_batches_of_blocks_on_the_gpu(tmp_path, monkeypatch, steps, ref):
    """zarr's unsharded zstd chunks decoded by nvCOMP a batch of blocks at a time (three blocks
    per batch here, batches ahead; halos from the neighbouring batch, deeper than a chunk row
    too); the blocks reading a batch that holds a chunk zarr left out (fill value) go back to
    zarr's decode on the CPU."""
    import dask

    from distconv.backends.cuda import zstd as gpu_zstd

    if not gpu_zstd.available():
        pytest.skip("nvCOMP not installed")
    block = 32 * 61 * 4
    monkeypatch.setattr(plan, "GPU_CHUNK_BYTES", block)  # blocks of 4 chunk rows
    monkeypatch.setattr(output, "SHARD_MIN_BYTES", 0)
    x = np.random.default_rng(11).standard_normal((203, 61)).astype(np.float32)
    x[40:48, 16:32] = 0.5
    z = zarr.create_array(str(tmp_path / "in.zarr"), shape=x.shape, chunks=(8, 16), dtype="f4", fill_value=0.5,
                          compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = x  # the chunk of fill values at rows 40..48 is not stored
    with dask.config.set({"distconv.decode-batch-bytes": 3 * block}):
        wf, s = _run(tmp_path, "h", {"path": str(tmp_path / "in.zarr")}, steps)
    st = s["stage_seconds"]
    assert st["batches decoded"] >= 1 and st["batch decode"] > 0 and "rows" in st
    assert "upload" in st  # the blocks of the batch with the absent chunk went through zarr
    np.testing.assert_allclose(zarr.open_array(wf.outputs["path"], mode="r")[...], ref(x.astype(np.float64)),
                               rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("cuts", [[0, 4096], [0, 16, 48, 4096, 5000, 9000]])
def test_a_device_buffer_filled_in_pieces(cuts):
    from distconv.backends.cuda import transfer

    want = np.random.default_rng(2).integers(0, 256, cuts[-1], dtype=np.uint8)
    poison_gpu_pool(1 << 24)

    def fill(k, host):
        host[...] = want[cuts[k]:cuts[k + 1]]

    np.testing.assert_array_equal(transfer.to_device_in_pieces(cuts, fill, "test").get(), want)


def test_a_warm_up_leaves_the_staging_the_blocks_use(monkeypatch):
    """After a worker's warm-up (engine/prewarm.py) a block's encode and batch pieces find their
    page-locked buffers in place: no allocation in the block."""
    from distconv.backends.cuda import transfer
    from distconv.backends.cuda import zstd as gpu_zstd
    from distconv.engine import batches, prewarm, settings
    from distconv.engine.plain_chunks import PIECE_BYTES

    if not gpu_zstd.available():
        pytest.skip("nvCOMP not installed")
    prewarm.warm()
    calls = []
    real = transfer.kept_pinned
    monkeypatch.setattr(transfer, "kept_pinned", lambda *a: calls.append(a) or real(*a))
    for slot in range(settings.io_slots(True)):
        assert transfer.staging(slot, "encoded", 700 * 2**20).size == 700 * 2**20
    for k in range(2):
        transfer.staging((batches.PIECES, k), "pieces", PIECE_BYTES)
    assert calls == []


def test_kept_pinned_memory_is_page_locked_and_let_go_with_its_last_view():
    """The staging's huge-page buffers: registered with CUDA (async copies both ways give the
    bytes back), and unregistered once no view of them is left (registering the same pages
    again would fail otherwise)."""
    import gc

    import cupy

    from distconv.backends.cuda import transfer

    n = 3 * transfer.HUGE_PAGE + 12345
    host = transfer.kept_pinned(n)
    assert host.size == n and host.ctypes.data % transfer.HUGE_PAGE == 0 and not host.any()
    attrs = cupy.cuda.runtime.pointerGetAttributes(host.ctypes.data)
    assert attrs.type == cupy.cuda.runtime.memoryTypeHost
    want = np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8)
    host[...] = want
    dev = cupy.full(n, 7, cupy.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    dev.set(host, stream=stream)
    host[...] = 0
    dev.get(out=host, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(host, want)
    tail, ptr = host[n // 2:], host.ctypes.data
    del host
    gc.collect()
    assert tail[-1] == want[-1]  # a view keeps the pages
    del tail
    gc.collect()
    # let go: the range is no longer host memory CUDA knows (or the call refuses an unknown pointer)
    try:
        kind = cupy.cuda.runtime.pointerGetAttributes(ptr).type
    except cupy.cuda.runtime.CUDARuntimeError:
        kind = None
    assert kind != cupy.cuda.runtime.memoryTypeHost
