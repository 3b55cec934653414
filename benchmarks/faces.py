"""Face rows (PERF.md): the README's Python and xarray snippets as a user runs them (a fresh
process, the default cluster), `distconv run` of the same job and dask-image on every CPU
core, in one run on one Zarr v3 zstd float32 dataset (a group holding the array ``v``, so
``da.from_zarr`` and ``xr.open_zarr`` read the same bytes). Every output is checked against
scipy on row bands crossing block and shard boundaries.

    python -m benchmarks.faces --gib 16 --out faces.json      (on the GPU node; needs dask-image)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import e2e

# The README's snippets, as written there (paths and the mask filled in; the report that
# to_zarr returns is printed: its seconds are the job's, from the call to the written output).
API = """
import dask.array as da
import distconv as dc

if __name__ == "__main__":
    with dc.cluster() as client:
        x = da.from_zarr({src!r})
        z = dc.correlate(x, {w!r})
        print("REPORT", dc.to_zarr(z, {dst!r}))
"""
XARRAY = """
import xarray as xr
import distconv as dc

if __name__ == "__main__":
    with dc.cluster() as client:
        ds = xr.open_zarr({src!r})
        print("REPORT", ds.v.distconv.gaussian_filter({{"y": 2.0, "x": 2.0}}).distconv.to_zarr({dst!r}))
"""
# The general path as a user meets it: dask's own writer (no engine) over distconv's graph; and
# what a dask + cupy user writes without distconv. Both report their own seconds.
GENERAL = """
import time
import dask.array as da
import distconv as dc

if __name__ == "__main__":
    with dc.cluster() as client:
        t = time.perf_counter()
        z = dc.correlate(da.from_zarr({src!r}), {w!r})
        z.to_zarr({dst!r})
        print("REPORT", {{"seconds": round(time.perf_counter() - t, 3), "path": "general", "why": "z.to_zarr"}})
"""
DASK_CUPY = """
import time
import cupy
import dask.array as da
import numpy as np
from cupyx.scipy import ndimage as cndi
import distconv as dc

if __name__ == "__main__":
    with dc.cluster() as client:
        t = time.perf_counter()
        w = cupy.asarray(np.array({w!r}, dtype=np.float32))
        x = da.from_zarr({src!r}).map_blocks(cupy.asarray)
        y = x.map_overlap(lambda b: cndi.correlate(b, w, mode="reflect"), depth=2, boundary="none")
        y.map_blocks(cupy.asnumpy).to_zarr({dst!r})
        print("REPORT", {{"seconds": round(time.perf_counter() - t, 3), "path": "dask+cupy", "why": None}})
