"""Scaling rows (issue 52; PERF.md): `distconv run` conv5 on 1, 2, 4 ... GPUs of one node, in one
run, with the anchors on all its cores. Rows ``e2e_zarr_conv5`` per layout ((a) zarr's 64 MiB
zstd chunks, (b) distconv's shards) and GPU count, with ``strong_efficiency`` (the whole input
on g GPUs against one), ``weak_efficiency`` (``--gib-per-gpu`` a GPU against that on one),
``first_run_GBps`` (the first run on an empty kernel cache, as on a fresh node, against the
second), ``wall_GBps`` and ``startup_s``, ``vs_kept`` (the cold command's job against the same
job's second run on `distconv cluster start`'s cluster); the Python face's first ``dc.to_zarr`` on a fresh
``dc.cluster()`` (``api_zarr_conv5``); with ``--address``, the first and second run on workers
started by hand (``dask scheduler`` + ``dask cuda worker``, ``type: address``). Every output is
checked against scipy on row bands crossing block and shard boundaries.

    python -m benchmarks.scaling --gib 32 --out scaling.json     (a node of 4 GPUs; needs dask-image)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import e2e, faces


def prefix_input(src: Path, dst: Path, rows: int):
    """The first ``rows`` rows of the Zarr v3 array ``src`` (whole chunk rows) as an array of
    its own at ``dst``: its chunk files hard-linked, its metadata with the shorter shape (the
    weak-scaling inputs, the same bytes as the strong one's first rows)."""
    if (dst / "zarr.json").exists():
        return
    meta = json.loads((src / "zarr.json").read_text())
    chunk = meta["chunk_grid"]["configuration"]["chunk_shape"][0]
    assert rows % chunk == 0, (rows, chunk)
    meta["shape"][0] = rows
    for f in (src / "c").rglob("*"):
        if f.is_file() and int(f.relative_to(src / "c").parts[0]) < rows // chunk:
            target = dst / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(f, target)
    (dst / "zarr.json").write_text(json.dumps(meta))


def hand_started(gpus: int, root: Path, env: dict):
    """(scheduler address, processes): `dask scheduler` and `dask cuda worker` started as a
    multi-node user starts them, on ``gpus`` GPUs of this node (``env``: their environment; the
    kernel cache of the runs before, so their first run is a warm node's, as the issue's)."""
    sfile = root / "scheduler.json"
    sfile.unlink(missing_ok=True)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(sfile)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    deadline = time.time() + 60
    while not sfile.exists() and time.time() < deadline:
        time.sleep(0.2)
    address = json.loads(sfile.read_text())["address"]
    env = {**env, "CUDA_VISIBLE_DEVICES": ",".join(map(str, range(gpus)))}
    procs.append(subprocess.Popen([sys.executable, "-m", "dask", "cuda", "worker", address, "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
    from distributed import Client

    with Client(address, timeout="60s") as c:
        c.wait_for_workers(gpus, timeout=120)
    return address, procs


def main():
    import scipy.ndimage as ndi

    from distconv.backends.devices import gpu_count

    cores = os.cpu_count() or 4
    ap = e2e.node_arguments("scaling", max(1, cores // 4))
    ap.set_defaults(gib=32)
    ap.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2,4 (default: 1, 2, 4, ... up to the node's)")
    ap.add_argument("--gib-per-gpu", type=float, default=8, help="weak scaling: GiB a GPU")
    ap.add_argument("--layouts", default="a,b")
    ap.add_argument("--address", action="store_true", help="also the first and second run on hand-started workers")
    ap.add_argument("--no-anchors", action="store_true")
    ap.add_argument("--no-face", action="store_true", help="skip the Python face's row")
    ap.add_argument("--no-kept", action="store_true", help="skip the same job on a kept cluster (vs_kept)")
    a = ap.parse_args()
    node = gpu_count()
    counts = [int(g) for g in a.gpus.split(",")] if a.gpus else [g for g in (1, 2, 4, 8, 16) if g <= node]
    top = max(counts)
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    rows = int(a.gib * 2**30 / (4 * e2e.WIDTH)) // e2e.CHUNK * e2e.CHUNK
    src = root / "a.zarr"
    t = time.perf_counter()
    e2e.make_input(src, rows)
    print(f"input {rows} x {e2e.WIDTH} ready in {time.perf_counter() - t:.1f} s", flush=True)
    nbytes = rows * e2e.WIDTH * 4
    bands = sorted({0, e2e.CHUNK, 2 * e2e.CHUNK - 2, 2 * e2e.CHUNK + 1, rows // 2 + 3, rows - 1})
    conv = lambda v: ndi.correlate(v, e2e.W5, mode="reflect")  # noqa: E731
    conv5 = [{"op": "correlate", "weights": e2e.W5.tolist()}]
    cache = tempfile.mkdtemp(prefix="dc-kernel-cache-")  # empty: the first run is a fresh node's
    env = {**os.environ, "CUPY_CACHE_DIR": cache}

    def run(name, inp, g, keep=False, cluster=None):
        s = e2e.distconv_run(name, root, inp, conv5, cluster=cluster or {"type": "cuda", "n_workers": g}, env=env)
        out = root / f"{name}.zarr"
        s["checked"] = e2e.check(out, inp, conv, [b for b in bands if b < e2e._shape(inp)[0]])
        if not keep:
            e2e.drop(out)
        print(name, g, "GPUs", round(e2e._shape(inp)[0] * e2e.WIDTH * 4 / s["seconds"] / 1e9, 2), "GB/s job",
              s.get("startup_s"), "s start-up", s.get("startup"), s.get("kernel_builds"), flush=True)
        return s

    strong, weak = {}, {}
    first = run("first-a", src, top)  # an empty kernel cache: the node's first run
    for g in sorted(counts, reverse=True):  # the top count's is the second run on that cache
        strong["a", g] = run(f"a-{g}", src, g, keep=(g == top and "b" in a.layouts))
    if "b" in a.layouts:  # (b) reads (a)'s output: distconv's shards
        for g in sorted(counts, reverse=True):
            strong["b", g] = run(f"b-{g}", root / f"a-{top}.zarr", g)
        e2e.drop(root / f"a-{top}.zarr")
    per = int(a.gib_per_gpu * 2**30 / (4 * e2e.WIDTH)) // e2e.CHUNK * e2e.CHUNK
    for g in counts:
        if per * g == rows:
            weak[g] = strong["a", g]
        elif per * g < rows:
            prefix_input(src, root / f"in-weak-{g}.zarr", per * g)
            weak[g] = run(f"weak-{g}", root / f"in-weak-{g}.zarr", g)
    kept = {}
    if not a.no_kept:  # the top count's job on `distconv cluster start`'s cluster: what a cold run is held to
        kept_cfg = {"type": "cuda", "n_workers": top, "dashboard_address": "127.0.0.1:0"}
        state = {**env, "DASK_DISTCONV__CLUSTER_STATE": str(root / "kept" / "cluster.json")}
        (root / "kept-cluster.yaml").write_text(json.dumps({"cluster": kept_cfg}))
        subprocess.run([sys.executable, "-m", "distconv.cli", "cluster", "start", "--cluster",
                        str(root / "kept-cluster.yaml")], check=True, env=state)
        try:
            for k in ("first", "second"):
                s_ = e2e.distconv_run(f"kept-{k}", root, src, conv5, cluster=kept_cfg, env=state)
                s_["checked"] = e2e.check(root / f"kept-{k}.zarr", src, conv, bands)
                e2e.drop(root / f"kept-{k}.zarr")
                kept[k] = s_
                print("kept", k, round(nbytes / s_["seconds"] / 1e9, 2), "GB/s job", s_.get("startup_s"),
                      "s start-up", flush=True)
        finally:
            subprocess.run([sys.executable, "-m", "distconv.cli", "cluster", "stop"], env=state)
    face = None
    if not a.no_face:  # the README's snippet on a fresh dc.cluster() of every GPU
        face = faces.snippet("api-conv5", root, faces.API.format(src=str(src), w=e2e.W5.tolist(),
                                                                 dst=str(root / "api-conv5.zarr")), env=env)
        face["checked"] = e2e.check(face["out"], src, conv, bands)
        e2e.drop(face["out"])
    address = {}
    if a.address:
        addr, procs = hand_started(top, root, env)
        try:
            for k in ("first", "second"):
                address[k] = run(f"address-{k}", src, top, cluster={"type": "address", "address": addr})
        finally:
            for p in procs[::-1]:
                p.terminate()
            for p in procs:
                p.wait(timeout=60)
    anchors = {"dask_image": None, "copy": None} if a.no_anchors else e2e.cpu_anchors(src, root, a.cpu_workers,
                                                                                     a.cpu_threads)
    di = anchors["dask_image"]
    gbps = lambda s, n=nbytes: n / s["seconds"] / 1e9  # noqa: E731
    out_rows = []
    for (layout, g), s in sorted(strong.items()):
        one = strong.get((layout, 1))
        row = {"case": "e2e_zarr_conv5", "layer": "end to end", "gpus": g, "cores": cores,
               "layout": {"a": "unsharded 64 MiB chunks", "b": "distconv's shards"}[layout],
               "GBps": round(gbps(s), 2), "wall_GBps": round(nbytes / s["wall_s"] / 1e9, 2),
               "seconds": s["seconds"], "wall_s": s["wall_s"], "startup_s": s.get("startup_s"),
               "process_s": s.get("command_wall_s"), "startup": s.get("startup"),
               "strong_efficiency": one and round(gbps(s) / (g * gbps(one)), 2),
               "anchor": "dask-image correlate, CPU LocalCluster on every core", "anchor_ms": di and round(di * 1e3),
               "speedup": di and round(di / s["seconds"], 2), "wall_speedup": di and round(di / s["wall_s"], 2),
               "stage_seconds": s.get("stage_seconds"), "kernel_builds": s.get("kernel_builds"),
               "path": s.get("path"), "checked": bool(s["checked"])}
        if layout == "a" and g in weak and 1 in weak:
            row["weak_efficiency"] = round(weak[1]["seconds"] / weak[g]["seconds"], 2)
            row["weak_seconds"] = weak[g]["seconds"]
            row["checked"] = row["checked"] and bool(weak[g]["checked"])
        if layout == "a" and g == top:
            row["first_run_GBps"] = round(gbps(first), 2)
            row["first_run_wall_GBps"] = round(nbytes / first["wall_s"] / 1e9, 2)
            row["first_over_second"] = round(first["seconds"] / s["seconds"], 2)
            row["first_over_second_wall"] = round(first["wall_s"] / s["wall_s"], 2)
            row["first_run_kernel_builds"] = first.get("kernel_builds")
            row["checked"] = row["checked"] and bool(first["checked"])
        if layout == "a" and g == top and kept:  # the cold job against the same job on a kept cluster
            k = kept["second"]
            row.update(kept_GBps=round(gbps(k), 2), kept_wall_GBps=round(nbytes / k["wall_s"] / 1e9, 2),
                       kept_startup_s=k.get("startup_s"), vs_kept=round(gbps(s) / gbps(k), 2),
                       vs_kept_wall=round(k["wall_s"] / s["wall_s"], 2))
            row["checked"] = row["checked"] and all(bool(v["checked"]) for v in kept.values())
        out_rows.append(row)
    if face is not None:
        out_rows.append({"case": "api_zarr_conv5", "layer": "face", "gpus": node, "GBps": round(gbps(face), 2),
                         "wall_GBps": round(nbytes / face["wall_s"] / 1e9, 2), "seconds": face["seconds"],
                         "vs_run": round(gbps(face) / gbps(strong["a", top]), 2) if node == top else None,
                         "path": face["path"], "checked": bool(face["checked"])})
    if address:
        f, s = address["first"], address["second"]
        out_rows.append({"case": "e2e_zarr_conv5_address", "layer": "end to end", "gpus": top,
                         "layout": "unsharded 64 MiB chunks, hand-started dask-cuda workers",
                         "GBps": round(gbps(s), 2), "first_run_GBps": round(gbps(f), 2),
                         "first_over_second": round(f["seconds"] / s["seconds"], 2),
                         "startup_s": s.get("startup_s"), "first_startup_s": f.get("startup_s"),
                         "checked": bool(f["checked"] and s["checked"])})
    for r in out_rows:
        print(json.dumps(r), flush=True)
    Path(a.out).write_text(json.dumps({"bytes": nbytes, "gpus": node, "cores": cores, "rows": out_rows,
                                       "anchors_s": anchors}, indent=1))


if __name__ == "__main__":
    main()
