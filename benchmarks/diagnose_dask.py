"""Where the dask-layer time goes: task-stream durations per key prefix for our halo graph
vs map_blocks of the same kernel, on GPU-resident data. `python -m benchmarks.diagnose_dask`."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np


def main():
    import cupy
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    import distconv as dc
    from distconv.backends import correlate

    cluster = LocalCUDACluster(n_workers=1, threads_per_worker=4, dashboard_address="127.0.0.1:0")
    client = Client(cluster)
    rs = da.random.RandomState(RandomState=cupy.random.RandomState)
    x = rs.standard_normal((16 * 4096, 65536), chunks=(4096, 65536), dtype=np.float32).persist()
    wait(x)
    w = np.random.default_rng(0).standard_normal((5, 5))
    cases = {"halo": lambda: dc.correlate(x, w),
             "blocks": lambda: x.map_blocks(correlate, weights=w, mode="reflect", cval=0.0,
                                            origin=(0, 0), dtype=np.float32)}
    for name, make in list(cases.items()) * 2:
        client.get_task_stream()  # reset window
        t0 = time.time()
        y = make().persist()
        wait(y)
        wall = time.time() - t0
        ts = client.get_task_stream(start=t0)
        per = defaultdict(lambda: [0, 0.0])
        for t in ts:
            prefix = t["key"][0].rsplit("-", 1)[0] if isinstance(t["key"], tuple) else str(t["key"])
            for s in t["startstops"]:
                if s["action"] == "compute":
                    per[prefix][0] += 1
                    per[prefix][1] += s["stop"] - s["start"]
        print(f"{name}: wall {wall * 1e3:.1f} ms; " + "; ".join(
            f"{k}: {n} tasks, {d * 1e3:.1f} ms busy" for k, (n, d) in per.items()), flush=True)
        del y

    def one_task():
        import cupy
        from cupyx.profiler import benchmark

        from distconv.core.tile import Tile

        b = cupy.random.standard_normal((4096, 65536), dtype=cupy.float32)
        top, bot = b[-2:].copy(), b[:2].copy()
        t = Tile(b, ((2, 2), (0, 0)), {(-1, 0): top, (1, 0): bot})
        r1 = benchmark(lambda: correlate(t, w, "reflect", 0.0, (0, 0)), n_repeat=10)
        r2 = benchmark(lambda: correlate(b, w, "reflect", 0.0, (0, 0)), n_repeat=10)
        return (float(np.median(r1.gpu_times[0])), float(np.median(r1.cpu_times)),
                float(np.median(r2.gpu_times[0])), float(np.median(r2.cpu_times)))

    print("one 1 GiB chunk, tile vs plain (gpu s, cpu s):", client.run(one_task), flush=True)
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