"""


def make_dataset(root: Path, rows: int) -> Path:
    """face.zarr: a group with the e2e input as its variable ``v`` (dims y, x), consolidated."""
    import zarr

    ds = root / "face.zarr"
    if not (ds / "v" / "zarr.json").exists():
        zarr.open_group(str(ds), mode="w", zarr_format=3)
        e2e.make_input(ds / "v", rows)
        meta = json.loads((ds / "v" / "zarr.json").read_text())
        meta["dimension_names"] = ["y", "x"]
        (ds / "v" / "zarr.json").write_text(json.dumps(meta))
        zarr.consolidate_metadata(str(ds))
    return ds


def snippet(name: str, root: Path, text: str, env=None) -> dict:
    """Run a snippet in a fresh process (``env``: its environment, else this one's); its wall
    seconds, counted as a user's."""
    out = root / f"{name}.zarr"
    e2e.drop(out)  # a previous run's
    (root / f"{name}.py").write_text(text)
    os.sync()
    t = time.perf_counter()
    res = subprocess.run([sys.executable, str(root / f"{name}.py")], capture_output=True, text=True, cwd=root,
                         env=env)
    wall = time.perf_counter() - t
    print(name, round(wall, 2), res.stdout[-2000:], res.stderr[-3000:], flush=True)
    if res.returncode:
        raise RuntimeError(f"{name} failed")
    import ast

    report = ast.literal_eval(res.stdout.split("REPORT", 1)[1].strip().splitlines()[0])
    return {"wall_s": round(wall, 2), "out": out, "seconds": report["seconds"], "path": report["path"],
            "why": report.get("why")}


def main():
    import scipy.ndimage as ndi

    a = e2e.node_arguments("faces", 4).parse_args()
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    rows = int(a.gib * 2**30 / (4 * e2e.WIDTH)) // e2e.CHUNK * e2e.CHUNK
    t = time.perf_counter()
    ds = make_dataset(root, rows)
    print(f"input {rows} x {e2e.WIDTH} in {time.perf_counter() - t:.1f} s", flush=True)
    src, nbytes = ds / "v", rows * e2e.WIDTH * 4
    bands = sorted({0, e2e.CHUNK, 2 * e2e.CHUNK - 2, rows // 2 + 3, rows - 1} & set(range(rows)))
    conv = lambda v: ndi.correlate(v, e2e.W5, mode="reflect")  # noqa: E731
    gauss = lambda v: ndi.gaussian_filter(v, 2.0)  # noqa: E731
    run = e2e.distconv_run("run-conv5", root, src, [{"op": "correlate", "weights": e2e.W5.tolist()}])
    run["checked"] = e2e.check(root / "run-conv5.zarr", src, conv, bands)
    e2e.drop(root / "run-conv5.zarr")
    api = snippet("api-conv5", root, API.format(src=str(src), w=e2e.W5.tolist(), dst=str(root / "api-conv5.zarr")))
    api["checked"] = e2e.check(api["out"], src, conv, bands)
    e2e.drop(api["out"])
    xa = snippet("xarray-gaussian", root, XARRAY.format(src=str(ds), dst=str(root / "xarray-gaussian.zarr")))
    xa["checked"] = e2e.check(xa["out"] / "v", src, gauss, bands)
    e2e.drop(xa["out"])
    general = snippet("general-conv5", root, GENERAL.format(src=str(src), w=e2e.W5.tolist(),
                                                             dst=str(root / "general-conv5.zarr")))
    general["checked"] = e2e.check(general["out"], src, conv, bands)
    _remove_plain(general["out"], root)
    cupy_row = snippet("dask-cupy-conv5", root, DASK_CUPY.format(src=str(src), w=e2e.W5.tolist(),
                                                                 dst=str(root / "dask-cupy-conv5.zarr")))
    cupy_row["checked"] = e2e.check(cupy_row["out"], src, conv, bands)
    _remove_plain(cupy_row["out"], root)
    anchors = e2e.cpu_anchors(src, root, a.cpu_workers, a.cpu_threads)
    di = anchors["dask_image"]
    job_gbps = nbytes / run["seconds"] / 1e9
    from distconv.backends.devices import gpu_count

    gpus = gpu_count()
    cupy_gbps = nbytes / cupy_row["seconds"] / 1e9

    def row(case: str, layer: str, r: dict, **extra) -> dict:
        """A row of ``r``'s job (its seconds) and wall clock, against dask-image."""
        return {"case": case, "layer": layer, "gpus": gpus, "GBps": round(nbytes / r["seconds"] / 1e9, 2),
                "wall_GBps": round(nbytes / r["wall_s"] / 1e9, 2), "seconds": r["seconds"], "wall_s": r["wall_s"],
                "anchor": "dask-image correlate, CPU", "anchor_ms": round(di * 1e3),
                "speedup": round(di / r["seconds"], 2), **extra, "path": r.get("path"), "checked": bool(r["checked"])}

    rows_out = [row("e2e_zarr_conv5", "end to end", run, startup_s=run.get("startup_s"))]
    for case, r in (("api_zarr_conv5", api), ("xarray_zarr_gaussian", xa)):
        rows_out.append(row(case, "face", r, vs_run=round(nbytes / r["seconds"] / 1e9 / job_gbps, 2),
                            vs_run_wall=round(run["wall_s"] / r["wall_s"], 2), why=r["why"]))
    for case, r in (("general_zarr_conv5", general), ("dask_cupy_zarr_conv5", cupy_row)):
        rows_out.append(row(case, "face", r, vs_dask_cupy=round(nbytes / r["seconds"] / 1e9 / cupy_gbps, 2)))
    for r in rows_out:
        print(json.dumps(r), flush=True)
    Path(a.out).write_text(json.dumps({"bytes": nbytes, "rows": rows_out, "anchors_s": anchors}, indent=1))


def _remove_plain(out: Path, root: Path):
    """An output dask wrote, this benchmark's own folder directly under ``root``: the node's
    disk holds few 16 GiB outputs."""
    import shutil

    if out.is_dir() and out.parent == root:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
