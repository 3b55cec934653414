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

import os
from pathlib import Path

import yaml

from ..core.checks import did_you_mean
from ..engine import marks, ownership, paths, storage
from ..engine.location import is_url
from .synthetic import synthetic_dtype_problem
from .steps import UnknownStep, step_function
from .validate import check
from .workflow import REGION_EDGES, Workflow, WorkflowError, region_edges

TOP_KEYS = {"name", "kind", "input", "chunks", "steps", "outputs", "overwrite", "device", "report"}
INPUT_KEYS = {"path", "variable", "synthetic", "region", "region_edges", "images"}
OUTPUT_KEYS = {"path", "codec", "chunks", "histogram"}
SYNTH_KEYS = {"shape", "chunks", "dtype", "seed", "dims"}
HIST_KEYS = {"bins", "range", "json", "png"}
BOVW_STEP_KEYS = {"patch", "n_clusters", "image_clusters", "seed"}
MARKER = marks.COMPLETE


def _keys(section: str, got, allowed: set, problems: list) -> bool:
    """Note unknown keys of ``section``; False when it is not a mapping at all."""
    if not isinstance(got, dict):
        problems.append(f"{section} must be a mapping, got {got!r}")
        return False
    unknown = [f"{section}: unknown key {key!r}{did_you_mean(key, sorted(allowed))}"
               for key in sorted(set(got) - allowed, key=str)]
    if unknown:  # the allowed keys once, after the last unknown one
        unknown[-1] += f"; allowed: {', '.join(sorted(allowed))}"
    problems += unknown
    return True


def _resolve(base: Path, key: str, p, problems: list) -> str:
    """A local path made absolute against ``base`` (the workflow file's folder), ``~`` and
    ``~user`` expanded as a shell does; a URL (``s3://...``) as written."""
    if not isinstance(p, str) or not p:
        problems.append(f"{key} must be a path, got {p!r}")
        return str(p)
    if is_url(p):
        return p
    home = os.path.expanduser(p)
    if home.startswith("~"):  # a user with no home here: a folder named '~x' is never meant
        problems.append(f"{key} {p!r} starts with '~' but {p.split('/')[0]!r} names no user "
                        "with a home folder here")
    return str((base / home).resolve())


def _local(key: str, p: str | None, problems: list):
    """Refuse a URL where distconv writes a plain local file (reports, histogram files)."""
    if p is not None and is_url(p):
        problems.append(f"{key} is written as a local file; got the URL {p!r}")


def load(path) -> Workflow:
    """Parse and check a workflow file (safe YAML); relative paths resolve against the folder
    the file is in, as docker compose and dvc resolve theirs. Every problem found is reported
    in one WorkflowError, each naming its key."""
    p = Path(path)
    if not p.is_file():
        raise WorkflowError(f"workflow file {str(p)!r} does not exist")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise WorkflowError(f"workflow {str(p)!r} is not valid YAML: {e}") from None
    if doc is None:
        raise WorkflowError(f"workflow {str(p)!r} is empty; it needs input, steps and outputs")
    problems: list[str] = []
    if not _keys("workflow", doc, TOP_KEYS, problems):
        raise WorkflowError(problems[0])
    kind = doc.get("kind", "array")
    if kind not in ("array", "bovw"):
        problems.append(f"kind must be 'array' or 'bovw', got {kind!r}")
    missing = [k for k in ("input", "steps", "outputs") if k not in doc]
    problems += [f"workflow: missing key {k!r}" for k in missing]
    device = doc.get("device", "auto")
    if device not in ("auto", "cpu", "gpu"):
        problems.append(f"device must be auto, cpu or gpu, got {device!r}")
    if not isinstance(doc.get("overwrite", False), bool):
        problems.append(f"overwrite must be true or false, got {doc['overwrite']!r}")
    if missing:
        raise WorkflowError("; ".join(problems))
    base = Path(os.path.abspath(p)).parent
    inp = dict(doc["input"]) if isinstance(doc["input"], dict) else doc["input"]
    out = dict(doc["outputs"]) if isinstance(doc["outputs"], dict) else doc["outputs"]
    shaped = _keys("input", inp, INPUT_KEYS, problems) & _keys("outputs", out, OUTPUT_KEYS, problems)
    steps = doc["steps"]
    if not isinstance(steps, list) or not steps:
        problems.append("steps must be a non-empty list")
        steps = []
    if not shaped or "path" not in out:
        problems += [] if not shaped else ["outputs: missing key 'path'"]
        raise WorkflowError("; ".join(problems))
    out["path"] = _resolve(base, "outputs.path", out["path"], problems)
    report = _resolve(base, "report", doc["report"], problems) if doc.get("report") else None
    _local("report", report, problems)
    if kind == "bovw":
        _local("outputs.path", out["path"], problems)
        checked = _check_bovw(inp, steps, problems)
    else:
        checked, numbers = _check_array(inp, out, steps, base, problems)
        written = {"outputs.path": out["path"], "report": report,
                   **{f"outputs.histogram.{k}": v for k, v in (out.get("histogram") or {}).items()
                      if k in ("json", "png")}}
        for key, path in written.items():
            if path is not None and "path" in inp:
                try:
                    paths.check_separate(path, {key: inp["path"]})
                except ownership.OutputError as e:
                    problems.append(str(e))
    wf = Workflow(name=doc.get("name", p.stem), kind=kind, source=p, input=inp, steps=checked,
                  outputs=out, chunks=doc.get("chunks", "auto"), overwrite=doc.get("overwrite") is True,
                  device=device, report=report)
    synth = inp.get("synthetic") if "synthetic" in inp else {"shape": None, "chunks": None}
    undefined = not isinstance(synth, dict) or not {"shape", "chunks"} <= set(synth)  # said above
    if kind == "array" and "path" in inp and not undefined:
        problems += check(wf, numbers)
    if problems:
        raise WorkflowError("; ".join(problems))
    return wf


