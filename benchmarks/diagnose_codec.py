"""nvCOMP zstd on one GPU, through distconv's C-API path (backends/cuda/zstd.py): encode and
decode rate of a 1 GiB block of the e2e data by inner-chunk (frame) size, and how much a pure
Python thread keeps running during the encode calls (1.0: the call holds no GIL). Every round
trip is checked. One JSON line per measurement, also written to --out.

    python -m benchmarks.diagnose_codec --out codec.json
"""

from __future__ import annotations

import argparse
import functools
import json
import threading
import time

import numpy as np

GiB = 2**30


def e2e_block(rows: int, width: int):
    """benchmarks/e2e.py's field (smooth + noise, quantized to 1/256) made on the device."""
    import cupy

    rng = cupy.random.default_rng(0)
    r = cupy.arange(rows, dtype=cupy.float32)[:, None]
    cols = cupy.sin(cupy.linspace(0, 12 * np.pi, width, dtype=cupy.float32))
    s = cupy.sin(r * (6 * np.pi / 131072)) + cols + 0.3 * rng.standard_normal((rows, width), dtype=cupy.float32)
    return cupy.round(s * 256) / 256


def python_share(fn, seconds_alone=0.3) -> tuple:
    """(fn's result, seconds, the rate of a counting Python thread during fn / its rate alone)."""
    stop, count = threading.Event(), [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    time.sleep(seconds_alone)
    alone = count[0] / seconds_alone
    count[0] = 0
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    during = count[0] / dt
    stop.set()
    th.join()
    return out, dt, during / alone


def ab(d, shards, say, reps=3):
    """1 MiB frames: nvCOMP's compress alone through distconv's C-API call, on the legacy and
    on a non-blocking stream, against nvidia-nvcomp's Python Codec where installed."""
    import cupy

    from distconv.backends.cuda import libnvcomp
    from distconv.backends.cuda import zstd as gz

    lay = shards.Layout(d.shape, (4096, 4096), shards.inner_shape((4096, 4096), 4), "<f4")
    raw = shards.chunk_major(d, lay).view(cupy.uint8).reshape(-1)
    f = lay.frame_nbytes
    n = raw.size // f
    cap = gz._capacity(f)
    places = cupy.empty(n * cap, dtype=cupy.uint8)
    lengths, statuses = cupy.empty(n, dtype=cupy.uint64), cupy.empty(n, dtype=cupy.int32)
    at = np.arange(n, dtype=np.uint64)
    ins, sizes, outs = gz._table(raw.data.ptr + at * f, np.full(n, f), places.data.ptr + at * cap)

    def capi(stream, temp):
        libnvcomp.compress_async(ins.data.ptr, sizes.data.ptr, f, n, temp.data.ptr, temp.size, outs.data.ptr,
                                 lengths.data.ptr, statuses.data.ptr, stream.ptr)
        stream.synchronize()

    def timed(fn):
        ts = []
        for _ in range(reps):
            cupy.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return sorted(ts)[reps // 2]

    temp = gz._temp(False, n, f)
    for name, stream in (("legacy", cupy.cuda.Stream.null), ("non-blocking", cupy.cuda.Stream(non_blocking=True))):
        say(what="C API compress only", stream=name, temp_bytes=temp.size, s=timed(lambda: capi(stream, temp)))
    big = cupy.empty(max(temp.size * 4, 1 << 30), dtype=cupy.uint8)
    say(what="C API compress only, 4x temp", temp_bytes=big.size,
        s=timed(lambda: capi(cupy.cuda.Stream.null, big)))
    say(what="encode_frames (compress, pack, download)", s=timed(lambda: gz.encode_frames(raw, f, gz.FRAME_ALIGN)))
    try:
        from nvidia import nvcomp
    except ImportError:
        return
    codec = nvcomp.Codec(algorithm="Zstd", bitstream_kind=nvcomp.BitstreamKind.RAW)
    batch = nvcomp.as_arrays(raw, [i * f for i in range(n)], [f] * n)
    say(what="nvidia-nvcomp Codec.encode + sizes", s=timed(lambda: codec.encode(batch).buffer_sizes))


def contention(d, shards, say, reps=5):
    """encode_frames (1 MiB frames) while another thread runs pure Python, at the default GIL
    switch interval and at shorter ones: what each GIL re-acquire after a blocking call costs."""
    import sys

    from distconv.backends.cuda import zstd as gz

    lay = shards.Layout(d.shape, (4096, 4096), shards.inner_shape((4096, 4096), 4), "<f4")
    cm = shards.chunk_major(d, lay)
    default = sys.getswitchinterval()
    for interval in (default, 0.001, 0.0002):
        sys.setswitchinterval(interval)
        ts = []
        for _ in range(reps):
            _, dt, share = python_share(functools.partial(gz.encode_frames, cm, lay.frame_nbytes, gz.FRAME_ALIGN),
                                        seconds_alone=0.05)
            ts.append(dt)
        say(what="encode_frames beside a busy Python thread", switch_interval_s=interval, s=sorted(ts)[reps // 2])
    sys.setswitchinterval(default)


def scaling(d, shards, say, reps=3):
    """Compress-only seconds of batches of 512, 1024 and 2048 frames of 1 MiB, one batch and
    two batches at once on two streams, for the quantized field (compresses ~2.4x) and for
    its 5x5 correlation (full-precision floats, as a filter writes them): does one block's
    batch fill the GPU?"""
    import cupy

    from distconv.backends.cuda import libnvcomp
    from distconv.backends.cuda import zstd as gz
    from distconv.ops.filters import correlate

    w5 = (np.arange(25, dtype=np.float64).reshape(5, 5) % 7 - 3) / 10.0
    f = 2**20
    for kind, data in (("quantized", d), ("conv5 output", correlate(d, w5))):
        raw = data.view(cupy.uint8).reshape(-1)
        big = cupy.concatenate([raw, raw])  # 2 GiB
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
        for n in (512, 1024, 2048):
            jobs = []
            for k in range(2):
                places = cupy.empty(n * gz._capacity(f), dtype=cupy.uint8)
                at = np.arange(n, dtype=np.uint64)
                base = big.data.ptr + (k * (big.size // 2 - n * f) if n * f < big.size // 2 else 0)
                tables = gz._table(base + at * f, np.full(n, f), places.data.ptr + at * gz._capacity(f))
                jobs.append((places, tables, cupy.empty(n, dtype=cupy.uint64), cupy.empty(n, dtype=cupy.int32),
                             gz._temp(False, n, f)))

            def go(m):
                for (places, (ins, sizes, outs), lengths, statuses, temp), st in zip(jobs[:m], streams):
                    libnvcomp.compress_async(ins.data.ptr, sizes.data.ptr, f, n, temp.data.ptr, temp.size,
                                             outs.data.ptr, lengths.data.ptr, statuses.data.ptr, st.ptr)
                for st in streams[:m]:
                    st.synchronize()
                return int(jobs[0][2].get().sum())

            for m in (1, 2):
                ts = []
                for _ in range(reps):
                    cupy.cuda.runtime.deviceSynchronize()
                    t0 = time.perf_counter()
                    out = go(m)
                    ts.append(time.perf_counter() - t0)
                dt = sorted(ts)[reps // 2]
                say(what="compress scaling", data=kind, frames=n, batches_at_once=m, s=dt,
                    GBps=m * n * f / dt / 1e9, ratio=n * f / out)
            jobs.clear()
        del big


def main():
    import cupy

    from distconv.backends.cuda import zstd as gz
    from distconv.graph import shards

    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--frames", default="1048576")
    a = ap.parse_args()
    lines = []

    def say(**kw):
        row = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in kw.items()}
        print(json.dumps(row), flush=True)
        lines.append(row)

    rows, width = 8192, 32768
    d = e2e_block(rows, width)
    shard = (4096, 4096)
    for target in map(int, a.frames.split(",")):
        lay = shards.Layout((rows, width), shard, shards.inner_shape(shard, 4, target), "<f4")
        cm = shards.chunk_major(d, lay)
        enc, dec = [], []
        for _ in range(3):
            cupy.cuda.runtime.deviceSynchronize()
            (buf, starts, sizes), dt, share = python_share(functools.partial(gz.encode_frames, cm, lay.frame_nbytes, gz.FRAME_ALIGN, slot="diag"))
            enc.append((dt, share))
            t0 = time.perf_counter()
            back = gz.decode_frames(buf, starts, sizes, lay.frame_nbytes, np.float32)
            cupy.cuda.runtime.deviceSynchronize()
            dec.append(time.perf_counter() - t0)
        ok = bool((back.reshape(-1) == cm.reshape(-1)).all())
        e = sorted(enc)[1]
        say(frame_bytes=lay.frame_nbytes, inner=list(lay.inner), frames=len(starts),
            ratio=GiB / float(sizes.sum()), encode_s=e[0], encode_GBps=GiB / e[0] / 1e9,
            python_share_during_encode=e[1], decode_s=sorted(dec)[1],
            decode_GBps=GiB / sorted(dec)[1] / 1e9, checked=ok)
        del cm, back
    ab(d, shards, say)
    contention(d, shards, say)
    scaling(d, shards, say)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": lines}, f, indent=1)


if __name__ == "__main__":
    main()
