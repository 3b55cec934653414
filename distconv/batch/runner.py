"""Running a checked workflow, one pipeline for both paths: its plan (plans.py: the engine's
job, else the general dask graph), then the output claimed, a dataset's frame written, the
blocks computed (each written once, behind a completion marker), the summary."""

from __future__ import annotations

import time

from .. import engine
from ..backends.devices import cluster_workers
from ..engine import fencing, marks, ownership, storage
from ..engine.location import Location, join
from . import identity, plans
from .inputs import array_attrs, array_dims, dataset_attrs, ensure_input, whole_input
from .outputs import jsonable
from .report import dtypes
from .workflow import Workflow, WorkflowError


def preflight(wf: Workflow, overwrite: bool | None = None, resume: bool = False,
              job: dict | None = None) -> str:
    """Check the output path may be written (before a cluster starts or a byte is written);
    returns what the run does with it (ownership.decide: new, resume, done, replace)."""
    overwrite = wf.overwrite if overwrite is None else overwrite
    if job is None and wf.kind == "array":
        job = identity.output_identity(wf)
    problems, action = [], None
    try:
        action = ownership.decide(wf.outputs["path"], overwrite, resume, job=job)
    except marks.OutputError as e:
        problems.append(str(e))
    for read in (engine.io_slots, engine.device_blocks, engine.batch_bytes, engine.held_bytes, engine.prewarm_enabled):
        try:
            read()
        except ValueError as e:
            problems.append(str(e))
    if problems:
        raise WorkflowError("; ".join(problems))
    return action


def done_summary(wf: Workflow) -> dict:
    """The summary of a --resume that finds the output finished by this same job."""
    return {"workflow": wf.name, "output": str(wf.outputs["path"]), "path": None,
            "text": "already complete (the same steps and input): nothing to do"}


def run(wf: Workflow, client=None, overwrite: bool | None = None, progress: bool = True,
        resume: bool = False, job: dict | None = None, startup: dict | None = None) -> dict:
    """Run a checked workflow on ``client`` (or the local scheduler); returns the summary.
    ``job``: identity.output_identity(wf), when the caller has it from its own check; ``startup``: the
    command's start-up before the run, for the dashboard's page ({"started": when the command
    started, then each phase: when it ended; epoch seconds})."""
    overwrite = wf.overwrite if overwrite is None else overwrite
    out_path = wf.outputs["path"]
    if wf.kind == "bovw":
        preflight(wf, overwrite, resume, job={})
        from .bovw import run_bovw

        return {**run_bovw(wf, client, overwrite), "steps": [o for o, _ in wf.steps],
                "step_arguments": [jsonable(p) for _, p in wf.steps]}
    job = identity.output_identity(wf) if job is None else job
    action = preflight(wf, overwrite, resume, job)
    if action == "done":
        return done_summary(wf)
    # from here on the flags say what check_target decided
    resume, overwrite = action == "resume", action == "replace"
    t0 = time.perf_counter()
    # the job on the dashboard's page from now (its check and start-up before the first block)
    shown = engine.Progress(label=f"distconv: {wf.name}", show=progress,
                            about={"workflow": wf.name, "input": _input_name(wf), "output": str(out_path)})
    startup = dict(startup or {})
    shown.begin(client, startup.pop("started", None))
    for name, at in startup.items():
        shown.phase(name, at)
    gpu = _use_gpu(wf, client)
    synthetic_seconds = ensure_input(wf, client, progress)
    t0 += synthetic_seconds  # writing a synthetic input is not the run's: its own field
    if job["input"]["stamp"] is None:  # a synthetic input, written just now
        job = identity.output_identity(wf)
    shown.phase("input")
    # one pipeline: the engine's plan where it takes the workflow, else the general one, then
    # the same claim, dataset frame, compute, finish and summary
    plan = plans.choose(wf, gpu)
    _memory_check(plan, client)
    shown.phase("plan")
    claim = ownership.claim(str(out_path), overwrite, resume, job=job)
    try:
        with fencing.stopped_on_failure(claim):
            # an array keeps its input's dims and the attributes that describe its data
            array_path, attrs, dims = plan.array_path, {**jsonable(array_attrs(wf)), **_attrs(wf)}, array_dims(wf)
            if plan.frame is not None:  # a dataset in, a dataset out: xr.open_zarr(output) gives it back
                array_path, attrs, dims = _dataset_frame(wf, plan.frame, claim.resuming)
            plan.count(array_path, claim)
            shown.phase("claim")

            def write():
                return engine.write(plan.engine, array_path, claim, client, attrs, dims, plan.codec,
                                    plan.storage_chunks, shown)

            step_seconds, results, stream, started = _compute(write, client, shown)
            _finish(wf, plan.frame is not None, claim)
    except marks.Superseded as e:  # another run claimed the output meanwhile
        raise WorkflowError(str(e)) from None
    hist = plan.histogram(results, client)  # counted in the job's time
    summary = _summary(wf, client, t0, plan.shape, plan.dtype, plan.bytes_in, plan.bytes_out, plan.skipped,
                       step_seconds, plan.says(results))
    if synthetic_seconds:
        summary["synthetic_input_seconds"] = round(synthetic_seconds, 3)
    if progress:
        summary["progress"] = shown.summary()  # (seconds, bytes) as the blocks finished
    summary["arrays"] = {"input": _array_facts(wf.input["path"], wf.input.get("variable")),
                         "output": _array_facts(array_path)}
    summary["timeline"] = _timeline(plan, results, stream, started, client)
    if shown.page is not None:
        summary["dashboard"] = shown.page  # the job on the scheduler's distconv page
    return _with_files(summary, wf, hist, plan, array_path)


