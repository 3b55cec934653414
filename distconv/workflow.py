"""Batch workflows: a YAML file names an input, a chain of steps and outputs.

The whole file is checked before anything runs (errors name the step and the key). Steps chain
lazily with no intermediate writes; the array result is written to Zarr aligned to storage
chunks, behind a completion marker written last. Two kinds:

* ``kind: array`` (default): input Zarr array, or an xarray dataset variable (then steps take
  dim names); optional histogram of the result (JSON + PNG) and a Markdown report.
* ``kind: bovw``: bag-of-visual-words over images (scikit-image's samples by default): dense
  8x8 patches as 64-D descriptors, k-means vocabulary, per-image histograms, image clusters.
"""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from . import io, outputs

ARRAY_OPS = ("correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter", "derivative",
             "laplace", "scan", "cumsum", "cumprod", "cummin", "cummax")
TOP_KEYS = {"name", "kind", "input", "chunks", "steps", "outputs", "overwrite", "device", "report"}
INPUT_KEYS = {"path", "variable", "synthetic", "region", "images"}
OUTPUT_KEYS = {"path", "codec", "chunks", "histogram", "clusters"}
SYNTH_KEYS = {"shape", "chunks", "dtype", "seed", "dims"}
HIST_KEYS = {"bins", "range", "json", "png"}
BOVW_STEP_KEYS = {"patch", "n_clusters", "image_clusters", "seed"}
MARKER = outputs.COMPLETE


class WorkflowError(ValueError):
    pass


@dataclass
class Workflow:
    name: str
    kind: str
    source: Path
    input: dict
    steps: list
    outputs: dict
    chunks: object = "auto"
    overwrite: bool = False
    device: str = "auto"
    report: str | None = None


def _keys(section: str, got, allowed: set):
    if not isinstance(got, dict):
        raise WorkflowError(f"{section} must be a mapping, got {got!r}")
    bad = sorted(set(got) - allowed)
    if bad:
        raise WorkflowError(f"{section}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(allowed))}")


def step_function(op: str, dims: bool):
    """The callable for a step: the public function (arrays) or the accessor method (dims)."""
    from . import api, numpy_names, stencil

    if op not in ARRAY_OPS:
        raise WorkflowError(f"unknown op {op!r}; allowed: {', '.join(ARRAY_OPS)}")
    if dims:
        from .xarray import DataArrayAccessor

        return getattr(DataArrayAccessor, op)
    for mod in (api, stencil, numpy_names):
        if hasattr(mod, op):
            return getattr(mod, op)
    raise WorkflowError(f"unknown op {op!r}")


def _resolve(base: Path, p: str) -> str:
    return str((base / p).resolve())


def load(path) -> Workflow:
    """Parse and check a workflow file (safe YAML); relative paths resolve against the project
    folder (the parent of workflows/) or the file's own folder."""
    p = Path(path)
    if not p.is_file():
        raise WorkflowError(f"workflow file {str(p)!r} does not exist")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise WorkflowError(f"workflow {str(p)!r} is not valid YAML: {e}") from None
    _keys("workflow", doc, TOP_KEYS)
    kind = doc.get("kind", "array")
    if kind not in ("array", "bovw"):
        raise WorkflowError(f"kind must be 'array' or 'bovw', got {kind!r}")
    for key in ("input", "steps", "outputs"):
        if key not in doc:
            raise WorkflowError(f"workflow: missing key {key!r}")
    base = p.resolve().parent.parent if p.resolve().parent.name == "workflows" else p.resolve().parent
    inp, out = dict(doc["input"]), dict(doc["outputs"])
    _keys("input", inp, INPUT_KEYS)
    _keys("outputs", out, OUTPUT_KEYS)
    if "path" not in out:
        raise WorkflowError("outputs: missing key 'path'")
    out["path"] = _resolve(base, out["path"])
    steps = doc["steps"]
    if not isinstance(steps, list) or not steps:
        raise WorkflowError("steps must be a non-empty list")
    report = _resolve(base, doc["report"]) if doc.get("report") else None
    if kind == "bovw":
        checked = _check_bovw(inp, steps)
    else:
        checked = _check_array(inp, out, steps, base)
        written = {"outputs.path": out["path"], "report": report,
                   **{f"outputs.histogram.{k}": v for k, v in out.get("histogram", {}).items()
                      if k in ("json", "png")}}
        for key, path in written.items():
            if path is not None:
                try:
                    outputs.check_separate(path, {key: inp["path"]})
                except outputs.OutputError as e:
                    raise WorkflowError(str(e)) from None
    device = doc.get("device", "auto")
    if device not in ("auto", "cpu", "gpu"):
        raise WorkflowError(f"device must be auto, cpu or gpu, got {device!r}")
    return Workflow(name=doc.get("name", p.stem), kind=kind, source=p, input=inp, steps=checked,
                    outputs=out, chunks=doc.get("chunks", "auto"), overwrite=bool(doc.get("overwrite", False)),
                    device=device, report=report)


