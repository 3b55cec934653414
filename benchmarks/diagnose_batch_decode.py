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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cupy
import numpy as np
import zarr

from benchmarks import e2e
from distconv.backends.cuda import transfer
from distconv.backends.cuda import zstd as gz
from distconv.graph import shards


def chunk_files(path: Path, z, k0: int, k1: int) -> list:
    """The files of chunk rows k0..k1 of the 2-D zarr array ``z`` stored at ``path``."""
    cols = -(-z.shape[1] // z.chunks[1])
    return [path / z.metadata.encode_chunk_key((k, j)) for k in range(k0, k1) for j in range(cols)]


def read_into(files: list, threads: int):
    """Every file whole into one pinned buffer, each at a FRAME_ALIGN start: (buf, starts, sizes)."""
    sizes = np.array([os.stat(f).st_size for f in files], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(gz.aligned_up(sizes))[:-1]]).astype(np.int64)
    buf = transfer.staging("batch", "frames", int(starts[-1] + sizes[-1]))
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda i: shards.read_range(files[i], 0, buf[starts[i]:starts[i] + sizes[i]]), range(len(files))))
    return buf, starts, sizes


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
    (ch, cw), per_row = z.chunks, -(-z.shape[1] // z.chunks[1])  # chunks per chunk row
    frame = ch * cw * z.dtype.itemsize
    batches = [n for n in (4, 8, 16) if n <= rows // ch]
    read_into(chunk_files(src, z, 0, batches[-1]), 16)  # the pinned buffer allocated, untimed
    for batch_rows in batches:
        files = chunk_files(src, z, 0, batch_rows)
        for threads in (8, 16):
            t0 = time.perf_counter()
            buf, starts, sizes = read_into(files, threads)
            t1 = time.perf_counter()
            out = gz.decode_frames(buf, starts, sizes, frame, z.dtype)
            cupy.cuda.runtime.deviceSynchronize()
            t2 = time.perf_counter()
            # frame i is chunk (i // per_row, i % per_row), C order within the chunk
            chunks = out.reshape(len(files), ch, cw)
            ok = all(np.array_equal(chunks[i].get(), z[i // per_row * ch:(i // per_row + 1) * ch,
                                                       i % per_row * cw:(i % per_row + 1) * cw])
                     for i in (0, len(files) - 1))
            nbytes = len(files) * frame
            say(what="read files + nvCOMP decode", frames=len(files), threads=threads,
                compressed_GB=round(float(sizes.sum()) / 1e9, 2), read_s=round(t1 - t0, 3),
                read_GBps=round(float(sizes.sum()) / (t1 - t0) / 1e9, 2), decode_s=round(t2 - t1, 3),
                decoded_GBps=round(nbytes / (t2 - t1) / 1e9, 2), total_GBps=round(nbytes / (t2 - t0) / 1e9, 2),
                checked=ok)
            del out, chunks
            cupy.get_default_memory_pool().free_all_blocks()

if __name__ == "__main__":
    main()
