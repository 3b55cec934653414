"""Dask rows on GPU-resident data (PERF.md): `python -m benchmarks.dask_rows --gpus 2`.

For each case: data generated on the workers and persisted (16 GiB of input per GPU), then the
median of `wait(op(x).persist())` over fresh keys; beside it the same kernel through map_blocks
with no halos/carries (halo_overhead), the op's single-GPU whole-array rate measured on a worker
(efficiency), and the dask anchor on the same cluster. Reads the task stream for placement.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial
from pathlib import Path

import numpy as np

GiB = 2**30


def _timed(client, make, repeat=5):
    """Median seconds of ``persist`` + ``wait`` over ``repeat`` fresh graphs, after one call
    not counted (kernel compiles, memory-pool growth, mask uploads); a pause after each lets
    the workers free the previous result (else its blocks are still held and the next run
    allocates new ones)."""
    from distributed import wait

    times = []
    for i in range(repeat + 1):
        y = make(i)
        t = time.perf_counter()
        y = y.persist()
        wait(y)
        times.append(time.perf_counter() - t)
        del y
        time.sleep(0.3)
    return float(np.median(times[1:]))


def _single_gpu_rate(client, case):
    """The op's whole-array GB/s on one worker's GPU (1 GiB input), by CUDA events."""

    def measure():
        import cupy
        from cupyx.profiler import benchmark

        import distconv as dc

        x = cupy.random.standard_normal((16384, 16384), dtype=cupy.float32)
        fn = {"dask_conv2d_5x5": lambda: dc.correlate(x, W5),
              "dask_chain3": lambda: dc.histogram(dc.laplace(dc.gaussian_filter(x, 2.0)), bins=256, range=(-1, 1)),
              "dask_scan_axis1": lambda: dc.cumsum(x, axis=1),
              "dask_hist256": lambda: dc.histogram(x, bins=256, range=(-5, 5)),
              "dask_deriv8": lambda: dc.derivative(x, 0, accuracy=8)}[case]
        ms = float(np.median(benchmark(fn, n_repeat=10, n_warmup=2).gpu_times[0]) * 1e3)
        nbytes = x.nbytes * (1 if case == "dask_hist256" else 2)
        return nbytes / ms / 1e6

    return list(client.run(measure).values())[0]


W5 = np.random.default_rng(5).standard_normal((5, 5))


def kmeans_fit_row(gpus: int, n_per_gpu: int = 2**24, d: int = 64, k: int = 256, iters: int = 5):
    """KMeans.fit (fixed start, fixed iterations) on descriptors resident on the GPUs."""
    import cupy
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    import distconv as dc

    with LocalCUDACluster(n_workers=gpus, threads_per_worker=4, dashboard_address="127.0.0.1:0") as c, Client(c) as client:
        rs = da.random.RandomState(RandomState=cupy.random.RandomState)
        parts = [client.persist(rs.standard_normal((n_per_gpu * 2 // gpus if gpus == 1 else n_per_gpu, d),
                                                   chunks=(2**22, d), dtype=np.float32), workers=[w])
                 for w in list(client.scheduler_info()["workers"])[:gpus]]
        X = client.persist(da.concatenate(parts))
        wait(X)
        C0 = np.random.default_rng(0).standard_normal((k, d))
        dc.KMeans(k, init=C0, max_iter=1, tol=0.0).fit(X)  # warm-up: compile on every worker
        t = time.perf_counter()
        km = dc.KMeans(k, init=C0, max_iter=iters, tol=0.0).fit(X)
        secs = time.perf_counter() - t
    return {"case": "dask_kmeans_fit", "layer": "dask", "gpus": gpus, "seconds": round(secs, 3),
            "n": int(X.shape[0]), "d": d, "k": k, "iterations": km.n_iter_}


def run(gpus: int, rows_per_gpu: int, width: int, out: Path, e2e: bool, e2e_only: bool = False,
        only: list | None = None):
    import cupy
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    import distconv as dc
    from distconv.ops.stencils import central_coefficients
    from distconv import backends

    if e2e_only:
        doc = {"gpus": gpus, "e2e": e2e_rows(gpus)}
        out.write_text(json.dumps(doc, indent=1))
        return doc
    cluster = LocalCUDACluster(n_workers=gpus, threads_per_worker=4, dashboard_address="127.0.0.1:0",
                               protocol="tcp")
    client = Client(cluster)
    shape = (gpus * rows_per_gpu, width)
    chunk_rows, chunk_cols = 4096, min(width, 16384)
    # each GPU generates and keeps its own 16 GiB (placement by design, not by the scheduler's luck)
    from distributed import wait

    rs = da.random.RandomState(RandomState=cupy.random.RandomState)
    parts = [client.persist(rs.standard_normal((rows_per_gpu, width), chunks=(chunk_rows, chunk_cols), dtype=np.float32),
                            workers=[w]) for w in list(client.scheduler_info()["workers"])[:gpus]]
    x = client.persist(da.concatenate(parts, axis=0))  # aliases, computed where each part lives
    wait(x)
    placement = {}
    for key, workers in client.who_has(x).items():
        placement.setdefault(next(iter(workers)), 0)
        placement[next(iter(workers))] += 1
    nbytes = x.nbytes
    rows = []
    c8 = central_coefficients(1, 8)
    cases = {
        "dask_conv2d_5x5": (lambda i: dc.correlate(x, W5 * (1 + 1e-7 * i)),
                            lambda i: x.map_blocks(backends.correlate, weights=W5 * (1 + 1e-7 * i), mode="reflect",
                                                   cval=0.0, origin=(0, 0), dtype=np.float32),
                            "dask-image correlate (cupy chunks)",
                            lambda i: __import__("dask_image.ndfilters", fromlist=["x"]).correlate(
                                x, cupy.asarray(W5 * (1 + 1e-7 * i), dtype=np.float32)), 2),
        # keys repeat across runs; each run's result is released before the next, so it recomputes
        "dask_scan_axis1": (lambda i: dc.cumsum(x, axis=1),
                            lambda i: x.map_blocks(
                                partial(backends.scan, op="add", axis=1, exclusive=False, dtype=np.float32),
                                dtype=np.float32),
                            "dask cumsum (blelloch)",
                            lambda i: x.cumsum(axis=1, method="blelloch"), 2),
        "dask_hist256": (lambda i: dc.histogram(x, bins=256, range=(-5, 5 + 1e-6 * i))[0],
                         lambda i: x.map_blocks(lambda b: backends.counts(b, np.linspace(-5, 5 + 1e-6 * i, 257).astype(np.float32), True)[None],
                                                chunks=((1,) * x.numblocks[0], (256,) * x.numblocks[1]), dtype=np.int64),
                         "dask.array.histogram",
                         lambda i: da.histogram(x, bins=256, range=(-5, 5 + 1e-6 * i))[0], 1),
        "dask_deriv8": (lambda i: dc.derivative(x, 0, accuracy=8, spacing=1 + 1e-7 * i),
                        lambda i: x.map_blocks(backends.correlate_passes, passes=[(0, c8 / (1 + 1e-7 * i), 0)],
                                               mode="nearest", cval=0.0, dtype=np.float32),
                        "map_overlap + cupyx correlate1d",
                        lambda i: x.map_overlap(lambda b: __import__("cupyx.scipy.ndimage", fromlist=["x"]).correlate1d(
                            b, cupy.asarray(c8, dtype=np.float32), axis=0, mode="nearest"), depth={0: 4, 1: 0},
                            boundary="none"), 2),
    }
    cases["dask_chain3"] = (lambda i: dc.histogram(dc.laplace(dc.gaussian_filter(x, 2.0 + 1e-7 * i)), bins=256,
                                                   range=(-1.0, 1.0))[0], None, None, None, 1)
    cases = {k: v for k, v in cases.items() if not only or k in only}
    checks = _checks(x, chunk_rows, rows_per_gpu)
    import dask

    # distconv's default blocks (runs of chunks up to distconv.block-bytes per task), then the
    # user's 256 MiB chunks as they are (block-bytes 0): anchors and map_blocks measured once
    for blocks_name, limit in (("default", None), ("user 256 MiB chunks", 0)):
        with dask.config.set({"distconv.block-bytes": limit} if limit is not None else {}):
            for case, (op, blocks, anchor_name, anchor, passes) in cases.items():
                try:
                    user_pass = limit is not None  # map_blocks and the anchor run once, here
                    r = _case(client, case, op, blocks if user_pass else None, anchor_name if user_pass else None,
                              anchor if user_pass else None, passes, nbytes, gpus)
                    r["blocks"] = blocks_name
                    r["out_chunks_rows"] = _out_rows(op(0))
                    r["checked"] = bool(checks[case](op(0)))
                    print(json.dumps(r), flush=True)
                    rows.append(r)
                except Exception:  # noqa: BLE001 - one broken case must not hide the others' numbers
                    import traceback

                    traceback.print_exc()
    anchors = {r["case"]: r for r in rows if r.get("anchor_ms")}
    for r in rows:  # the anchor ran once, on the user's chunks: the same data for both rows
        a = anchors.get(r["case"])
        if a is not None and r.get("anchor_ms") is None:
            r.update(anchor=a["anchor"], anchor_ms=a["anchor_ms"], speedup=round(a["anchor_ms"] / r["ms"], 2))
    conv = {r["blocks"]: r["ms"] for r in rows if r["case"] == "dask_conv2d_5x5"}
    for r in rows:
        if r["case"] == "dask_chain3" and r["blocks"] in conv:
            r["vs_conv5"] = round(r["ms"] / conv[r["blocks"]], 2)
    doc = {"gpus": gpus, "shape": list(shape), "input_GiB": nbytes / GiB, "placement": {str(k): v for k, v in placement.items()},
           "rows": rows}
    client.close()
    cluster.close()
    if e2e:
        doc["e2e"] = e2e_rows(gpus)
    out.write_text(json.dumps(doc, indent=1))
    return doc


def _out_rows(y):
    return sorted(set(y.chunks[0]))[-1] if y.ndim == 2 else None


def _checks(x, chunk_rows, rows_per_gpu):
    """Per case: does the row's own result (lazy, as timed) equal numpy/scipy? Slabs cross a
    chunk boundary and, with several GPUs, the boundary between two GPUs' data."""
    import cupy
    import scipy.ndimage as ndi

    import dask
    import dask.array as da
    import distconv as dc
    from distconv.ops import filters
    from distconv.ops.stencils import central_coefficients

    at = [chunk_rows] + ([rows_per_gpu] if x.shape[0] > rows_per_gpu else [])

    def slabs(y, m, ref_fn, rtol=1e-4, atol=1e-3):
        ok = True
        for r in at:
            got = y[r - 8: r + 8].compute().get()
            src = x[r - 8 - m: r + 8 + m].compute().get().astype(np.float64)
            ref = ref_fn(src)[m: m + 16]
            ok &= bool(np.allclose(got, ref, rtol=rtol, atol=atol))
        return ok

    c8 = central_coefficients(1, 8)

    def hist_vs_dask(h):
        ref = da.histogram(x, bins=256, range=(-5, 5))[0].compute()
        return bool(np.abs(cupy.asnumpy(h.compute()) - cupy.asnumpy(ref)).sum() <= 1e-6 * x.size)

    def chain_vs_unfused(h):
        """The chain's values against scipy on slabs; its fused counts against cupy.histogram
        (numpy's binning, another implementation) of those values, exactly: the fused kernel's
        arithmetic is the unfused kernels', bit for bit."""
        with dask.config.set({filters.FUSE_KEY: False}):
            y = dc.laplace(dc.gaussian_filter(x, 2.0))
            ok = slabs(y, 12, lambda s: ndi.laplace(ndi.gaussian_filter(s, 2.0), mode="nearest"))
            count = dask.delayed(lambda b: cupy.histogram(b, bins=256, range=(-1.0, 1.0))[0])
            ref = dask.delayed(sum)([count(b) for b in y.to_delayed().ravel()]).compute()
        return ok and bool(np.array_equal(cupy.asnumpy(h.compute()), cupy.asnumpy(ref)))

    def scan_rows(y):
        got = y[chunk_rows - 2: chunk_rows + 2].compute().get()
        ref = np.cumsum(x[chunk_rows - 2: chunk_rows + 2].compute().get().astype(np.float64), axis=1)
        return bool(np.allclose(got, ref, rtol=1e-3, atol=1e-3 * np.sqrt(x.shape[1])))

    return {"dask_conv2d_5x5": lambda y: slabs(y, 2, lambda s: ndi.correlate(s, W5)),
            "dask_deriv8": lambda y: slabs(y, 4, lambda s: ndi.correlate1d(s, c8, axis=0, mode="nearest")),
            "dask_scan_axis1": scan_rows,
            "dask_hist256": hist_vs_dask,
            "dask_chain3": chain_vs_unfused}


