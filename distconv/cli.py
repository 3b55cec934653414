"""The ``distconv`` command: info, run, bench. A problem with the user's input prints one line
and exits 2 (all problems of the workflow and cluster files at once, before any work); an
internal failure says so with its traceback and exits 1; Ctrl-C prints one line, exit 130."""

from __future__ import annotations

import sys

import click

from . import handoff
from .cluster import ClusterConfigError


def _fail(msg: str):
    click.echo(f"distconv: error: {msg}", err=True)
    sys.exit(2)


@click.group()
@click.version_option(package_name="distconv")
def main():
    """Convolution, stencils, scans, histograms and k-means over Zarr arrays on every GPU."""


@main.command()
@click.option("--cluster", "cluster_path", default=None, help="cluster YAML (default ./cluster.yaml)")
def info(cluster_path):
    """Versions, GPUs and the resolved cluster configuration."""
    from . import info as info_mod

    try:
        click.echo(info_mod.report(cluster_path))
    except (ClusterConfigError, ValueError) as e:
        _fail(str(e))


@main.command()
@click.argument("workflow_paths", metavar="WORKFLOW.yaml...", nargs=-1, required=True)
@click.option("--cluster", "cluster_path", default=None, help="cluster YAML (default ./cluster.yaml)")
@click.option("--overwrite", is_flag=True, help="replace an output distconv wrote (with --resume: "
              "only when it is another job's)")
@click.option("--resume", is_flag=True, help="finish an interrupted run of the same workflow: write "
              "only the missing blocks (nothing to do when it is complete)")
@click.option("--no-progress", is_flag=True, help="no progress bar")
@click.option("--json", "json_path", default=None, help="also write the run summary as JSON here (a list "
              "for several workflows)")
def run(workflow_paths, cluster_path, overwrite, resume, no_progress, json_path):
    """Run batch workflows, in turn, on one cluster (started once for all of them)."""
    params = dict(locals())  # this command's arguments, for the warm process
    current = [workflow_paths[0]]
    try:
        # a kept cluster's warm process runs it when there is one for this cluster config
        code = handoff.forward(params, cluster_path, _process_start())
        if code is not None:
            sys.exit(code)
        _run(workflow_paths, cluster_path, overwrite, resume, no_progress, json_path, current)
    except KeyboardInterrupt:
        _interrupted(current[0])


def _run(workflow_paths, cluster_path, overwrite, resume, no_progress, json_path, current):
    import json
    import time

    from .cluster import cluster, load_config, warm_workers

    started = handoff.handed_start() or _process_start()
    warm_workers(cluster_path)  # the workers' imports run beside this process's and the check
    from . import batch as workflow

    # every workflow file's problems and the cluster file's, reported together before any work
    problems, loaded, todo = [], [], []
    for path in workflow_paths:
        where = f"{path}: " if len(workflow_paths) > 1 else ""
        try:
            wf = workflow.load(path)
            loaded.append(wf)
            # what the output records, computed once for the check and the run (bovw records none)
            job = workflow.job_of(wf) if wf.kind == "array" else {}
            todo.append((path, wf, workflow.preflight(wf, overwrite or None, resume, job), job))
        except workflow.WorkflowError as e:
            problems.append(where + str(e))
    try:
        load_config(cluster_path)
    except ClusterConfigError as e:
        problems.append(str(e))
    if json_path:
        problems += _json_problems(json_path)
    outputs = [str(wf.outputs["path"]) for wf in loaded]
    twice = sorted({o for o in outputs if outputs.count(o) > 1})
    if twice:
        problems.append(f"two workflows write the output {twice[0]!r}; give each its own outputs.path")
    if problems:
        _fail("; ".join(problems))
    summaries = []
    for path, wf, action, _ in todo:
        if action == "done":  # --resume of a finished output of this same job: nothing to run
            click.echo(workflow.format_summary(workflow.done_summary(wf)))
    todo = [t for t in todo if t[2] != "done"]
    if not todo:
        return
    checked = time.time()
    try:
        with cluster(cluster_path) as client:
            cluster_up = time.time()
            for path, wf, _, job in todo:
                current[0] = path
                summary = workflow.run(wf, client, overwrite=overwrite or None, progress=not no_progress,
                                       resume=resume, job=job)
                _timings(summary, started, checked, cluster_up)
                started = checked = cluster_up = time.time()  # the next one's start-up is its own
                click.echo(workflow.format_summary(summary))
                summaries.append(summary)
    except (workflow.WorkflowError, ClusterConfigError) as e:
        _fail(str(e))  # found only once the cluster is up (device: gpu on workers without one)
    except Exception:  # noqa: BLE001 - not the user's input: say so, keep the traceback
        import traceback

        click.echo("distconv: internal error (not a problem with the workflow file; please report "
                   "it with the traceback below):\n" + traceback.format_exc().rstrip(), err=True)
        sys.exit(1)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(summaries[0] if len(workflow_paths) == 1 else summaries, f, indent=1, default=str)


def _json_problems(json_path: str) -> list[str]:
    """Why the run summary cannot be written to ``--json``'s path (checked before the run, so
    a finished run does not end in a traceback)."""
    import os

    folder = os.path.dirname(os.path.abspath(json_path))
    if os.path.isdir(json_path):
        return [f"--json {json_path!r} is a folder; give a file path in it (e.g. "
                f"{os.path.join(json_path, 'run.json')!r})"]
    if not os.path.isdir(folder):
        return [f"--json {json_path!r}: the folder {folder!r} does not exist; create it or give a path in "
                f"an existing folder"]
    if not os.access(folder, os.W_OK):
        return [f"--json {json_path!r}: the folder {folder!r} is not writable"]
    return []


