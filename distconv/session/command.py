"""The body of `distconv run`, below the CLI: cli.py parses the arguments and calls ``run``; the
kept cluster's warm process calls the same ``run`` in the child it forks for a run handed to it
(warm.py). It prints what the command prints (each summary on stdout; a problem on stderr) and
returns the exit code: 2 for a problem with the user's input (one line: all problems of the
workflow and cluster files at once, before any work), 1 for an internal failure (said so, with
its traceback), 0 when done; Ctrl-C prints one line and ends the process with 130."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from . import forkserver, handoff
from .builds import KernelBuilds, message
from .cluster import cluster, warm_workers
from .config import ClusterConfigError, load_config
from .interrupt import current_log, log_offset, log_since

INPUT, INTERNAL, INTERRUPTED = 2, 1, 130  # exit codes


@dataclass(frozen=True)
class RunArgs:
    """`distconv run`'s arguments, as cli.py parses them (and hands them on as a dict)."""
    workflow_paths: tuple
    cluster_path: str | None = None
    overwrite: bool = False
    resume: bool = False
    no_progress: bool = False
    json_path: str | None = None
    report_dir: str | None = None
    dry_run: bool = False


def run(params: dict, handed_start: float | None = None) -> int:
    """`distconv run` with ``params`` (its arguments: workflow_paths, cluster_path, overwrite,
    resume, no_progress, json_path, report_dir): in the kept cluster's warm process when there
    is one for this cluster config, else here; returns its exit code. ``handed_start``: in the warm
    process's child, when the `distconv run` that handed the run over started (the run is then
    this process's own: it is not handed on)."""
    current = [params["workflow_paths"][0]]
    try:  # read once for the whole command; a problem is reported with the workflows' by the check
        cfg, cfg_problem = load_config(params["cluster_path"]), None
    except ClusterConfigError as e:
        cfg, cfg_problem = None, str(e)
    try:
        if handed_start is None and cfg is not None:
            # a kept cluster's warm process runs it when there is one for this cluster config
            code = handoff.forward(params, cfg, process_start())
            if code is not None:
                return code
        return _run(RunArgs(**params), cfg, cfg_problem, current, handed_start)
    except KeyboardInterrupt:
        interrupted(current[0])


def problem(msg: str) -> int:
    """A problem with the user's input: one line on stderr; the exit code."""
    print(f"distconv: error: {msg}", file=sys.stderr, flush=True)
    return INPUT


def _run(args: RunArgs, cfg: dict | None, cfg_problem: str | None, current: list,
         handed_start: float | None) -> int:
    started = handed_start or process_start()
    if args.dry_run:
        return _dry_run(args, cfg, cfg_problem)
    warmed = cfg is not None and warm_workers(cfg)  # the workers' imports run beside the check
    builds = None
    try:  # what is started ahead is ended below, whatever stops the command on the way
        if warmed:  # a fresh node's kernels built beside the check and the cluster's start, not in the blocks
            builds = KernelBuilds.start(cfg)
        return _checked_run(args, cfg, cfg_problem, current, started, handed_start, builds)
    finally:
        if builds is not None:
            builds.stop()
        if warmed:  # started ahead for a cluster that did not start: ended, as the cluster would have
            forkserver.release_unheld()