def _memory_check(plan, client):
    """A workers' memory_limit that cannot hold the job's blocks refused before the output is
    claimed (distributed would restart the workers without end)."""
    from .memory import memory_problem

    if client is not None and getattr(plan, "job", None) is not None:
        why = memory_problem(plan.job, cluster_workers(client))
        if why:
            raise WorkflowError(why)


def _array_facts(path: str, variable: str | None = None) -> dict:
    """The stored array at ``path`` (a dataset's ``variable`` in it): path, shape, dtype, chunks
    and shards as its metadata says (what the report lists)."""
    import zarr

    facts = {"path": str(path)} | ({"variable": variable} if variable else {})
    try:
        z = zarr.open_array(join(str(path), variable) if variable else str(path), mode="r")
        facts |= {"shape": list(z.shape), "dtype": str(z.dtype), "chunks": list(z.chunks),
                  "shards": list(z.shards) if z.shards else None}
    except Exception:  # noqa: BLE001 - what the metadata says is extra: the run is done
        pass
    return facts


def _timeline(plan, results, stream: list, started: float, client) -> list | None:
    """When the job's blocks ran, in seconds since it was submitted (``started``, epoch):
    [[worker, start, end, bytes], ...] by start. The engine's blocks time themselves
    (engine.job.timeline: one entry per block). Dask's general path runs a block as several
    tasks (reading, each step, its chunk-aligned write): its entries are every task of the job
    from the cluster's task stream, bytes on the writes (distconv-store), so it has none
    without a cluster (None)."""
    import math

    from dask.utils import key_split

    if plan.engine.job is not None:
        from ..engine.job import timeline as engine_timeline

        return engine_timeline(plan.engine.job, results[0], started)
    if client is None:
        return None
    names = {a: str(w.get("name", a)) for a, w in cluster_workers(client).items()}
    chunks = storage.write_chunks(plan.data, plan.storage_chunks)
    out = []
    for task in stream:
        key, nbytes = task["key"], 0
        if key_split(key) == "distconv-store" and isinstance(key, tuple):
            nbytes = int(math.prod(c[i] for c, i in zip(chunks, key[1:]))) * plan.data.dtype.itemsize
        worker = names.get(task.get("worker"), str(task.get("worker")))
        out += [[worker, round(s["start"] - started, 6), round(s["stop"] - started, 6), nbytes]
                for s in task.get("startstops", ()) if s["action"] == "compute"]
    return sorted(out, key=lambda e: e[1])


