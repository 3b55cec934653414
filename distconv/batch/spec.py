"""Workflow files: parse and check the whole YAML before anything runs.

A workflow names an input, a chain of steps and outputs.

The whole file is checked before anything runs (errors name the step and the key). Steps chain
lazily with no intermediate writes; the array result is written to Zarr aligned to storage
chunks, behind a completion marker written last. Two kinds:

* ``kind: array`` (default): input Zarr array, or an xarray dataset variable (then steps take
  dim names); optional histogram of the result (JSON + PNG) and a Markdown report.
* ``kind: bovw``: bag-of-visual-words over images (scikit-image's samples by default): dense
  8x8 patches as 64-D descriptors, k-means vocabulary, per-image histograms, image clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..graph import ownership, storage
from ..graph.location import is_url
from .steps import UnknownStep, step_function

TOP_KEYS = {"name", "kind", "input", "chunks", "steps", "outputs", "overwrite", "device", "report"}
INPUT_KEYS = {"path", "variable", "synthetic", "region", "images"}
OUTPUT_KEYS = {"path", "codec", "chunks", "histogram", "clusters"}
SYNTH_KEYS = {"shape", "chunks", "dtype", "seed", "dims"}
HIST_KEYS = {"bins", "range", "json", "png"}
BOVW_STEP_KEYS = {"patch", "n_clusters", "image_clusters", "seed"}
MARKER = ownership.COMPLETE


class WorkflowError(ValueError):
    """A workflow file (or its run) asks for something that cannot be done; says which key."""


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


def _resolve(base: Path, p: str) -> str:
    """A local path made absolute against ``base``; a URL (``s3://...``) as written."""
    return p if is_url(p) else str((base / p).resolve())


def _local(key: str, p: str | None):
    """Refuse a URL where distconv writes a plain local file (reports, histogram files)."""
    if p is not None and is_url(p):
        raise WorkflowError(f"{key} is written as a local file; got the URL {p!r}")


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
    _local("report", report)
    if kind == "bovw":
        _local("outputs.path", out["path"])
        checked = _check_bovw(inp, steps)
    else:
        checked = _check_array(inp, out, steps, base)
        written = {"outputs.path": out["path"], "report": report,
                   **{f"outputs.histogram.{k}": v for k, v in out.get("histogram", {}).items()
                      if k in ("json", "png")}}
        for key, path in written.items():
            if path is not None:
                try:
                    ownership.check_separate(path, {key: inp["path"]})
                except ownership.OutputError as e:
                    raise WorkflowError(str(e)) from None
    device = doc.get("device", "auto")
    if device not in ("auto", "cpu", "gpu"):
        raise WorkflowError(f"device must be auto, cpu or gpu, got {device!r}")
    wf = Workflow(name=doc.get("name", p.stem), kind=kind, source=p, input=inp, steps=checked,
                  outputs=out, chunks=doc.get("chunks", "auto"), overwrite=bool(doc.get("overwrite", False)),
                  device=device, report=report)
    if kind == "array":
        from .validate import check

        check(wf)
    return wf


def _check_array(inp, out, steps, base):
    if "path" not in inp:
        raise WorkflowError("input: missing key 'path'")
    inp["path"] = _resolve(base, inp["path"])
    if "synthetic" in inp:
        _keys("input.synthetic", inp["synthetic"], SYNTH_KEYS)
        for k in ("shape", "chunks"):
            if k not in inp["synthetic"]:
                raise WorkflowError(f"input.synthetic: missing key {k!r}")
    if out.get("codec", "zstd") not in storage.CODECS:
        raise WorkflowError(f"outputs.codec must be one of {storage.CODECS}, got {out['codec']!r}")
    if "histogram" in out:
        _keys("outputs.histogram", out["histogram"], HIST_KEYS)
        for k in ("json", "png"):
            if k in out["histogram"]:
                out["histogram"][k] = _resolve(base, out["histogram"][k])
                _local(f"outputs.histogram.{k}", out["histogram"][k])
    dims = "variable" in inp
    checked = []
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict) or "op" not in step:
            raise WorkflowError(f"step {i}: needs an 'op' key, got {step!r}")
        params = {k: v for k, v in step.items() if k != "op"}
        try:
            step_function(step["op"], dims)
        except UnknownStep as e:
            raise WorkflowError(f"step {i}: {e}") from None
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
