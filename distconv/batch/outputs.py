"""Workflow outputs beside the array: the histogram (JSON + PNG), and the plain files a
workflow writes (its histogram, its report and the report's plots), checked before any work:
each may replace only a file distconv wrote (engine/paths.py), and none lies in an input or an
output of the command, or is another of its files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.arrays import to_host
from ..engine import paths
from ..engine.location import is_url
from ..ops.histograms import histogram
from .workflow import WorkflowError


def histogram_output(data, spec, client):
    """The histogram of ``data`` (numpy semantics) written as the spec asks. Without a range it
    takes a first pass for the data's min and max; the summary says so (why_general), so the
    Python API's warning about that pass is not repeated here."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="histogram without range computes")
        try:
            hist, edges = histogram(data, bins=spec.get("bins", 256), range=spec.get("range"))
        except ValueError as e:  # no range, and the result holds inf or nothing but NaN: the user's to fix
            if spec.get("range") is not None:
                raise
            raise WorkflowError(f"outputs.histogram: {e} (in the workflow: outputs.histogram.range: "
                                "[lo, hi])") from None
    return write_histogram(to_host(hist.compute() if hasattr(hist, "compute") else hist), edges, spec)


def write_histogram(counts, edges, spec) -> dict:
    """JSON (counts, edges) and PNG where the spec names them, each with distconv's mark;
    returns those paths."""
    out = {"bins": len(edges) - 1, "counts": counts.tolist(), "edges": edges.tolist()}
    if "json" in spec:
        paths.write_json(spec["json"], out)
    if "png" in spec:
        from .report import histogram_png

        histogram_png(counts, edges, spec["png"])
    return {k: spec[k] for k in ("json", "png") if k in spec}


def jsonable(obj):
    return json.loads(json.dumps(obj, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)))


@dataclass(frozen=True)
class FileOutput:
    """A plain file a command writes: the key or option that names it, where, and its kind
    (json, png or markdown: how distconv's mark is read back, engine/paths.py)."""

    key: str
    path: str
    kind: str


def workflow_files(wf) -> list[FileOutput]:
    """The plain files ``wf`` writes: its histogram's JSON and PNG, its report and the plots
    written beside the report (batch/report.py's write_report names them so)."""
    files = [FileOutput(f"outputs.histogram.{k}", str(p), k)
             for k, p in (wf.outputs.get("histogram") or {}).items() if k in ("json", "png")]
    if wf.report:
        report = Path(wf.report)
        files += [FileOutput("report", str(report), "markdown"),
                  FileOutput("report (its before/after plot)", str(report.with_suffix(".thumbs.png")), "png"),
                  FileOutput("report (its timeline plot)", str(report.with_suffix(".timeline.png")), "png")]
    return files


def _reads(wf) -> list[tuple[str, str]]:
    """(label, path) of what ``wf`` reads: its workflow file, its input, its images."""
    out = [("the workflow file", str(wf.source))]
    if wf.input.get("path"):
        out.append(("the input", str(wf.input["path"])))
    out += [("the input image", str(p)) for p in wf.input.get("images") or [] if isinstance(p, (str, Path))]
    return out


def _local(path) -> bool:
    return path is not None and not is_url(str(path))


def file_problems(wf) -> list[str]:
    """Every problem of the plain files ``wf`` writes, before any work: each on its own
    (paths.file_problem: suffix, folder, a file distconv did not write there), then each
    against the workflow file and the workflow's output, and two of them at one path. A URL or
    a file in the input is spec.py's to report; a refused report's plots are not said again."""
    problems, seen, refused = [], {}, set()
    inp = wf.input.get("path")
    for f in workflow_files(wf):
        if is_url(f.path) or (_local(inp) and paths.clash("", f.path, str(inp), "") is not None):
            continue
        if f.key.startswith("report (") and "report" in refused:
            continue
        why = None
        for label, other in [("the workflow file", str(wf.source)), ("the output", str(wf.outputs["path"]))]:
            if why is None and _local(other):
                why = paths.clash(f"{f.key} {f.path!r}", f.path, other, label)
        why = why and why + "; choose a path outside it"
        why = why or paths.file_problem(f.key, f.path, f.kind)
        if why is None and paths.key(f.path) in seen:
            why = f"{f.key} {f.path!r} is also {seen[paths.key(f.path)]}; give each file its own path"
        seen.setdefault(paths.key(f.path), f.key)
        if why is not None:
            refused.add(f.key)
            problems.append(why)
    return problems


def clash_problems(workflows: list) -> list[str]:
    """The plain files of each of ``workflows`` against what the others read and write (their
    inputs, workflow files, outputs and files): one problem for each that is, holds or lies
    inside another's, before any work."""
    problems = []
    for i, wf in enumerate(workflows):
        for f in workflow_files(wf):
            for j, other in enumerate(workflows):
                if j == i:
                    continue
                named = [*_reads(other), ("the output", str(other.outputs["path"])),
                         *((g.key, g.path) for g in workflow_files(other) if j > i)]  # a pair of files: once
                for label, path in named:
                    why = paths.clash(f"{f.key} {f.path!r}", f.path, path, label) if _local(path) else None
                    if why is not None:
                        problems.append(f"workflow {wf.name!r}: {why} of workflow {other.name!r}; choose a path "
                                        "of its own")
                        break
    return problems


def command_file_problems(name: str, path: str, kind: str, workflows: list,
                          others: list[FileOutput] = ()) -> list[str]:
    """Why a file the command writes beside its workflows (``--json``'s summary; ``name``: the
    option) may not be written at ``path``: its own problem (paths.file_problem), or it is,
    holds or lies inside what a workflow reads or writes, or is one of ``others``."""
    for wf in workflows:
        named = [*_reads(wf), ("the output", str(wf.outputs["path"])), *((g.key, g.path) for g in workflow_files(wf))]
        for label, other in named:
            why = paths.clash(f"{name} {path!r}", path, other, label) if _local(other) else None
            if why is not None:
                return [f"{why} of workflow {wf.name!r}; choose a path of its own"]
    for f in others:
        if paths.key(f.path) == paths.key(path):
            return [f"{name} {path!r} is also {f.key}; give each file its own path"]
    why = paths.file_problem(name, path, kind)
    return [] if why is None else [why]
