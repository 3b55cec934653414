"""nvCOMP decode of CPU-written 64 MiB zstd frames (zarr's default unsharded chunks of the e2e
data, zstd level 1 as zarr writes them) by batch size, against numcodecs on 1-16 threads: can the GPU take
layout (a)'s decode? (NOTES.md, "End to end, round 6"). Every GPU decode is checked. One JSON
line per measurement, to stdout and to the file named by the first argument.

    python -m benchmarks.diagnose_big_frames big-frames.txt [FRAMES,...]   (batch sizes; 1-32 unless given)
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
from distconv.backends.numpy import zstd as cpu_zstd

C = 4096              # chunk side: 4096 x 4096 float32 = 64 MiB, as zarr and dask write by default
FRAME = C * C * 4


def synced(fn) -> float:
    cupy.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    fn()
    cupy.cuda.runtime.deviceSynchronize()
    return time.perf_counter() - t


def packed(chunks, n):
    """n chunks (cycling) as zstd frames of zarr's level 1 in one pinned buffer, every frame at a
    FRAME_ALIGN start: (buf, starts, sizes)."""
    buf, starts, sizes = cpu_zstd.encode_frames(np.stack([chunks[k % len(chunks)] for k in range(n)]), FRAME,
                                                gz.FRAME_ALIGN)
    pinned = transfer.pinned_empty(buf.size, np.uint8)
    pinned[:] = buf
    return pinned, starts, sizes


def main():
    out = open(sys.argv[1] if len(sys.argv) > 1 else "big-frames.txt", "w")

    def say(**kw):
        line = json.dumps(kw)
        print(line, flush=True)
        out.write(line + "\n")

    host = cupy.asnumpy(e2e_block(C, 8 * C))  # one chunk row of the e2e input
    chunks = [np.ascontiguousarray(host[:, j * C:(j + 1) * C]) for j in range(8)]
    buf, starts, sizes = packed(chunks, 8)
    frames = [bytes(buf[a:a + n]) for a, n in zip(starts, sizes)]
    say(what="frames", frame_bytes=FRAME, ratio=8 * FRAME / float(sizes.sum()))
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
    for n in [int(c) for c in sys.argv[2].split(",")] if len(sys.argv) > 2 else (1, 2, 4, 8, 16, 32):
        buf, starts, sizes = packed(chunks, n)
        got = {}
        dt = sorted(synced(lambda: got.update(x=gz.decode_frames(buf, starts, sizes, FRAME, np.float32)))
                    for _ in range(3))[1]
        k = min(n, 8) * C * C
        say(what="nvcomp decode 64MiB frames", frames=n, s=dt, GBps=n * FRAME / dt / 1e9,
            checked=bool((got["x"][:k] == ref.view(cupy.float32)[:k]).all()))
        got.clear()
    buf, starts, sizes = packed(chunks, 8)

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