def _timings(summary: dict, started: float, checked: float, cluster_up: float):
    """The summary's start-up (seconds from ``started`` to its first task, and when the check,
    the cluster, the submission and the first task came) and wall seconds."""
    import time

    first = summary.pop("first_task_at", None)
    submitted = summary.pop("submitted_at", None)
    if first is not None:
        summary["startup_s"] = round(first - started, 2)
        # where the start-up went, seconds since the process started (NOTES.md, issue 13)
        summary["startup"] = {k: round(v - started, 2) for k, v in (
            ("checked", checked), ("cluster_up", cluster_up), ("submitted", submitted),
            ("first_task", first)) if v is not None}
    summary["wall_s"] = round(time.time() - started, 2)
    if handoff.handed_start() is not None:
        summary["handed_off"] = True  # run by the kept cluster's warm process (distconv/handoff.py)


def _interrupted(workflow_path):
    """Ctrl-C: one line, no traceback, exit 130 (the cluster has stopped its workers quietly).
    The process ends here: a KeyboardInterrupt raised again during interpreter shutdown (a
    signal that arrived while the first was handled) made it die of SIGINT instead."""
    click.echo(f"distconv: interrupted; finished blocks are kept: run again with --resume to "
               f"write only the rest ({workflow_path})", err=True)
    end_process(130)


def exit_code(e: SystemExit) -> int:
    """The process exit code a SystemExit stands for (None 0, a message 1)."""
    return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)


def end_process(code: int):
    """Flush this process's streams and end it with ``code``, without finalizing the
    interpreter (no atexit handlers, no teardown of dask's or zarr's threads)."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


@main.group("cluster")
def cluster_group():
    """A cluster kept running between runs: start, status, stop."""


@cluster_group.command("start")
@click.option("--cluster", "cluster_path", default=None, help="cluster YAML (default ./cluster.yaml)")
def cluster_start(cluster_path):
    """Start the configured local cluster and keep it running: runs with the same cluster
    config join it instead of starting their own."""
    from . import running

    try:
        doc = running.start(cluster_path)
    except (ClusterConfigError, ValueError) as e:
        _fail(str(e))
    what = "started" if doc["started"] else "already running"
    click.echo(f"distconv: cluster {what} at {doc['address']}, dashboard {doc['dashboard']}")


@cluster_group.command("status")
def cluster_status():
    """The kept cluster: its address, dashboard and workers."""
    from . import running

    doc = running.status()
    if doc is None:
        click.echo("distconv: no cluster is kept running (distconv cluster start)")
        return
    click.echo(f"distconv: cluster at {doc['address']}, dashboard {doc['dashboard']}, "
               f"{len(doc['workers'])} workers, up {time_since(doc['started_at'])}")
    for name, w in sorted(doc["workers"].items(), key=lambda kv: str(kv[0])):
        gpu = f", {w['gpu']}" if w.get("gpu") else ""
        click.echo(f"  {name}: {w['threads']} threads, {(w['memory'] or 0) / 2**30:.1f} GiB{gpu}")


@cluster_group.command("stop")
def cluster_stop():
    """Stop the kept cluster and its workers."""
    from . import running

    doc = running.stop()
    click.echo("distconv: no cluster is kept running" if doc is None else
               f"distconv: stopped the cluster at {doc['address']}")


def time_since(t: float) -> str:
    import time

    s = int(time.time() - t)
    return f"{s // 3600} h {s % 3600 // 60} min" if s >= 3600 else f"{s // 60} min {s % 60} s"


def _process_start() -> float:
    """When this process started (epoch seconds): start-up is counted from there. Linux gives
    the start in clock ticks since boot, read here against the boot-time clock (psutil adds the
    boot time, whole seconds in /proc/stat: its start was up to a second early, and start-up
    read up to a second long on some nodes)."""
    import os
    import time

    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - psutil comes with distributed; without it, now
        return time.time()


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args):
    """Run the benchmark table (needs a GPU); arguments go to benchmarks/."""
    from pathlib import Path
    import runpy

    root = Path(__file__).resolve().parents[1]
    if not (root / "benchmarks" / "__main__.py").is_file():
        _fail("benchmarks/ not found: run from a source checkout")
    from .backends.devices import gpu_count, gpu_stack_available

    if not (gpu_count() and gpu_stack_available()):
        _fail("the benchmark table needs a CUDA GPU with cupy (nvidia-smi lists none here, or "
              "the GPU extra is not installed)")
    sys.argv = ["benchmarks", *args]
    sys.path.insert(0, str(root))
    runpy.run_module("benchmarks", run_name="__main__")


def entry():
    """The ``distconv`` command: main(), then, once its streams are flushed, the process ends
    without finalizing its interpreter (on one H200 that took ~0.4 s after a run: dask,
    distributed, zarr and their threads torn down, though the run had closed its cluster and
    written everything)."""
    try:
        main()
        code = 0
    except SystemExit as e:  # click's standalone mode always ends here
        code = exit_code(e)
        if not isinstance(e.code, int | None):
            click.echo(e.code, err=True)
    end_process(code)


if __name__ == "__main__":
    entry()