def _checked_run(args: RunArgs, cfg: dict | None, cfg_problem: str | None, current: list, started: float,
                 handed_start: float | None, builds) -> int:
    import time

    from .. import batch as workflow
    from ..batch.outputs import clash_problems
    from ..engine.paths import write_json

    workflow_paths, report_dir, json_path = args.workflow_paths, args.report_dir, args.json_path
    overwrite, resume = args.overwrite, args.resume
    # every workflow file's problems and the cluster file's, reported together before any work
    problems, loaded, todo = [], [], []
    for path in workflow_paths:
        where = f"{path}: " if len(workflow_paths) > 1 else ""
        try:
            wf = workflow.load(path)
            loaded.append(wf)
            # what the output records, computed once for the check and the run (bovw records none)
            job = workflow.output_identity(wf) if wf.kind == "array" else {}
            todo.append((path, wf, workflow.preflight(wf, overwrite or None, resume, job), job))
        except workflow.WorkflowError as e:
            problems.append(where + str(e))
    if cfg_problem:
        problems.append(cfg_problem)
    if json_path:
        problems += _json_problems(json_path, loaded, report_dir)
    if report_dir:
        problems += _report_problems(report_dir, loaded)
    problems += clash_problems(loaded)  # one workflow's files against the others' paths
    outputs = [str(wf.outputs["path"]) for wf in loaded]
    twice = sorted({o for o in outputs if outputs.count(o) > 1})
    if twice:
        problems.append(f"two workflows write the output {twice[0]!r}; give each its own outputs.path")
    if problems:
        return problem("; ".join(problems))
    summaries = []
    for path, wf, action, _ in todo:
        if action == "done":  # --resume of a finished output of this same job: nothing to run
            print(workflow.format_summary(workflow.done_summary(wf)), flush=True)
    todo = [t for t in todo if t[2] != "done"]
    if not todo:
        return 0
    checked = time.time()
    if builds is not None:
        builds.send([t[1] for t in todo])
    log = [None]  # where the cluster log stood as the current run began
    try:
        with cluster(cfg) as client:
            cluster_up = time.time()
            built = builds.wait() if builds is not None else None
            if message(built):
                print(message(built), flush=True)
            for path, wf, _, job in todo:
                current[0], log[0] = path, log_offset()
                summary = workflow.run(wf, client, overwrite=overwrite or None, progress=not args.no_progress,
                                       resume=resume, job=job,
                                       startup={"started": started, "check": checked, "cluster": cluster_up})
                _timings(summary, started, checked, cluster_up, handed=handed_start is not None)
                if built is not None:
                    summary["kernel_builds"], built = built, None  # the first run's
                started = checked = cluster_up = time.time()  # the next one's start-up is its own
                print(workflow.format_summary(summary), flush=True)
                if json_path:
                    summary["log"] = log_since(log[0])  # the cluster's own account of the run
                summaries.append(summary)
            if report_dir:
                from ..batch.report import write_run_report

                print(f"distconv: report: {write_run_report(report_dir, summaries)}", flush=True)
    except (workflow.WorkflowError, ClusterConfigError) as e:
        # found only once the cluster is up (device: gpu on workers without one)
        code, text = problem(str(e)), f"error: {e}"
        return _failed(json_path, len(workflow_paths) == 1, summaries, todo, current[0], code, text, log[0])
    except Exception as e:  # noqa: BLE001 - what the user can act on, else our bug with its traceback
        from .failures import explain

        wf = next((t[1] for t in todo if t[0] == current[0]), None)
        source = wf and (f"{wf.input['path']}/{wf.input['variable']}" if wf.input.get("variable") else wf.input["path"])
        code, text = explain(e, input_path=source, output=wf and str(wf.outputs["path"]), cluster=cfg,
                             log=current_log())
        print(f"distconv: {text}", file=sys.stderr, flush=True)
        return _failed(json_path, len(workflow_paths) == 1, summaries, todo, current[0], code, text, log[0])
    if json_path:  # with distconv's mark: the next run may replace it, nothing else is replaced
        write_json(json_path, summaries[0] if len(workflow_paths) == 1 else summaries, indent=1)
    return 0


def _failed(json_path: str | None, single: bool, summaries: list, todo: list, path: str, code: int, text: str,
            offset) -> int:
    """A run that failed: --json (when asked for) still written, the runs that finished before
    it, then its own entry (what the terminal said, the exit code and the cluster log's lines of
    the run); returns ``code``."""
    if not json_path:
        return code
    from ..engine.paths import write_json

    wf = next((t[1] for t in todo if t[0] == path), None)
    failed = {"workflow": wf.name if wf else None, "output": wf and str(wf.outputs["path"]), "error": text,
              "exit_code": code, "log": log_since(offset)}
    try:
        write_json(json_path, failed if single else [*summaries, failed], indent=1)
    except OSError as e:  # the run's own line is what matters: said above
        print(f"distconv: --json {json_path!r} not written: {e}", file=sys.stderr, flush=True)
    return code


