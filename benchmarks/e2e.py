"""End-to-end rows (PERF.md): `distconv run` as a user runs it (default cluster, chunks auto)
on a Zarr v3 zstd float32 array, against dask-image and a dask zarr copy on every CPU core of
the same node, in one run. Writes rows as JSON; every distconv output is checked against
scipy on sampled row bands that cross block and shard boundaries.

    python -m benchmarks.e2e --gib 16 --out e2e.json      (on the GPU node; needs dask-image)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SPY = ""  # --spy MODE:FOLDER: py-spy records each distconv run (MODE gil or idle)
W5 = (np.arange(25, dtype=np.float64).reshape(5, 5) % 7 - 3) / 10.0
WIDTH = 32768
CHUNK = 4096  # (a): 4096 x 4096 float32 = 64 MiB unsharded chunks, as zarr/dask write by default


def make_input(path: Path, rows: int):
    """A smooth field plus noise, quantized to 1/256 (compresses like measured data), written
    with zstd in 64 MiB chunks by zarr (zarrs pipeline when installed)."""
    import zarr
    from concurrent.futures import ThreadPoolExecutor

    from distconv.engine import zarr_settings

    if (path / "zarr.json").exists():
        if _shape(path) != (rows, WIDTH):
            raise SystemExit(f"{path} holds a {_shape(path)} array, not ({rows}, {WIDTH}): pick another --root")
        return
    zarr.config.set(zarr_settings())  # this benchmark process writes through zarrs too
    z = zarr.create_array(str(path), shape=(rows, WIDTH), chunks=(CHUNK, CHUNK), dtype="f4",
                          compressors=zarr.codecs.ZstdCodec(level=1))
    base = np.random.default_rng(0).standard_normal((CHUNK, WIDTH), dtype=np.float32)
    cols = np.sin(np.linspace(0, 12 * np.pi, WIDTH, dtype=np.float32))

    def slab(k):
        r = np.arange(k * CHUNK, (k + 1) * CHUNK, dtype=np.float32)[:, None]
        s = np.sin(r * (6 * np.pi / rows)) + cols + 0.3 * np.roll(base, 977 * k, axis=1)
        z[k * CHUNK:(k + 1) * CHUNK] = np.round(s * 256) / 256

    with ThreadPoolExecutor(min(32, os.cpu_count() or 8)) as ex:
        list(ex.map(slab, range(rows // CHUNK)))


def _shape(path: Path) -> tuple | None:
    """The shape a Zarr v3 array at ``path`` declares, or None when there is none."""
    meta = path / "zarr.json"
    return tuple(json.loads(meta.read_text())["shape"]) if meta.exists() else None


def distconv_run(name: str, root: Path, src: Path, steps: list, hist=None, cluster=None, region=None,
                 device=None, env=None) -> dict:
    """`distconv run` in a fresh process (what a user times), chunks auto, the default cluster
    or ``cluster`` (its YAML mapping); ``region``: input.region; ``device``: the workflow's;
    ``env``: the process's environment (else this one's)."""
    import yaml

    from distconv.engine import fencing, ownership

    out = root / f"{name}.zarr"
    inp = {"path": str(src), **({"region": region} if region else {})}
    wf = {"name": name, "input": inp, "chunks": "auto", "steps": steps,
          "outputs": {"path": str(out), **({"histogram": hist} if hist else {})}, **({"device": device} if device else {})}
    p = root / f"{name}.yaml"
    p.write_text(yaml.safe_dump(wf))
    if device == "cpu":  # numba's cache filled first (a fresh node's first run would run scipy meanwhile)
        subprocess.run([sys.executable, "-m", "distconv.session.builds", str(p)], check=True, env=env)
    summary = root / f"{name}.json"
    cmd = [sys.executable, "-m", "distconv.cli", "run", str(p), "--overwrite", "--no-progress", "--json", str(summary)]
    if cluster:
        (root / f"{name}-cluster.yaml").write_text(yaml.safe_dump({"cluster": cluster}))
        cmd += ["--cluster", str(root / f"{name}-cluster.yaml")]
    # a previous run's output deleted before the timed job, as distconv's --overwrite would: only a
    # store distconv wrote, with nothing foreign in it (an error otherwise)
    fencing.stop(ownership.claim(str(out), overwrite=True))  # stopped: the timed run may take it
    os.sync()  # the previous run's outputs on disk, not in dirty pages that throttle this one's writes
    if SPY:  # sampled stacks of every process of the run, collapsed (flamegraph) format
        mode, folder = SPY.split(":", 1)
        cmd = ["py-spy", "record", "--subprocesses", "--rate", "100", "--format", "raw", f"--{mode}",
               "-o", str(Path(folder, f"{name}-{mode}.txt")), "--"] + cmd
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    print(res.stdout[-3000:], res.stderr[-3000:], flush=True)
    if res.returncode:
        raise RuntimeError(f"distconv run {name} failed")
    s = json.loads(summary.read_text())
    s["command_wall_s"] = round(wall, 2)
    return s


def cpu_anchors(src: Path, root: Path, workers: int, threads: int) -> dict:
    """dask-image correlate 5x5 and a plain zarr copy through dask, on a CPU LocalCluster."""
    import dask.array as da
    import zarr
    from dask_image.ndfilters import correlate
    from distributed import Client, LocalCluster

    out = {}
    with LocalCluster(n_workers=workers, threads_per_worker=threads, dashboard_address="127.0.0.1:0") as c, \
            Client(c):
        x = da.from_zarr(str(src))
        for name, y in (("copy", x), ("dask_image", correlate(x, W5, mode="reflect"))):
            dst = zarr.create_array(str(root / f"anchor-{name}.zarr"), shape=x.shape, chunks=(CHUNK, CHUNK),
                                    dtype="f4", compressors=zarr.codecs.ZstdCodec(level=1), overwrite=True)
            os.sync()
            t = time.perf_counter()
            da.store(y, dst, lock=False)
            out[name] = time.perf_counter() - t
            print(name, out[name], flush=True)
    return out


def check(out: Path, src: Path, fn, bands, offset=(0, None)) -> bool:
    """Output rows equal fn(input rows with 40 rows of context) on each band, read by plain
    zarr-python (rows within 20 of an artificial cut of the context are not compared).
    ``offset``: the input rows (start, stop) the output's rows are (a region's)."""
    import zarr

    zarr.config.set({"codec_pipeline.path": "zarr.core.codec_pipeline.BatchedCodecPipeline"})
    zo, zi = zarr.open_array(str(out), mode="r"), zarr.open_array(str(src), mode="r")
    first = offset[0]
    n = (offset[1] or zi.shape[0]) - first
    for r in bands:
        lo, hi = max(0, r - 40), min(n, r + 40)
        a, b = lo + (20 if lo > 0 else 0), hi - (20 if hi < n else 0)
        ref = fn(zi[first + lo:first + hi])[a - lo:b - lo]
        got = zo[a:b]
        if not np.allclose(got, ref, rtol=1e-4, atol=1e-3):
            print("MISMATCH at rows", r, float(np.abs(got - ref).max()), flush=True)
            return False
    return True


def check_wrap(out: Path, src: Path, fn, bands) -> bool:
    """As check(), for a mode that wraps along axis 0: each band's 80 rows of context taken
    modulo the rows (so a band at an edge sees the far edge), its middle 40 rows compared."""
    import zarr

    zarr.config.set({"codec_pipeline.path": "zarr.core.codec_pipeline.BatchedCodecPipeline"})
    zo, zi = zarr.open_array(str(out), mode="r"), zarr.open_array(str(src), mode="r")
    for r in bands:
        idx = np.arange(r - 40, r + 40) % zi.shape[0]
        ref = fn(zi.oindex[idx, :])[20:60]
        got = zo.oindex[idx[20:60], :]
        if not np.allclose(got, ref, rtol=1e-4, atol=1e-3):
            print("MISMATCH at rows", r, float(np.abs(got - ref).max()), flush=True)
            return False
    return True


def stored_histogram(out: Path, spec: dict) -> list:
    """numpy.histogram of every value of the stored output, read in pieces: the counts the
    fused pass made must be those of the values it wrote, exactly (the values themselves are
    checked against scipy by check())."""
    import zarr

    z = zarr.open_array(str(out), mode="r")
    step = max(1, 2**28 // (z.dtype.itemsize * int(np.prod(z.shape[1:]))))
    total = np.zeros(spec["bins"], dtype=np.int64)
    for r in range(0, z.shape[0], step):
        total += np.histogram(z[r:r + step], bins=spec["bins"], range=tuple(spec["range"]))[0]
    return total.tolist()


def fs_type(path: Path) -> str:
    """The file system holding ``path`` (tmpfs separates the pipeline from the node's disk)."""
    best, kind = "", "?"
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mount, fs = line.split()[:3]
        if str(path.resolve()).startswith(mount) and len(mount) > len(best):
            best, kind = mount, fs
    return kind


def node_arguments(name: str, cpu_workers: int) -> argparse.ArgumentParser:
    """The options every end-to-end script takes: size, output, data folder, the CPU anchors'
    cluster."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=16)
    ap.add_argument("--out", default=f"{name}.json")
    ap.add_argument("--root", default=os.environ.get("TMPDIR", "/tmp") + f"/dc-{name}")
    ap.add_argument("--cpu-workers", type=int, default=cpu_workers)
    ap.add_argument("--cpu-threads", type=int, default=4)
    return ap


def drop(out: Path):
    """A checked output removed (distconv's own files only): the node's disk holds few 16 GiB runs."""
    from distconv.engine import marks, removal

    if out.exists():
        removal.remove_owned(str(out))  # refuses before deleting anything not distconv's
        for kept in marks.OWN_ENTRIES:  # the owner mark and its lock stay till the end
            if (out / kept).is_file():
                (out / kept).unlink()
        out.rmdir()  # empty now, or it raises: nothing else is touched


def check_cumsum(out: Path, src: Path, bands) -> bool:
    """Output rows of a cumsum along axis 0 equal the float64 prefix sums of the input, on each
    band: the carry into a band from column sums of every row above it (the whole input read
    once through zarr), the band's own rows summed here."""
    import zarr

    zi = zarr.open_array(str(src), mode="r")
    zarr.config.set({"codec_pipeline.path": "zarr.core.codec_pipeline.BatchedCodecPipeline"})
    zo = zarr.open_array(str(out), mode="r")
    n, step = zi.shape[0], CHUNK
    starts = sorted({max(0, r - 8) for r in bands})
    carry, at, total = {}, 0, np.zeros(zi.shape[1:], np.float64)
    for a in starts:
        while at < a:
            b = min(a, (at // step + 1) * step)
            total += zi[at:b].sum(axis=0, dtype=np.float64)
            at = b
        carry[a] = total.copy()
    for a in starts:
        b = min(n, a + 16)
        ref = carry[a] + np.cumsum(zi[a:b], axis=0, dtype=np.float64)
        got = zo[a:b].astype(np.float64)
        tol = 4e-6 * (np.arange(a, b) + 1)[:, None] * 4  # float32 sums of ~n terms of |x| <= 4
        if not np.all(np.abs(got - ref) <= tol):
            print("MISMATCH at rows", a, float(np.abs(got - ref).max()), flush=True)
            return False
    return True


def main():
    global CHUNK, WIDTH, SPY
    import scipy.ndimage as ndi

    from distconv.backends.devices import gpu_count

    ap = node_arguments("e2e", 8)
    ap.add_argument("--chunk", type=int, default=4096, help="storage chunk side of the input")
    ap.add_argument("--cases", default="a,b,chain3",
                    help="which runs: a, b, chain3, cumsum0, region, cpu (distconv run on a CPU cluster), "
                         "kept (a, twice, joining a cluster kept by `distconv cluster start`), "
                         "wrap (conv5 with mode wrap: the general path)")
    ap.add_argument("--no-anchors", action="store_true", help="skip dask-image and the zarr copy")
    ap.add_argument("--spy", default="", help="gil:FOLDER or idle:FOLDER: py-spy each distconv run")
    a = ap.parse_args()
    CHUNK, SPY = a.chunk, a.spy
    WIDTH = max(CHUNK, WIDTH * CHUNK // 4096)
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    rows = int(a.gib * 2**30 / (4 * WIDTH)) // CHUNK * CHUNK
    src = root / "a.zarr"
    t = time.perf_counter()
    make_input(src, rows)
    print(f"input {rows} x {WIDTH} written in {time.perf_counter() - t:.1f} s", flush=True)
    nbytes = rows * WIDTH * 4
    bands = sorted({0, CHUNK, 2 * CHUNK - 2, 2 * CHUNK + 1, rows // 2 + 3, rows - 1} & set(range(rows)))
    conv = lambda v: ndi.correlate(v, W5, mode="reflect")  # noqa: E731
    conv5 = [{"op": "correlate", "weights": W5.tolist()}]
    cases = a.cases.split(",")
    results = {}  # key -> (summary, bytes read)
    gpus = gpu_count()
    # (b) reads (a)'s output: run (a) unless it is asked for or an (a) output of this size is there
    if "a" in cases or ("b" in cases and _shape(root / "conv5-a.zarr") != (rows, WIDTH)):
        results["a"] = distconv_run("conv5-a", root, src, conv5)
        results["a"]["checked"] = check(root / "conv5-a.zarr", src, conv, bands)
    if "b" in cases:
        results["b"] = distconv_run("conv5-b", root, root / "conv5-a.zarr", conv5)
        results["b"]["checked"] = check(root / "conv5-b.zarr", root / "conv5-a.zarr", conv, bands)
        drop(root / "conv5-b.zarr")
    drop(root / "conv5-a.zarr")
    if "chain3" in cases:
        hist = {"bins": 256, "range": [-4.0, 4.0], "json": str(root / "chain3-hist.json")}
        results["chain3"] = distconv_run("chain3", root, src, [{"op": "gaussian_filter", "sigma": 2.0},
                                                                {"op": "laplace"}], hist)
        chain = lambda v: ndi.laplace(ndi.gaussian_filter(v, 2.0), mode="nearest")  # noqa: E731
        counts = json.loads(Path(hist["json"]).read_text())["counts"]
        results["chain3"]["checked"] = (check(root / "chain3.zarr", src, chain, bands)
                                        and counts == stored_histogram(root / "chain3.zarr", hist))
        drop(root / "chain3.zarr")
    if "cumsum0" in cases:
        results["cumsum0"] = distconv_run("cumsum0", root, src, [{"op": "cumsum", "axis": 0}])
        results["cumsum0"]["checked"] = check_cumsum(root / "cumsum0.zarr", src, bands)
        drop(root / "cumsum0.zarr")
    if "kept" in cases:  # the second of two runs on a kept cluster (the first warms its workers)
        cli = [sys.executable, "-m", "distconv.cli", "cluster"]
        subprocess.run(cli + ["start"], check=True)
        try:
            for _ in range(2):
                results["kept"] = distconv_run("conv5-kept", root, src, conv5)
                results["kept"]["checked"] = check(root / "conv5-kept.zarr", src, conv, bands)
                drop(root / "conv5-kept.zarr")
        finally:
            subprocess.run(cli + ["stop"], check=True)
    if "wrap" in cases:  # what the engine does not take (a halo from the far edge): the general path
        results["wrap"] = distconv_run("conv5-wrap", root, src, [{**conv5[0], "mode": "wrap"}])
        wrap = lambda v: ndi.correlate(v, W5, mode="wrap")  # noqa: E731
        results["wrap"]["checked"] = check_wrap(root / "conv5-wrap.zarr", src, wrap, bands)
        drop(root / "conv5-wrap.zarr")
    box = ((rows // 8, rows - rows // 8), (WIDTH // 16, WIDTH - WIDTH // 16))
    if "region" in cases:
        results["region"] = distconv_run("region-conv5", root, src, conv5, region={k: list(v) for k, v in enumerate(box)})
        cut = lambda v: v[:, box[1][0]:box[1][1]]  # noqa: E731
        rband = [r - box[0][0] for r in bands if box[0][0] <= r < box[0][1]] + [0, box[0][1] - box[0][0] - 1]
        results["region"]["checked"] = check(root / "region-conv5.zarr", src, lambda v: conv(cut(v)), sorted(set(rband)),
                                             offset=box[0])
        drop(root / "region-conv5.zarr")
    if "cpu" in cases:
        cluster = {"type": "cpu", "n_workers": a.cpu_workers, "threads_per_worker": a.cpu_threads}
        results["cpu"] = distconv_run("cpu-conv5", root, src, conv5, cluster=cluster, device="cpu")
        results["cpu"]["checked"] = check(root / "cpu-conv5.zarr", src, conv, bands)
        drop(root / "cpu-conv5.zarr")
    anchors = {"dask_image": None, "copy": None} if a.no_anchors else cpu_anchors(src, root, a.cpu_workers,
                                                                                  a.cpu_threads)
    region_bytes = (box[0][1] - box[0][0]) * (box[1][1] - box[1][0]) * 4
    rows_out = []
    for key, case, layout in (("a", "e2e_zarr_conv5", "unsharded 64 MiB chunks"), ("b", "e2e_zarr_conv5", "distconv's shards"),
                              ("kept", "e2e_zarr_conv5", "unsharded 64 MiB chunks, a kept cluster"),
                              ("chain3", "e2e_chain3", "unsharded 64 MiB chunks"),
                              ("cumsum0", "e2e_cumsum_axis0", "unsharded 64 MiB chunks"),
                              ("region", "e2e_region_conv5", "unsharded 64 MiB chunks, a region"),
                              ("cpu", "cpu_zarr_conv5", "unsharded 64 MiB chunks"),
                              ("wrap", "e2e_general_conv5_wrap", "unsharded 64 MiB chunks, mode wrap")):
        if key not in results:
            continue
        s = results[key]
        di, cp = anchors["dask_image"], anchors["copy"]
        work = region_bytes if key == "region" else nbytes
        gbps = work / s["seconds"] / 1e9
        row = {
            "case": case, "layer": "end to end", "layout": layout, "gpus": 0 if key == "cpu" else gpus,
            "GBps": round(gbps, 2), "wall_GBps": round(work / s["wall_s"] / 1e9, 2),
            "seconds": s["seconds"], "wall_s": s["wall_s"], "startup_s": s.get("startup_s"),
            "process_s": s.get("command_wall_s"),  # the whole command, its teardown included
            "startup": s.get("startup"), "storage": fs_type(root),
            "anchor": "dask-image correlate, CPU LocalCluster", "anchor_ms": di and round(di * 1e3),
            "speedup": di and round(di * work / nbytes / s["seconds"], 2),
            "zarr_copy_GBps": cp and round(nbytes / cp / 1e9, 2),
            "vs_copy_floor": cp and round(cp * work / nbytes / s["seconds"], 2),
            "io_slots": os.environ.get("DASK_DISTCONV__IO_SLOTS", "default"),
            "stage_seconds": s.get("stage_seconds"), "step_seconds": s.get("step_seconds"),
            "path": s.get("path"), "why_general": s.get("why_general"),
            "handed_off": bool(s.get("handed_off")),  # run by a kept cluster's warm process
            "checked": bool(s["checked"])}
        if key in ("chain3", "cumsum0", "region", "kept", "wrap") and "a" in results:
            row["vs_conv5"] = round(gbps / (nbytes / results["a"]["seconds"] / 1e9), 2)
        if key == "cpu":
            row["cpu_cluster"] = f"{a.cpu_workers} workers x {a.cpu_threads} threads, as the anchors"
        rows_out.append(row)
        print(json.dumps(row), flush=True)
    Path(a.out).write_text(json.dumps({"bytes": nbytes, "gpus": gpus, "rows": rows_out, "anchors_s": anchors}, indent=1))


if __name__ == "__main__":
    main()
