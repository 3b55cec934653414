"""Layout (a)'s input decoded on one GPU in big batches, stage by stage, outside a job: zarr's
64 MiB zstd chunk files (the e2e input, as zarr writes it) read whole into one pinned buffer,
uploaded and decoded by nvCOMP in batches of 32-128 frames (NOTES.md, "End to end, round 7":
a batch costs ~0.7-0.8 s whatever its size). The first and last chunk of every decoded batch are
compared with zarr's read of them. One JSON line per measurement, to stdout and to the file
named first.

    python -m benchmarks.diagnose_batch_decode batch-decode.txt [--gib 8] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import cupy
import numpy as np
import zarr

from benchmarks import e2e
from distconv.backends.cuda import transfer
from distconv.backends.cuda import zstd as gz
from distconv.graph import plain_chunks, shards


def read_into(ch):
    """The chunk files of ``ch`` (plain_chunks.Chunks) into one pinned buffer, on the read
    pool's shards.FILE_THREADS threads: shards.Frames."""
    buf = transfer.staging("batch", "frames", ch.nbytes)
    ch.read(buf)
    return ch.frames(buf)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gib", type=float, default=8)
    ap.add_argument("--root", default=os.environ.get("TMPDIR", "/tmp") + "/dc-batch")
    a = ap.parse_args()
    with open(a.out, "w") as log:
        def say(**kw):
            line = json.dumps(kw)
            print(line, flush=True)
            log.write(line + "\n")

        measure(a, say)


def measure(a, say):
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    rows = int(a.gib * 2**30 / (4 * e2e.WIDTH)) // e2e.CHUNK * e2e.CHUNK
    src = root / "a.zarr"
    t = time.perf_counter()
    e2e.make_input(src, rows)
    say(what="input", rows=rows, width=e2e.WIDTH, s=round(time.perf_counter() - t, 2))
    os.sync()
    z = zarr.open_array(str(src), mode="r")
    (ch0, cw), per_row = z.chunks, -(-z.shape[1] // z.chunks[1])  # chunks per chunk row
    batches = [n for n in (4, 8, 16) if n <= rows // ch0]
    read_into(plain_chunks.locate(z, str(src), 0, batches[-1] * ch0))  # pinned buffer allocated, untimed
    for batch_rows in batches:
        ch = plain_chunks.locate(z, str(src), 0, batch_rows * ch0)
        frame, nframes, sizes = ch.layout.frame_nbytes, len(ch.files), ch.sizes
        t0 = time.perf_counter()
        fr = read_into(ch)
        t1 = time.perf_counter()
        out = gz.decode_frames(fr.buf, fr.starts, fr.sizes, frame, z.dtype)
        cupy.cuda.runtime.deviceSynchronize()
        t2 = time.perf_counter()
        # frame i is chunk (i // per_row, i % per_row), C order within the chunk
        chunks = out.reshape(nframes, ch0, cw)
        ok = all(np.array_equal(chunks[i].get(), z[i // per_row * ch0:(i // per_row + 1) * ch0,
                                                   i % per_row * cw:(i % per_row + 1) * cw])
                 for i in (0, nframes - 1))
        nbytes = nframes * frame
        say(what="read files + nvCOMP decode", frames=nframes, threads=shards.FILE_THREADS,
            compressed_GB=round(float(sizes.sum()) / 1e9, 2), read_s=round(t1 - t0, 3),
            read_GBps=round(float(sizes.sum()) / (t1 - t0) / 1e9, 2), decode_s=round(t2 - t1, 3),
            decoded_GBps=round(nbytes / (t2 - t1) / 1e9, 2), total_GBps=round(nbytes / (t2 - t0) / 1e9, 2),
            checked=ok)
        del out, chunks
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