def _attrs(wf: Workflow) -> dict:
    """What an output's attributes say of the workflow that wrote it."""
    return {"distconv": {"workflow": wf.name, "steps": [[o, jsonable(p)] for o, p in wf.steps]}}


def _dataset_frame(wf: Workflow, result, resuming: bool):
    """A dataset output's group, its coordinates and attributes (the input dataset's and the
    workflow's) written unless a resumed run finds them: (the variable's array path, its
    attributes, its dims)."""
    out_path = str(wf.outputs["path"])
    name = storage.dataset_array_name(result)
    if not (resuming and Location(out_path).child("zarr.json").exists()):
        marks.record_entries(out_path, [name, *map(str, result.coords)])
        storage.write_dataset_frame(out_path, result, {**jsonable(dataset_attrs(wf)), **_attrs(wf)})
    return (join(out_path, name), {k: jsonable(v) for k, v in result.attrs.items()},
            list(map(str, result.dims)))


def _finish(wf: Workflow, dataset: bool, claim: marks.Claim):
    """A dataset's metadata consolidated, then the completion mark."""
    if dataset:
        storage.consolidate(str(wf.outputs["path"]))
    marks.mark_complete(str(wf.outputs["path"]), {"workflow": wf.name}, claim)


def _summary(wf: Workflow, client, t0: float, shape, dtype, bytes_in: int, bytes_out: int, resumed: int,
             step_seconds: dict, extra: dict) -> dict:
    """The run summary: what was read and written by this run (``resumed``: bytes an
    interrupted run had written), how fast, where the time went."""
    import numpy as np

    seconds = time.perf_counter() - t0
    summary = {"workflow": wf.name, "input": wf.input["path"], "output": str(wf.outputs["path"]),
               # "dtype" is the output's (the steps may change it), "input_dtype" what they read
               "shape": list(shape), "dtype": str(np.dtype(dtype)),
               "input_dtype": str(np.dtype(whole_input(wf).dtype)), "steps": [o for o, _ in wf.steps],
               "step_arguments": [jsonable(p) for _, p in wf.steps],
               "bytes_in": bytes_in, "bytes_out": bytes_out, "seconds": round(seconds, 3),
               "GBps": round(bytes_in / seconds / 1e9, 3), "gpu_memory_peak": _gpu_peak(client),
               "step_seconds": step_seconds, **extra,
               "first_task_at": step_seconds.pop("first_task_at", None),
               "submitted_at": step_seconds.pop("submitted_at", None)}
    if resumed:
        summary["resumed_bytes"] = resumed  # written by the interrupted run, not by this one
    return summary


def _with_files(summary: dict, wf: Workflow, hist, plan, array_path: str) -> dict:
    """The histogram files and the report (its thumbnails read ``plan``'s input), named in the
    summary."""
    if hist is not None:
        summary["histogram"] = hist
    if wf.report:
        from .report import write_report

        summary["report"] = write_report(wf, summary, plan.source, array_path)
    return summary