def _case(client, case, op, blocks, anchor_name, anchor, passes, nbytes, gpus):
    t_op = _timed(client, op)
    t_blocks = _timed(client, blocks) if blocks is not None else None
    t_anchor = None
    try:
        t_anchor = _timed(client, anchor, repeat=1) if anchor is not None else None
    except Exception as e:  # noqa: BLE001 - an anchor that fails is reported, not fatal
        anchor_name = f"{anchor_name} (failed: {type(e).__name__})"
    single = _single_gpu_rate(client, case)
    moved = nbytes if passes == 1 else 2 * nbytes
    gbps = moved / t_op / 1e9
    r = {"case": case, "layer": "dask", "gpus": gpus, "ms": round(t_op * 1e3, 2), "GBps": round(gbps, 1),
         "pct_copy": None, "anchor": anchor_name,
         "anchor_ms": None if t_anchor is None else round(t_anchor * 1e3, 1),
         "speedup": None if t_anchor is None else round(t_anchor / t_op, 2),
         "efficiency": round(gbps / (gpus * single), 3),
         "halo_overhead": None if t_blocks is None else round(t_op / t_blocks, 3),
         "checked": False, "note": f"single-GPU whole-array {single:.0f} GB/s"
                                   + ("" if t_blocks is None else f"; map_blocks {t_blocks * 1e3:.1f} ms")}
    return r