def _check_array(inp, out, steps, base):
    if "path" not in inp:
        raise WorkflowError("input: missing key 'path'")
    inp["path"] = _resolve(base, inp["path"])
    if "synthetic" in inp:
        _keys("input.synthetic", inp["synthetic"], SYNTH_KEYS)
        for k in ("shape", "chunks"):
            if k not in inp["synthetic"]:
                raise WorkflowError(f"input.synthetic: missing key {k!r}")
    if out.get("codec", "zstd") not in io.CODECS:
        raise WorkflowError(f"outputs.codec must be one of {io.CODECS}, got {out['codec']!r}")
    if "histogram" in out:
        _keys("outputs.histogram", out["histogram"], HIST_KEYS)
        for k in ("json", "png"):
            if k in out["histogram"]:
                out["histogram"][k] = _resolve(base, out["histogram"][k])
    dims = "variable" in inp
    checked = []
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict) or "op" not in step:
            raise WorkflowError(f"step {i}: needs an 'op' key, got {step!r}")
        params = {k: v for k, v in step.items() if k != "op"}
        try:
            fn = step_function(step["op"], dims)
            inspect.signature(fn).bind(None, **params)
        except WorkflowError as e:
            raise WorkflowError(f"step {i}: {e}") from None
        except TypeError as e:
            raise WorkflowError(f"step {i} ({step['op']}): {e}") from None
        checked.append((step["op"], params))
    return checked


def _check_bovw(inp, steps):
    images = inp.get("images", ["camera", "coins", "moon", "text", "page", "horse", "astronaut",
                                "coffee", "chelsea", "rocket"])
    if not isinstance(images, list) or not images:
        raise WorkflowError("input.images must be a non-empty list of scikit-image sample names")
    import skimage.data

    for name in images:
        if not callable(getattr(skimage.data, str(name), None)):
            raise WorkflowError(f"input.images: {name!r} is not a scikit-image sample image")
    inp["images"] = images
    if len(steps) != 1 or not isinstance(steps[0], dict) or steps[0].get("op") != "bovw":
        raise WorkflowError("steps of a bovw workflow: exactly one step with op: bovw")
    params = {k: v for k, v in steps[0].items() if k != "op"}
    _keys("step 1 (bovw)", params, BOVW_STEP_KEYS)
    return [("bovw", params)]


# ----------------------------------------------------------------------------------- running

def preflight(wf: Workflow, overwrite: bool | None = None, resume: bool = False):
    """Check the output path may be written (before a cluster starts or a byte is written)."""
    overwrite = wf.overwrite if overwrite is None else overwrite
    try:
        outputs.check_target(wf.outputs["path"], overwrite, resume)
    except outputs.OutputError as e:
        raise WorkflowError(str(e)) from None