def _compute(write, client, shown) -> tuple[dict, object, list, float]:
    """Run ``write()`` (engine.write: stopped on the cluster when interrupted or failed);
    returns busy seconds per task prefix of the job's own tasks (``shown``, its engine.Progress,
    knows their keys; as the dashboard names them: gaussian-median-kqb, merge_gaussian-median-kqb,
    distconv-store, ...) when on a cluster, the computed results, the cluster's task stream of
    the job's own tasks (another job's at the same time are not this one's: none without a
    cluster) and when it was submitted (epoch seconds)."""
    if client is None:
        submitted = time.time()
        return {}, write(), [], submitted
    from dask.utils import key_split
    from distributed import get_task_stream

    with get_task_stream(client) as ts:
        submitted = time.time()
        results = write()
    own = shown.keys()
    stream = [task for task in ts.data if _key(task["key"]) in own]
    busy: dict = {}
    starts = [s["start"] for task in stream for s in task.get("startstops", ()) if s["action"] == "compute"]
    for task in stream:
        prefix = key_split(task["key"])
        if prefix == "finalize":
            continue  # dask's own gathering of the results, not a step
        for s in task.get("startstops", ()):
            if s["action"] == "compute":
                busy[prefix] = busy.get(prefix, 0.0) + s["stop"] - s["start"]
    out = {k: round(v, 3) for k, v in sorted(busy.items(), key=lambda kv: -kv[1])}
    if starts:
        out["first_task_at"] = min(starts)  # epoch seconds: start-up is measured against it
        out["submitted_at"] = submitted
    return out, results, stream, submitted


def _key(key):
    """A task stream's key as the graph has it (a tuple key may arrive as a list)."""
    return tuple(key) if isinstance(key, list) else key


def _input_name(wf: Workflow) -> str:
    """The workflow's input as the page names it (a dataset's variable in it)."""
    path, variable = str(wf.input.get("path")), wf.input.get("variable")
    return f"{path} ({variable})" if variable else path


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

    try:
        got = client.run(peak, on_error="ignore")
    except OSError:  # a worker lost after the job finished (CommClosedError): the output is written
        return None
    vals = [v for v in got.values() if isinstance(v, int)]
    return max(vals) if vals else None


def _use_gpu(wf: Workflow, client) -> bool:
    """GPU blocks when every worker (or this process, without a client) has a GPU and cupy."""
    if wf.device == "cpu":
        return False
    gpus = engine.chain.gpu_blocks(client)
    if wf.device == "gpu" and not gpus:
        raise WorkflowError("device: gpu asked for, but the workers have no GPU with cupy and dask-cuda")
    return gpus


def format_summary(s: dict) -> str:
    """The run summary as printed: one line, then the histogram and report files, the path
    taken (and why the general one), busy seconds per step and seconds per I/O stage."""
    peak = "" if s.get("gpu_memory_peak") is None else f", GPU memory peak {s['gpu_memory_peak'] / 2**30:.2f} GiB"
    start = "" if s.get("startup_s") is None else f", first task {s['startup_s']:.1f} s after start"
    if "shape" not in s:
        return f"{s['workflow']}: {s.get('text', '')} -> {s['output']}"
    extra = "".join(f"\n  {k}: {v}" for k, v in (s.get("histogram") or {}).items())
    extra += f"\n  report: {s['report']}" if s.get("report") else ""
    extra += (f"\n  resumed: {s['resumed_bytes'] / 1e9:.3f} GB were written by the interrupted run"
              if s.get("resumed_bytes") else "")
    extra += (f"\n  synthetic input written first: {s['synthetic_input_seconds']:.2f} s (not counted in the run's time)"
              if s.get("synthetic_input_seconds") else "")
    why = f" ({s['why_general']})" if s.get("why_general") else ""
    why += f" ({s['why_reader']})" if s.get("why_reader") else ""
    extra += f"\n  path: {s['path']}{why}" if s.get("path") else ""
    extra += "".join(f"\n  {k}: {v:.3f} s busy" for k, v in (s.get("step_seconds") or {}).items())
    stages = s.get("stage_seconds") or {}
    if stages:
        extra += "\n  stages (s, summed over blocks): " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
    return (f"{s['workflow']}: {' -> '.join(s['steps'])} on {tuple(s['shape'])} {dtypes(s)}: "
            f"{s['bytes_in'] / 1e9:.3f} GB in, {s['bytes_out'] / 1e9:.3f} GB out, "
            f"{s['seconds']:.2f} s, {s['GBps']:.3f} GB/s{peak}{start} -> {s['output']}{extra}")
