"""Batch workflows: a YAML file names an input, a chain of steps and outputs.

The whole file is checked before anything runs; errors name the step and the key. Steps chain
lazily (no intermediate writes); the result is written to Zarr aligned to storage chunks.
"""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import api, io

ARRAY_STEPS = ("correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter")
TOP_KEYS = {"name", "input", "chunks", "steps", "outputs", "overwrite", "device"}
INPUT_KEYS = {"path", "variable", "synthetic", "region"}
OUTPUT_KEYS = {"path", "codec", "chunks"}
SYNTH_KEYS = {"shape", "chunks", "dtype", "seed"}


class WorkflowError(ValueError):
    pass


@dataclass
class Workflow:
    name: str
    source: Path
    input: dict
    steps: list
    outputs: dict
    chunks: object = "auto"
    overwrite: bool = False
    device: str = "auto"
    extra: dict = field(default_factory=dict)


def _keys(section: str, got: dict, allowed: set):
    if not isinstance(got, dict):
        raise WorkflowError(f"{section} must be a mapping, got {got!r}")
    bad = sorted(set(got) - allowed)
    if bad:
        raise WorkflowError(f"{section}: unknown key {bad[0]!r}; allowed: {', '.join(sorted(allowed))}")


def step_function(op: str):
    if op not in ARRAY_STEPS:
        raise WorkflowError(f"unknown op {op!r}; allowed: {', '.join(ARRAY_STEPS)}")
    return getattr(api, op)


def load(path) -> Workflow:
    """Parse and check a workflow file (safe YAML); relative paths resolve against its folder."""
    p = Path(path)
    if not p.is_file():
        raise WorkflowError(f"workflow file {str(p)!r} does not exist")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise WorkflowError(f"workflow {str(p)!r} is not valid YAML: {e}") from None
    _keys("workflow", doc, TOP_KEYS)
    for key in ("input", "steps", "outputs"):
        if key not in doc:
            raise WorkflowError(f"workflow: missing key {key!r}")
    inp = dict(doc["input"])
    _keys("input", inp, INPUT_KEYS)
    if "path" not in inp:
        raise WorkflowError("input: missing key 'path'")
    if "synthetic" in inp:
        _keys("input.synthetic", inp["synthetic"], SYNTH_KEYS)
        for k in ("shape", "chunks"):
            if k not in inp["synthetic"]:
                raise WorkflowError(f"input.synthetic: missing key {k!r}")
    out = dict(doc["outputs"])
    _keys("outputs", out, OUTPUT_KEYS)
    if "path" not in out:
        raise WorkflowError("outputs: missing key 'path'")
    if out.get("codec", "zstd") not in io.CODECS:
        raise WorkflowError(f"outputs.codec must be one of {io.CODECS}, got {out['codec']!r}")
    base = p.resolve().parent.parent if p.resolve().parent.name == "workflows" else p.resolve().parent
    inp["path"] = str((base / inp["path"]).resolve())
    out["path"] = str((base / out["path"]).resolve())
    if inp["path"] == out["path"]:
        raise WorkflowError(f"outputs.path is the input path {inp['path']!r}; choose another")
    steps = doc["steps"]
    if not isinstance(steps, list) or not steps:
        raise WorkflowError("steps must be a non-empty list")
    checked = []
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict) or "op" not in step:
            raise WorkflowError(f"step {i}: needs an 'op' key, got {step!r}")
        params = {k: v for k, v in step.items() if k != "op"}
        fn = step_function(step["op"]) if step["op"] in ARRAY_STEPS else None
        if fn is None:
            raise WorkflowError(f"step {i}: unknown op {step['op']!r}; allowed: {', '.join(ARRAY_STEPS)}")
        try:
            inspect.signature(fn).bind(None, **params)
        except TypeError as e:
            raise WorkflowError(f"step {i} ({step['op']}): {e}") from None
        checked.append((step["op"], params))
    device = doc.get("device", "auto")
    if device not in ("auto", "cpu", "gpu"):
        raise WorkflowError(f"device must be auto, cpu or gpu, got {device!r}")
    return Workflow(name=doc.get("name", p.stem), source=p, input=inp, steps=checked, outputs=out,
                    chunks=doc.get("chunks", "auto"), overwrite=bool(doc.get("overwrite", False)),
                    device=device)


def run(wf: Workflow, client=None, overwrite: bool | None = None, progress: bool = True) -> dict:
    """Run a checked workflow on ``client`` (the current one if None); returns the summary."""
    import dask.array as da

    overwrite = wf.overwrite if overwrite is None else overwrite
    out_path = Path(wf.outputs["path"])
    if out_path.exists() and not overwrite:
        raise WorkflowError(f"output {str(out_path)!r} exists; pass --overwrite or set overwrite: true")
    t0 = time.perf_counter()
    if not Path(wf.input["path"]).exists():
        if "synthetic" not in wf.input:
            raise WorkflowError(f"input store {wf.input['path']!r} does not exist")
        s = wf.input["synthetic"]
        io.synthetic(wf.input["path"], s["shape"], s["chunks"], s.get("dtype", "float32"), s.get("seed", 0))
    arr = io.open_array(wf.input["path"], wf.input.get("variable"))
    storage = tuple(c[0] for c in arr.chunks)
    if wf.chunks == "auto":
        arr = io.compute_chunks(arr)
    elif wf.chunks is not None:
        arr = arr.rechunk(tuple(wf.chunks))
    if _use_gpu(wf, client):
        arr = io.to_device_blocks(arr)
    for op, params in wf.steps:
        arr = step_function(op)(arr, **params)
    job = io.store(arr, str(out_path), storage_chunks=wf.outputs.get("chunks", storage),
                   codec=wf.outputs.get("codec", "zstd"), overwrite=overwrite,
                   attrs={"distconv": {"workflow": wf.name, "steps": [[o, _jsonable(p)] for o, p in wf.steps]}})
    if client is not None:
        fut = client.compute(job)
        if progress:
            from distributed import progress as show

            show(fut)
            print()
        fut.result()
    else:
        da.compute(job)
    seconds = time.perf_counter() - t0
    nbytes = arr.nbytes
    summary = {"workflow": wf.name, "input": wf.input["path"], "output": str(out_path),
               "shape": list(arr.shape), "dtype": str(arr.dtype), "steps": [o for o, _ in wf.steps],
               "bytes_in": nbytes, "bytes_out": nbytes, "seconds": round(seconds, 3),
               "GBps": round(nbytes / seconds / 1e9, 3)}
    return summary


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


def _jsonable(params: dict) -> dict:
    return json.loads(json.dumps(params, default=str))


def format_summary(s: dict) -> str:
    return (f"{s['workflow']}: {' -> '.join(s['steps'])} on {tuple(s['shape'])} {s['dtype']}: "
            f"{s['bytes_in'] / 1e9:.3f} GB in, {s['bytes_out'] / 1e9:.3f} GB out, "
            f"{s['seconds']:.2f} s, {s['GBps']:.3f} GB/s -> {s['output']}")
