"""100 consecutive jobs on one cluster: host RSS and GPU pool bytes per worker after each job.
`python -m benchmarks.soak [--jobs 100]` prints the first/last figures and the growth."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--out", default="soak.json")
    a = p.parse_args()
    import distconv as dc
    from distconv import batch as workflow

    tmp = Path(tempfile.mkdtemp())
    wf_path = tmp / "wf.yaml"
    wf_path.write_text("input:\n  path: in.zarr\n  synthetic: {shape: [4096, 4096], chunks: [1024, 4096]}\n"
                       "chunks: [1024, 4096]\nsteps:\n  - op: gaussian_filter\n    sigma: 2.0\n"
                       "  - op: cumsum\n    axis: 1\noutputs:\n  path: out.zarr\n")
    wf = workflow.load(wf_path)

    def usage():
        import psutil

        rss = psutil.Process().memory_info().rss
        try:
            import cupy

            gpu = cupy.get_default_memory_pool().total_bytes()
        except Exception:  # noqa: BLE001 - CPU workers
            gpu = 0
        return rss, gpu

    samples = []
    with dc.cluster({"type": "auto", "dashboard_address": "127.0.0.1:0"}, quiet=True) as client:
        for i in range(a.jobs):
            workflow.run(wf, client, overwrite=True, progress=False)
            client.run(__import__("gc").collect)
            samples.append(list(client.run(usage).values()))
    first, last = samples[min(4, len(samples) - 1)], samples[-1]
    growth = [(l[0] - f[0], l[1] - f[1]) for f, l in zip(first, last)]
    doc = {"jobs": a.jobs, "after_job_5": first, "after_last_job": last,
           "growth_bytes_per_worker_host_gpu": growth}
    Path(a.out).write_text(json.dumps(doc, indent=1))
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