def e2e_rows(gpus):
    """The end-to-end row on its own clusters, at 4 and 16 threads per GPU worker (Zarr
    decode/encode runs on those threads)."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    rows = []
    for threads, storage_rows in ((4, 2048), (16, 2048), (16, 256)):
        with LocalCUDACluster(n_workers=gpus, threads_per_worker=threads, dashboard_address="127.0.0.1:0") as c, \
                Client(c) as client:
            rows.append({**e2e_row(client, gpus, storage_rows), "threads_per_worker": threads,
                         "storage_chunk_MiB": storage_rows * 32768 * 4 / 2**20})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def e2e_row(client, gpus, storage_rows=2048):
    """Zarr (zstd) -> correlate 5x5 -> Zarr through the workflow engine, 4 GiB, compute chunks
    of 2048 x 32768 (256 MiB) made of storage chunks of ``storage_rows`` rows."""
    import dask.array as da

    from distconv import batch as workflow
    from distconv.batch.synthetic import synthetic

    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"dc-e2e-{storage_rows}"
    src = root / "in.zarr"
    if not src.exists():
        from distconv.engine.storage import create

        lazy = synthetic((32768, 32768), (storage_rows, 32768), "float32", 0)
        da.store(lazy, create(str(src), lazy.shape, lazy.chunksize, lazy.dtype), lock=False)
    wf = workflow.Workflow(name="e2e", kind="array", source=Path("e2e"), input={"path": str(src)},
                           steps=[("correlate", {"weights": W5.tolist()})],
                           outputs={"path": str(root / "out.zarr"), "codec": "zstd"}, chunks=[2048, 32768])
    t = time.perf_counter()
    s = workflow.run(wf, client, overwrite=True, progress=False)
    secs = time.perf_counter() - t
    return {"case": "e2e_zarr_conv5", "layer": "end to end", "gpus": gpus, "GBps": round(s["bytes_in"] / secs / 1e9, 3),
            "seconds": round(secs, 2), "input_GiB": s["bytes_in"] / GiB}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--rows-per-gpu", type=int, default=65536)
    p.add_argument("--width", type=int, default=65536)
    p.add_argument("--out", default="dask-rows.json")
    p.add_argument("--e2e", action="store_true")
    p.add_argument("--e2e-only", action="store_true")
    p.add_argument("--kmeans-only", action="store_true")
    p.add_argument("--cases", default="", help="comma-separated row names (default: all)")
    a = p.parse_args()
    if a.kmeans_only:
        r = kmeans_fit_row(a.gpus)
        print(json.dumps(r), flush=True)
        Path(a.out).write_text(json.dumps(r, indent=1))
        raise SystemExit(0)
    run(a.gpus, a.rows_per_gpu, a.width, Path(a.out), a.e2e, a.e2e_only, [c for c in a.cases.split(",") if c])
