"""Where the end-to-end time goes, stage by stage, on one GPU in one process (no dask): the
input of benchmarks/e2e.py (made here if absent). Prints one JSON line per measurement.

    python -m benchmarks.diagnose_e2e --root /tmp/dc-e2e
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

GiB = 2**30


def t(fn, *a):
    s = time.perf_counter()
    r = fn(*a)
    return r, time.perf_counter() - s


def say(**kw):
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in kw.items()}), flush=True)


def main():
    import cupy
    import zarr

    from benchmarks import e2e
    from distconv.backends.cuda import zstd as gz
    from distconv.backends.numpy import zstd as cz
    from distconv.graph import shards, storage_job

    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="/tmp/dc-e2e")
    ap.add_argument("--reads-only", action="store_true", help="only the read strategies, 4 at once")
    a = ap.parse_args()
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    src = root / "a.zarr"
    e2e.make_input(src, 131072)
    rows = 8192  # one 1 GiB block
    if a.reads_only:
        return reads(src, rows)
    # page faults: a fresh 1 GiB buffer, first touch vs second
    buf, dt = t(lambda: np.ones(GiB // 4, np.float32))
    _, dt2 = t(lambda: buf.fill(2))
    say(what="host 1 GiB first touch", s=dt, GBps=1 / dt, refill_s=dt2)
    del buf
    for pipe in ("zarr.core.codec_pipeline.BatchedCodecPipeline", "zarrs.ZarrsCodecPipeline"):
        zarr.config.set({"codec_pipeline.path": pipe})
        z = zarr.open_array(str(src), mode="r")
        for k in range(2):
            x, dt = t(lambda: z[k * rows:(k + 1) * rows])
            say(what="read 1 GiB block", pipeline=pipe.split(".")[-1], k=k, s=dt, GBps=x.nbytes / dt / 1e9)
        # concurrency: 8 blocks at once from 8 threads
        with ThreadPoolExecutor(8) as ex:
            _, dt = t(lambda: list(ex.map(lambda k: z[k * rows:(k + 1) * rows].nbytes, range(2, 10))))
        say(what="read 8 x 1 GiB blocks, 8 threads", pipeline=pipe.split(".")[-1], s=dt, GBps=8 * GiB / dt / 1e9)
    x = z[0:rows]
    d, dt = t(lambda: (cupy.asarray(x), cupy.cuda.runtime.deviceSynchronize())[0])
    say(what="H2D 1 GiB pageable", s=dt, GBps=GiB / dt / 1e9)
    pinned = cupy.cuda.alloc_pinned_memory(x.nbytes)
    hp = np.frombuffer(pinned, np.float32, x.size).reshape(x.shape)
    hp[...] = x
    _, dt = t(lambda: (d.set(hp), cupy.cuda.runtime.deviceSynchronize()))
    say(what="H2D 1 GiB pinned", s=dt, GBps=GiB / dt / 1e9)
    shard = storage_job.shard_shape((4096, 4096), x.shape, 4)
    lay = shards.Layout((131072, 32768), shard, shards.inner_shape(shard, 4), "<f4")
    cm, dt = t(lambda: (shards.chunk_major(d, lay), cupy.cuda.runtime.deviceSynchronize())[0])
    say(what="chunk-major reorder on GPU", s=dt, frames=cm.size * 4 // lay.frame_nbytes)
    for k in range(2):
        (_, _, sizes), dt = t(gz.encode_frames, cm, lay.frame_nbytes, gz.FRAME_ALIGN)
        say(what="nvCOMP encode + to host (frames)", k=k, s=dt, GBps=GiB / dt / 1e9, ratio=GiB / sizes.sum())
    hx = cupy.asnumpy(cm)
    frames, dt = t(cz.encode_frames, hx, lay.frame_nbytes)
    say(what="CPU zstd encode 1 GiB (all cores)", s=dt, GBps=GiB / dt / 1e9)
    out = root / "diag.zarr"
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    storage_job.create_output(str(out), (131072, 32768), np.float32, lay, {})
    for k in range(2):
        _, dt = t(shards.write_block, str(out), lay, d, k * rows, gz.encode_frames)
        say(what="write_block 1 GiB (nvCOMP)", k=k, s=dt, GBps=GiB / dt / 1e9)
    fr = shards.read_frames(str(out), lay, 0, rows)
    for k in range(2):
        _, dt = t(lambda: (gz.decode_frames(fr.buf, fr.starts, fr.sizes, lay.frame_nbytes, np.float32),
                           cupy.cuda.runtime.deviceSynchronize()))
        say(what="nvCOMP decode 1 GiB from host frames", k=k, s=dt, GBps=GiB / dt / 1e9)
    for k in range(2):
        _, dt = t(lambda: shards.read_rows(str(out), lay, 0, rows, gz.decode_frames))
        say(what="read_rows 1 GiB (files + nvCOMP)", k=k, s=dt, GBps=GiB / dt / 1e9)
    _, dt = t(lambda: shards.read_frames(str(out), lay, 0, rows))
    say(what="read shard files of 1 GiB", s=dt)
    # whole block task, 1 / 2 / 4 / 8 at once on this one GPU
    from distconv.core.stencil import Stencil  # noqa: F401
    from distconv.ops.filters import correlate, stencil_of

    st = stencil_of(correlate, 2, np.float32, e2e.W5.tolist())
    nblk = 16
    job = storage_job.Job(str(src), str(out), st, lay, tuple((i * rows, (i + 1) * rows) for i in range(nblk)),
                          None, True, True, None)
    for conc in (1, 2, 4, 8):
        shutil.rmtree(out / ".distconv-blocks", ignore_errors=True)
        (out / ".distconv-blocks").mkdir()
        with ThreadPoolExecutor(conc) as ex:
            res, dt = t(lambda: list(ex.map(lambda i: storage_job.run_block(job, i), range(8))))
        stages = {}
        for _, laps in res:
            for k2, v in laps.items():
                stages[k2] = round(stages.get(k2, 0) + v, 2)
        say(what="run_block x8, one GPU", threads=conc, s=dt, GBps=8 * GiB / dt / 1e9, stages=stages)


def reads(src, rows):
    """zarrs reads of 1 GiB blocks, 4 at once: plain, into pinned memory (out=), plain + copy."""
    import zarr
    from zarr.core.buffer import default_buffer_prototype

    from distconv.backends.cuda.transfer import pinned_empty

    zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
    z = zarr.open_array(str(src), mode="r")
    bufs = [pinned_empty((rows, z.shape[1]), np.float32) for _ in range(4)]
    nd = default_buffer_prototype().nd_buffer

    ways = {"plain": lambda k: z[k * rows:(k + 1) * rows],
            "out=pinned": lambda k: z.get_basic_selection((slice(k * rows, (k + 1) * rows),),
                                                          out=nd.from_numpy_array(bufs[k % 4])),
            "plain+copyto pinned": lambda k: np.copyto(bufs[k % 4], z[k * rows:(k + 1) * rows])}
    for name, fn in ways.items():
        for conc in (1, 4):
            with ThreadPoolExecutor(conc) as ex:
                _, dt = t(lambda: list(ex.map(fn, range(4))))
            say(what="read 4 x 1 GiB", way=name, threads=conc, s=dt, GBps=4 * GiB / dt / 1e9)


if __name__ == "__main__":
    main()
