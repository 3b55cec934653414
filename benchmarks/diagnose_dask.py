"""Where the dask-layer time goes: for each op at distconv's default blocks and at the user's
256 MiB chunks, on GPU-resident data (one GPU worker, 16 GiB): client wall time, the span of
the tasks on the worker, when the scheduler sent the first task and held the last result, and
per key prefix the task count and busy time (host time: kernels are asynchronous, so busy >>
GPU time means the host waited). `python -m benchmarks.diagnose_dask`."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np


def _name(key) -> str:
    return key[0] if isinstance(key, tuple) else str(key)


def _sent_and_done(names, t0, dask_scheduler=None):
    """ms after t0: the scheduler took the graph up, first sent a task of it to a worker, held
    the last key named in ``names`` (from its transition log; -1: not seen)."""
    sent, done, handled = [], [], []
    for key, _start, finish, _rec, stim, ts in list(dask_scheduler.transition_log)[-5000:]:
        if ts < t0:
            continue
        if finish == "processing":
            sent.append(ts)
            if stim.startswith("update-graph-"):  # (stamped when the scheduler took the graph up)
                handled.append(float(stim.rsplit("-", 1)[1]))
        elif finish == "memory" and _name(key) in names:
            done.append(ts)
    ms = lambda v: (min(v) - t0) * 1e3 if v else -1.0  # noqa: E731
    return ms(handled), ms(sent), (max(done) - t0) * 1e3 if done else -1.0


def main(gpus: int = 1):
    import cupy
    import dask
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from dask.core import flatten
    from distributed import Client, wait

    import distconv as dc

    cluster = LocalCUDACluster(n_workers=gpus, threads_per_worker=4, dashboard_address="127.0.0.1:0")
    client = Client(cluster)
    rs = da.random.RandomState(RandomState=cupy.random.RandomState)
    parts = [client.persist(rs.standard_normal((65536, 65536), chunks=(4096, 16384), dtype=np.float32), workers=[w])
             for w in list(client.scheduler_info()["workers"])[:gpus]]
    x = client.persist(da.concatenate(parts, axis=0))
    wait(x)
    w = np.random.default_rng(0).standard_normal((5, 5))
    cases = {"conv5": lambda: dc.correlate(x, w),
             "hist": lambda: dc.histogram(x, bins=256, range=(-5, 5))[0],
             "deriv8": lambda: dc.derivative(x, 0, accuracy=8),
             "chain3": lambda: dc.histogram(dc.laplace(dc.gaussian_filter(x, 2.0)), bins=256, range=(-1, 1))[0],
             "trivial": lambda: x.map_blocks(lambda b: b[:1, :1], chunks=tuple((1,) * n for n in x.numblocks))}
    for blocks, limit in (("default", 2 * 2**30), ("16 GiB", 16 * 2**30), ("user", 0)):
        with dask.config.set({"distconv.block-bytes": limit}):
            for name, make in list(cases.items()) * 2:
                client.get_task_stream()  # reset window
                y = make()
                t0 = time.time()
                y = y.persist()
                returned = (time.time() - t0) * 1e3
                wait(y)
                wall = time.time() - t0
                ts = client.get_task_stream(start=t0)
                per = defaultdict(lambda: [0, 0.0])
                starts, stops = [], []
                workers = defaultdict(lambda: [0, 0.0, 1e30, 0.0])  # tasks, busy, first start, last stop
                moved = [0, 0.0]
                for t in ts:
                    prefix = t["key"][0].rsplit("-", 1)[0] if isinstance(t["key"], tuple) else str(t["key"])
                    for s in t["startstops"]:
                        if s["action"] == "compute":
                            per[prefix][0] += 1
                            per[prefix][1] += s["stop"] - s["start"]
                            starts.append(s["start"])
                            stops.append(s["stop"])
                            wk = workers[t["worker"]]
                            wk[0] += 1
                            wk[1] += s["stop"] - s["start"]
                            wk[2], wk[3] = min(wk[2], s["start"]), max(wk[3], s["stop"])
                        elif s["action"] == "transfer":
                            moved[0] += 1
                            moved[1] += s["stop"] - s["start"]
                span = (max(stops) - min(starts)) * 1e3 if starts else 0
                lead = (min(starts) - t0) * 1e3 if starts else 0
                took, sent, done = client.run_on_scheduler(_sent_and_done, {_name(k) for k in flatten(y.__dask_keys__())}, t0)
                print(f"{blocks:8s} {name:8s}: wall {wall * 1e3:6.1f} ms, persist returns at {returned:4.1f} ms, "
                      f"scheduler takes the graph up at {took:4.1f} ms, sends at {sent:5.1f} ms, "
                      f"first task at {lead:5.1f} ms, span {span:6.1f} ms, last result at the scheduler "
                      f"{done:5.1f} ms; "
                      + "; ".join(f"{k}: {n} tasks {d * 1e3:.1f} ms busy" for k, (n, d) in per.items())
                      + f"; transfers {moved[0]} ({moved[1] * 1e3:.1f} ms)", flush=True)
                if gpus > 1:
                    print("          per worker (tasks, busy ms, start ms, stop ms): " + "; ".join(
                        f"{n} {b * 1e3:.0f} {(a - t0) * 1e3:.0f} {(z - t0) * 1e3:.0f}"
                        for n, b, a, z in workers.values()), flush=True)
                del y

    def one_member():
        import cupy
        from cupyx.profiler import benchmark

        from distconv.backends import correlate, counts
        from distconv.core.tile import Tile

        b = cupy.random.standard_normal((4096, 16384), dtype=cupy.float32)
        pieces = {(dy, dx): b[:2, :2].copy() if dy and dx else (b[:2].copy() if dy else b[:, :2])
                  for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx}
        t = Tile(b, ((2, 2), (2, 2)), pieces)
        out = cupy.empty_like(b)
        edges = np.linspace(-5, 5, 257).astype(np.float32)
        res = {}
        for name, fn in {"tile": lambda: correlate(t, w, "reflect", 0.0, (0, 0)),
                         "tile out=": lambda: correlate(t, w, "reflect", 0.0, (0, 0), out=out),
                         "plain": lambda: correlate(b, w, "reflect", 0.0, (0, 0)),
                         "counts": lambda: counts(b, edges, True)}.items():
            r = benchmark(fn, n_repeat=20, n_warmup=3)
            res[name] = (round(float(np.median(r.gpu_times[0])) * 1e3, 3), round(float(np.median(r.cpu_times)) * 1e3, 3))
        return res

    print("one 256 MiB member (gpu ms, cpu ms):", client.run(one_member), flush=True)
    client.close()
    cluster.close()


if __name__ == "__main__":
    import sys

    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