def run(wf: Workflow, client=None, overwrite: bool | None = None, progress: bool = True,
        resume: bool = False) -> dict:
    """Run a checked workflow on ``client`` (or the local scheduler); returns the summary."""
    overwrite = wf.overwrite if overwrite is None else overwrite
    preflight(wf, overwrite, resume)
    out_path = Path(wf.outputs["path"])
    if wf.kind == "bovw":
        from .workflow_bovw import run_bovw

        return run_bovw(wf, client, overwrite)
    t0 = time.perf_counter()
    arr, src = _open_input(wf, client)
    for op, params in wf.steps:
        if hasattr(arr, "dims"):
            arr = getattr(arr.distconv, op)(**params)
        else:
            arr = step_function(op, False)(arr, **params)
    data = arr.data if hasattr(arr, "dims") else arr
    attrs = {"distconv": {"workflow": wf.name, "steps": [[o, _jsonable(p)] for o, p in wf.steps]}}
    if hasattr(arr, "dims"):
        attrs.update({"dims": list(arr.dims), **{k: _jsonable(v) for k, v in arr.attrs.items()}})
    storage = wf.outputs.get("chunks") or src["storage"]
    job = io.store(data, str(out_path), storage_chunks=storage, codec=wf.outputs.get("codec", "zstd"),
                   overwrite=overwrite and not resume, attrs=attrs, resume=resume)
    step_seconds = _compute(job, client, progress)
    io.finish(str(out_path))
    outputs.mark_complete(str(out_path), {"workflow": wf.name})
    seconds = time.perf_counter() - t0
    summary = {"workflow": wf.name, "input": wf.input["path"], "output": str(out_path),
               "shape": list(data.shape), "dtype": str(data.dtype), "steps": [o for o, _ in wf.steps],
               "bytes_in": src["nbytes"], "bytes_out": data.nbytes, "seconds": round(seconds, 3),
               "GBps": round(src["nbytes"] / seconds / 1e9, 3), "gpu_memory_peak": _gpu_peak(client),
               "step_seconds": step_seconds}
    if "histogram" in wf.outputs:
        summary["histogram"] = _histogram_output(data, wf.outputs["histogram"], client)
    if wf.report:
        from .report import write_report

        summary["report"] = write_report(wf, summary, src["array"], str(out_path))
    return summary


def _open_input(wf: Workflow, client):
    inp = wf.input
    if not Path(inp["path"]).exists():
        if "synthetic" not in inp:
            raise WorkflowError(f"input store {inp['path']!r} does not exist")
        s = inp["synthetic"]
        if "variable" in inp:
            io.synthetic_dataset(inp["path"], inp["variable"], s["shape"], s["chunks"], s.get("dims"),
                                 s.get("dtype", "float32"), s.get("seed", 0))
        else:
            io.synthetic(inp["path"], s["shape"], s["chunks"], s.get("dtype", "float32"), s.get("seed", 0))
    gpu = _use_gpu(wf, client)
    if "variable" in inp:
        import xarray as xr

        ds = xr.open_zarr(inp["path"], consolidated=False)
        if inp["variable"] not in ds.data_vars:
            raise WorkflowError(f"input variable {inp['variable']!r} is not in {inp['path']!r}")
        arr = ds[inp["variable"]]
        if inp.get("region"):
            arr = arr.isel({k: slice(*v) for k, v in inp["region"].items()})
        storage = tuple(c[0] for c in arr.data.chunks)
        data = _plan(arr.data, wf.chunks, gpu)
        if gpu:
            data = io.to_device_blocks(data)
        arr = arr.copy(data=data)
        return arr, {"storage": storage, "nbytes": arr.nbytes, "array": arr}
    arr = io.open_array(inp["path"])
    if inp.get("region"):
        region = inp["region"]
        try:
            arr = arr[tuple(slice(*region.get(a, region.get(str(a), [None]))) for a in range(arr.ndim))]
        except (TypeError, ValueError) as e:
            raise WorkflowError(f"input.region {region!r} is not valid: {e}") from None
        if arr.size == 0:
            raise WorkflowError(f"input.region {region!r} selects nothing")
    storage = tuple(c[0] for c in arr.chunks)
    arr = _plan(arr, wf.chunks, gpu)
    if gpu:
        arr = io.to_device_blocks(arr)
    return arr, {"storage": storage, "nbytes": arr.nbytes, "array": arr}