def _dry_run(args: RunArgs, cfg: dict | None, cfg_problem: str | None) -> int:
    """`distconv run --dry-run`: the same check as a run (exit 2 with every problem), then what
    each workflow's run would do; no cluster, nothing written."""
    from .. import batch as workflow
    from ..batch.dry_run import describe
    from .config import resolve_type

    problems, todo, overwrite, resume = [], [], args.overwrite, args.resume
    for path in args.workflow_paths:
        where = f"{path}: " if len(args.workflow_paths) > 1 else ""
        try:
            wf = workflow.load(path)
            job = workflow.output_identity(wf) if wf.kind == "array" else {}
            todo.append((wf, workflow.preflight(wf, overwrite or None, resume, job)))
        except workflow.WorkflowError as e:
            problems.append(where + str(e))
    if cfg_problem:
        problems.append(cfg_problem)
    else:
        try:
            kind = resolve_type(cfg) if cfg["type"] != "address" else "address"
        except ClusterConfigError as e:
            problems.append(str(e))
    if problems:
        return problem("; ".join(problems))
    if kind == "address":
        print(f"distconv: cluster: the scheduler at {cfg['address']} (not contacted)", flush=True)
    else:
        print(f"distconv: cluster: {'GPU workers (LocalCUDACluster)' if kind == 'cuda' else 'CPU workers'}, "
              "started for the run", flush=True)
    for wf, action in todo:
        if wf.kind != "array":
            print(f"{wf.name}: a {wf.kind} workflow -> {wf.outputs['path']}", flush=True)
            continue
        gpu = kind != "cpu" and wf.device != "cpu"
        print(describe(wf, action, gpu), flush=True)
    return 0


def _report_problems(report_dir: str, workflows: list) -> list[str]:
    """Why ``--report`` cannot write its report into ``report_dir`` (batch.report says where it
    may; none of its files may be one a workflow writes), or that matplotlib, which draws its
    plots, is missing: before any work."""
    import importlib.util

    from ..batch.outputs import workflow_files
    from ..batch.report import report_dir_problems, report_files
    from ..engine import paths

    if importlib.util.find_spec("matplotlib") is None:
        return [f"--report {report_dir!r} draws its plots with matplotlib, which is not installed "
                f"(pip install matplotlib)"]
    problems = report_dir_problems(report_dir, workflows)
    return problems or [f"--report {report_dir!r} would write {f!r}, which is {g.key} of workflow {wf.name!r}; "
                        "choose another folder" for f, _ in report_files(report_dir, len(workflows))
                        for wf in workflows for g in workflow_files(wf) if paths.key(g.path) == paths.key(f)]


def _json_problems(json_path: str, workflows: list = (), report_dir: str | None = None) -> list[str]:
    """Why the run summary cannot be written to ``--json``'s path (checked before the run, so
    a finished run does not end in a traceback): a folder there, its folder missing or not
    writable, a file distconv did not write there, or it is, holds or lies inside what one of
    ``workflows`` reads or writes, or is a file of ``report_dir``'s report."""
    import os

    from ..batch.outputs import FileOutput, command_file_problems
    from ..batch.report import report_files

    folder = os.path.dirname(os.path.abspath(json_path))
    if os.path.isdir(json_path):
        return [f"--json {json_path!r} is a folder; give a file path in it (e.g. "
                f"{os.path.join(json_path, 'run.json')!r})"]
    if not os.path.isdir(folder):
        return [f"--json {json_path!r}: the folder {folder!r} does not exist; create it or give a path in "
                f"an existing folder"]
    if not os.access(folder, os.W_OK):
        return [f"--json {json_path!r}: the folder {folder!r} is not writable"]
    report = [FileOutput(f"a file of --report {report_dir!r}", f, kind)
              for f, kind in report_files(report_dir, len(workflows))] if report_dir else []
    return command_file_problems("--json", json_path, "json", list(workflows), report)


def _timings(summary: dict, started: float, checked: float, cluster_up: float, handed: bool = False):
    """The summary's start-up (seconds from ``started`` to its first task, and when the check,
    the cluster, the submission and the first task came) and wall seconds; ``handed``: run by
    the kept cluster's warm process (warm.py)."""
    import time

    first = summary.pop("first_task_at", None)
    submitted = summary.pop("submitted_at", None)
    if first is not None:
        summary["startup_s"] = round(first - started, 2)
        # where the start-up went, seconds since the process started
        summary["startup"] = {k: round(v - started, 2) for k, v in (
            ("checked", checked), ("cluster_up", cluster_up), ("submitted", submitted),
            ("first_task", first)) if v is not None}
    summary["wall_s"] = round(time.time() - started, 2)
    if handed:
        summary["handed_off"] = True


def interrupted(workflow_path):
    """Ctrl-C: one line, no traceback, exit 130 (the cluster has stopped its workers quietly).
    The process ends here: a KeyboardInterrupt raised again during interpreter shutdown (a
    signal that arrived while the first was handled) made it die of SIGINT instead."""
    from .failures import interrupted_text

    print(f"distconv: {interrupted_text(workflow_path)}", file=sys.stderr, flush=True)
    end_process(INTERRUPTED)


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


def process_start() -> float:
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
