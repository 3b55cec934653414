"""nvCOMP decode of CPU-written 64 MiB zstd frames (zarr's default unsharded chunks of the e2e
data, numcodecs level 1) by batch size, against numcodecs on 1-16 threads: can the GPU take
layout (a)'s decode? (NOTES.md, "End to end, round 6"). Every GPU decode is checked. One JSON
line per measurement, to stdout and to the file named by the first argument.

    python -m benchmarks.diagnose_big_frames big-frames.txt
"""

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import cupy
import numcodecs
import numpy as np

from benchmarks.diagnose_codec import e2e_block
from distconv.backends.cuda import transfer
from distconv.backends.cuda import zstd as gz

C = 4096              # chunk side: 4096 x 4096 float32 = 64 MiB, as zarr and dask write by default
FRAME = C * C * 4


def synced(fn) -> float:
    cupy.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    fn()
    cupy.cuda.runtime.deviceSynchronize()
    return time.perf_counter() - t


def packed(frames, n):
    """n frames (cycling) in one pinned buffer at FRAME_ALIGN starts: (buf, starts, sizes)."""
    fr = (frames * (n // len(frames) + 1))[:n]
    sizes = np.array([len(f) for f in fr], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(gz.aligned_up(sizes))[:-1]]).astype(np.int64)
    buf = transfer.pinned_empty(int(starts[-1] + sizes[-1]), np.uint8)
    for s, f in zip(starts, fr):
        buf[s:s + len(f)] = np.frombuffer(f, np.uint8)
    return buf, starts, sizes


def main():
    out = open(sys.argv[1] if len(sys.argv) > 1 else "big-frames.txt", "w")

    def say(**kw):
        line = json.dumps(kw)
        print(line, flush=True)
        out.write(line + "\n")

    host = cupy.asnumpy(e2e_block(C, 8 * C))  # one chunk row of the e2e input
    chunks = [np.ascontiguousarray(host[:, j * C:(j + 1) * C]) for j in range(8)]
    t = time.perf_counter()
    frames = [numcodecs.Zstd(level=1).encode(c) for c in chunks]
    say(what="cpu encode 1 thread", GBps=8 * FRAME / (time.perf_counter() - t) / 1e9,
        ratio=8 * FRAME / sum(len(f) for f in frames))
    for threads in (1, 4, 8, 16):
        n = max(threads, 8)
        with ThreadPoolExecutor(threads) as ex:
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                list(ex.map(numcodecs.Zstd().decode, (frames * 4)[:n]))
                ts.append(time.perf_counter() - t)
        say(what="cpu decode numcodecs", threads=threads, frames=n, GBps=n * FRAME / sorted(ts)[1] / 1e9)
    ref = cupy.asarray(np.stack(chunks).reshape(-1))
    for n in (1, 2, 4, 8, 16, 32):
        buf, starts, sizes = packed(frames, n)
        got = {}
        dt = sorted(synced(lambda: got.update(x=gz.decode_frames(buf, starts, sizes, FRAME, np.float32)))
                    for _ in range(3))[1]
        k = min(n, 8) * C * C
        say(what="nvcomp decode 64MiB frames", frames=n, s=dt, GBps=n * FRAME / dt / 1e9,
            checked=bool((got["x"][:k] == ref.view(cupy.float32)[:k]).all()))
        got.clear()
    buf, starts, sizes = packed(frames, 8)

    def on_slot(slot):
        with transfer.slot_stream(slot):
            gz.decode_frames(buf, starts, sizes, FRAME, np.float32)

    def two_streams():
        ths = [threading.Thread(target=on_slot, args=(k,)) for k in range(2)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()

    dt = sorted(synced(two_streams) for _ in range(3))[1]
    say(what="nvcomp decode 2 x 8 frames, 2 streams", s=dt, GBps=16 * FRAME / dt / 1e9)
    stop = threading.Event()

    def cpu_busy():
        while not stop.is_set():
            numcodecs.Zstd().decode(frames[0])

    busy = [threading.Thread(target=cpu_busy) for _ in range(12)]
    for th in busy:
        th.start()
    dt = sorted(synced(lambda: gz.decode_frames(buf, starts, sizes, FRAME, np.float32)) for _ in range(3))[1]
    stop.set()
    for th in busy:
        th.join()
    say(what="nvcomp decode 8 frames beside 12 CPU decode threads", s=dt, GBps=8 * FRAME / dt / 1e9)


if __name__ == "__main__":
    main()