def _plan(arr, chunks, gpu: bool):
    if chunks == "auto":
        return io.compute_chunks(arr, io.GPU_CHUNK_BYTES if gpu else io.CPU_CHUNK_BYTES)
    if chunks is not None:
        return arr.rechunk(tuple(chunks))
    return arr


def _compute(job, client, progress) -> dict:
    """Run the job; returns busy seconds per task prefix (the steps, as the dashboard names
    them: distconv-gaussian, distconv-correlate, distconv-store, ...) when on a cluster."""
    if client is None:
        import dask

        dask.compute(job)
        return {}
    from dask.utils import key_split
    from distributed import get_task_stream

    with get_task_stream(client) as ts:
        fut = client.compute(job)
        if progress:
            from distributed import progress as show

            show(fut)
            print()
        fut.result()
    busy: dict = {}
    for task in ts.data:
        prefix = key_split(task["key"])
        for s in task.get("startstops", ()):
            if s["action"] == "compute":
                busy[prefix] = busy.get(prefix, 0.0) + s["stop"] - s["start"]
    return {k: round(v, 3) for k, v in sorted(busy.items(), key=lambda kv: -kv[1])}


def _histogram_output(data, spec, client):
    from .histograms import histogram

    hist, edges = histogram(data, bins=spec.get("bins", 256), range=spec.get("range"))
    from .chunk import to_host

    counts = to_host(hist.compute() if hasattr(hist, "compute") else hist)
    out = {"bins": len(edges) - 1, "counts": counts.tolist(), "edges": edges.tolist()}
    if "json" in spec:
        Path(spec["json"]).parent.mkdir(parents=True, exist_ok=True)
        Path(spec["json"]).write_text(json.dumps(out))
    if "png" in spec:
        from .report import histogram_png

        histogram_png(counts, edges, spec["png"])
    return {k: spec[k] for k in ("json", "png") if k in spec}


def _gpu_peak(client):
    """Largest cupy memory-pool footprint over the workers (bytes), None without GPUs."""
    if client is None:
        return None

    def peak():
        try:
            import cupy

            return int(cupy.get_default_memory_pool().total_bytes())
        except Exception:  # noqa: BLE001 - no cupy or no GPU on this worker
            return None

    vals = [v for v in client.run(peak).values() if v is not None]
    return max(vals) if vals else None


def _use_gpu(wf: Workflow, client) -> bool:
    """GPU blocks when every worker (or this process, without a client) has a GPU and cupy."""
    if wf.device == "cpu":
        return False
    from .cluster import gpu_count, gpu_stack_available

    def probe():
        return bool(gpu_count()) and gpu_stack_available()

    gpus = all(client.run(probe).values()) if client is not None else probe()
    if wf.device == "gpu" and not gpus:
        raise WorkflowError("device: gpu asked for, but the workers have no GPU with cupy and dask-cuda")
    return gpus


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)))


def format_summary(s: dict) -> str:
    peak = "" if s.get("gpu_memory_peak") is None else f", GPU memory peak {s['gpu_memory_peak'] / 2**30:.2f} GiB"
    steps = "".join(f"\n  {k}: {v:.3f} s busy" for k, v in (s.get("step_seconds") or {}).items())
    if "shape" not in s:
        return f"{s['workflow']}: {s.get('text', '')} -> {s['output']}"
    return (f"{s['workflow']}: {' -> '.join(s['steps'])} on {tuple(s['shape'])} {s['dtype']}: "
            f"{s['bytes_in'] / 1e9:.3f} GB in, {s['bytes_out'] / 1e9:.3f} GB out, "
            f"{s['seconds']:.2f} s, {s['GBps']:.3f} GB/s{peak} -> {s['output']}{steps}")