def _check_array(inp, out, steps, base, problems):
    if "path" not in inp:
        problems.append("input: missing key 'path'")
    else:
        said = len(problems)
        inp["path"] = _resolve(base, "input.path", inp["path"], problems)
        if len(problems) > said:  # its problem is said: nothing is opened there
            del inp["path"]
    if "synthetic" in inp and _keys("input.synthetic", inp["synthetic"], SYNTH_KEYS, problems):
        problems += [f"input.synthetic: missing key {k!r}" for k in ("shape", "chunks")
                     if k not in inp["synthetic"]]
        bad_dtype = synthetic_dtype_problem(inp["synthetic"].get("dtype", "float32"))
        problems += [bad_dtype] if bad_dtype else []
    if region_edges(inp) not in REGION_EDGES:
        problems.append(f"input.region_edges must be 'mode' (the region is cut before the steps) or "
                        f"'data' (cut from the whole array's result), got {inp['region_edges']!r}")
    if out.get("codec", "zstd") not in storage.CODECS:
        problems.append(f"outputs.codec must be one of {', '.join(storage.CODECS)}, got {out['codec']!r}")
    if "histogram" in out and _keys("outputs.histogram", out["histogram"], HIST_KEYS, problems):
        for k in ("json", "png"):
            if k in out["histogram"]:
                out["histogram"][k] = _resolve(base, f"outputs.histogram.{k}", out["histogram"][k], problems)
                _local(f"outputs.histogram.{k}", out["histogram"][k], problems)
    dims = "variable" in inp
    checked, numbers = [], []  # the steps that name a known op, and their places in the file
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict) or "op" not in step:
            problems.append(f"step {i}: needs an 'op' key, got {step!r}")
            continue
        params = {k: v for k, v in step.items() if k != "op"}
        try:
            step_function(step["op"], dims)
        except UnknownStep as e:
            problems.append(f"step {i}: {e}")
            continue
        checked.append((step["op"], params))
        numbers.append(i)
    return checked, numbers


def _check_bovw(inp, steps, problems):
    images = inp.get("images", ["camera", "coins", "moon", "text", "page", "horse", "astronaut",
                                "coffee", "chelsea", "rocket"])
    if not isinstance(images, list) or not images:
        problems.append("input.images must be a non-empty list of scikit-image sample names")
        images = []
    import skimage.data

    for name in images:
        if not callable(getattr(skimage.data, str(name), None)):
            problems.append(f"input.images: {name!r} is not a scikit-image sample image")
    inp["images"] = images
    if len(steps) != 1 or not isinstance(steps[0], dict) or steps[0].get("op") != "bovw":
        problems.append("steps of a bovw workflow: exactly one step with op: bovw")
        return []
    params = {k: v for k, v in steps[0].items() if k != "op"}
    _keys("step 1 (bovw)", params, BOVW_STEP_KEYS, problems)
    return [("bovw", params)]
