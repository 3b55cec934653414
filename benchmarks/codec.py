"""The output codec alone (issue 36): nvCOMP's zstd on the frames the e2e conv5 job writes:
its compress call alone (``zstd.compress``), and as the job calls it (``encode_frames``: one
batch per block, packed and moved into a slot's pinned staging), one block and two at once on
two streams (the job's two I/O slots), with and without a byte
shuffle of each frame (numcodecs' Shuffle / blosc's: byte k of every element together) before
zstd. Every encoded block is decoded back (nvCOMP, and numcodecs for a sample of frames) and
compared with its input, and each shuffled frame is checked to be the unshuffled one's bytes
regrouped. Rows are JSON; the job's own encode rate comes from an e2e row's stage seconds.

    python -m benchmarks.codec --gib 1 --out codec.json      (on the GPU node; needs nvCOMP)
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import numpy as np

from .e2e import CHUNK, W5, WIDTH


def conv5_block(rows: int):
    """A block of the e2e conv5 output: its input's recipe (smooth field + noise quantized to
    1/256), correlated with W5 on the GPU, float32."""
    import cupy
    from cupyx.scipy import ndimage as cndi

    base = np.random.default_rng(0).standard_normal((rows, WIDTH), dtype=np.float32)
    cols = np.sin(np.linspace(0, 12 * np.pi, WIDTH, dtype=np.float32))
    r = np.arange(rows, dtype=np.float32)[:, None]
    x = cupy.asarray(np.round((np.sin(r * (6 * np.pi / (4 * rows))) + cols + 0.3 * base) * 256) / 256)
    return cndi.correlate(x, cupy.asarray(W5, dtype=cupy.float32), mode="reflect")


def shuffled(flat, frame_nbytes: int, itemsize: int):
    """Each frame of ``flat`` (uint8, cupy) with its bytes grouped by position in the element
    (blosc's shuffle); the last, shorter frame too."""
    import cupy

    out = cupy.empty_like(flat)
    n = flat.size
    whole = n // frame_nbytes * frame_nbytes
    if whole:
        out[:whole].reshape(-1, itemsize, frame_nbytes // itemsize)[...] = (
            flat[:whole].reshape(-1, frame_nbytes // itemsize, itemsize).transpose(0, 2, 1))
    if n > whole:
        tail = n - whole
        out[whole:].reshape(itemsize, tail // itemsize)[...] = flat[whole:].reshape(tail // itemsize, itemsize).T
    return out


def timed(fn, repeat: int) -> tuple:
    """(median seconds, last result) of ``fn()`` with the device synchronized."""
    import cupy

    times, res = [], None
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        res = fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), res


def main():
    import cupy

    from distconv.backends.cuda import zstd
    from distconv.engine import shards

    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=1.0, help="bytes per block (the job's blocks are ~1 GiB)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="codec.json")
    a = ap.parse_args()
    if not zstd.available():
        raise SystemExit("nvCOMP is not installed")
    rows = max(CHUNK, int(a.gib * 2**30 / (4 * WIDTH)) // CHUNK * CHUNK)
    block = conv5_block(rows)
    shard = (CHUNK, CHUNK)  # the e2e output's shards: the input's 64 MiB chunks
    layout = shards.Layout(block.shape, shard, shards.inner_shape(shard, 4), "<f4")
    flat = cupy.ascontiguousarray(shards.chunk_major(block, layout)).view(cupy.uint8).reshape(-1)
    frame = layout.frame_nbytes
    nbytes = flat.size
    rows_out = []

    def encode(buf, slot=0):
        """As a block's encode stage: into the slot's pinned staging (valid until its next call)."""
        return zstd.encode_frames(buf, frame, shards.FRAME_ALIGN, slot=slot)

    def check(buf, encoded) -> bool:
        dec = zstd.decode_frames(*encoded, frame, np.uint8)
        return bool(cupy.array_equal(dec.reshape(-1), buf))

    for name, prep in (("plain", None), ("byte_shuffle", lambda: shuffled(flat, frame, 4))):
        src = flat if prep is None else prep()
        shuffle_s = timed(prep, a.repeat)[0] if prep else 0.0
        if prep is not None:  # the regrouping is exact: frame 1's bytes, by element byte
            k = min(1, nbytes // frame - 1)
            one = flat[k * frame:(k + 1) * frame].reshape(-1, 4)
            assert cupy.array_equal(src[k * frame:(k + 1) * frame].reshape(4, -1), one.T)
        t0 = timed(lambda: zstd.compress(src, frame), a.repeat)[0]
        t1, enc = timed(lambda: encode(src), a.repeat)
        ok = check(src, enc)
        # numcodecs reads the same frames (a sample): standard zstd, the CPU zarr path
        import numcodecs

        host = cupy.asnumpy(src)
        for i in (0, len(enc[1]) // 2, len(enc[1]) - 1):
            got = numcodecs.Zstd().decode(enc[0][enc[1][i]:enc[1][i] + enc[2][i]].tobytes())
            ok = ok and np.array_equal(np.frombuffer(got, np.uint8), host[i * frame:(i + 1) * frame])
        ratio = nbytes / float(enc[2].sum())

        # two blocks at once, each on its own stream and thread (the job's two I/O slots)
        def two():
            done = []

            def one(slot):
                with cupy.cuda.Stream(non_blocking=True):
                    done.append(encode(src, slot)[2].sum())
            ts = [threading.Thread(target=one, args=(k,)) for k in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return done
        t2, _ = timed(two, a.repeat)
        # the CPU codec on one core, a sample of frames (what a CPU worker's thread does)
        sample = [host[i * frame:(i + 1) * frame].tobytes() for i in range(min(16, len(enc[1]) - 1))]
        t = time.perf_counter()
        cpu_sizes = [len(numcodecs.Zstd(level=1).encode(s)) for s in sample]
        cpu_s = time.perf_counter() - t
        row = {"case": f"encode_{name}", "layer": "codec", "bytes": nbytes, "frame_bytes": frame,
               "frames": int(len(enc[1])), "ratio": round(ratio, 3),
               "nvcomp_GBps": round(nbytes / t0 / 1e9, 2), "encode_frames_GBps": round(nbytes / t1 / 1e9, 2),
               "encode_frames_two_streams_GBps": round(2 * nbytes / t2 / 1e9, 2),
               "shuffle_ms": round(shuffle_s * 1e3, 2),
               "encode_frames_with_shuffle_GBps": round(nbytes / (t1 + shuffle_s) / 1e9, 2),
               "cpu_zstd1_core_GBps": round(sum(map(len, sample)) / cpu_s / 1e9, 3),
               "cpu_zstd1_ratio": round(sum(map(len, sample)) / sum(cpu_sizes), 3),
               "checked": bool(ok)}
        rows_out.append(row)
        print(json.dumps(row), flush=True)
    Path(a.out).write_text(json.dumps({"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                                       "rows": rows_out}, indent=1))


if __name__ == "__main__":
    main()
