"""The ``distconv`` command: info, run, cluster, bench — the click layer on top of the sessions
room (distconv/session/), which never imports it. A problem with the user's input prints one
line and exits 2 (all problems of the workflow and cluster files at once, before any work); an
internal failure says so with its traceback and exits 1; Ctrl-C prints one line, exit 130
(`distconv run`'s body: session/command.py)."""

from __future__ import annotations

import sys

import click

from .session import command
from .session.config import ClusterConfigError
from .session.interrupt import cli_policy


def _fail(msg: str):
    sys.exit(command.problem(msg))  # one line on stderr, exit 2


@click.group()
@click.version_option(package_name="distconv")
def main():
    """Convolution, stencils, scans, histograms and k-means over Zarr arrays on every GPU."""


@main.command()
@click.option("--cluster", "cluster_path", default=None, help="cluster YAML (default ./cluster.yaml)")
def info(cluster_path):
    """Versions, GPUs and the resolved cluster configuration."""
    from .session import info as info_mod

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
@click.option("--report", "report_dir", default=None, metavar="DIR", help="write DIR/report.md: the steps "
              "with their arguments, input and output, seconds per stage, and a plot of the blocks over "
              "time per worker (DIR/timeline.png)")
@click.option("--dry-run", "-n", "dry_run", is_flag=True, help="check everything the run checks and say "
              "what it would do (the path, blocks, halo, the output's layout, what --resume or "
              "--overwrite would do), starting no cluster and writing nothing")
def run(workflow_paths, cluster_path, overwrite, resume, no_progress, json_path, report_dir, dry_run):
    """Run batch workflows, in turn, on one cluster (started once for all of them)."""
    # this command's arguments, for its body and the warm process (command.RunArgs' fields)
    params = dict(workflow_paths=workflow_paths, cluster_path=cluster_path, overwrite=overwrite, resume=resume,
                  no_progress=no_progress, json_path=json_path, report_dir=report_dir, dry_run=dry_run)
    with cli_policy():  # Ctrl-C: one line, exit 130, the cluster's logs silent meanwhile
        code = command.run(params)
    if code:
        sys.exit(code)


@main.group("cluster")
def cluster_group():
    """A cluster kept running between runs: start, status, stop."""


@cluster_group.command("start")
@click.option("--cluster", "cluster_path", default=None, help="cluster YAML (default ./cluster.yaml)")
def cluster_start(cluster_path):
    """Start the configured local cluster and keep it running: runs with the same cluster
    config join it instead of starting their own."""
    from .session import kept

    try:
        doc = kept.start(cluster_path)
    except (ClusterConfigError, ValueError) as e:
        _fail(str(e))
    what = "started" if doc["started"] else "already running"
    click.echo(f"distconv: cluster {what} at {doc['address']}, dashboard {doc['dashboard']}")


@cluster_group.command("status")
def cluster_status():
    """The kept cluster: its address, dashboard and workers."""
    from .session import kept

    doc = kept.status()
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
    from .session import kept

    doc = kept.stop()
    click.echo("distconv: no cluster is kept running" if doc is None else
               f"distconv: stopped the cluster at {doc['address']}")


def time_since(t: float) -> str:
    import time

    s = int(time.time() - t)
    return f"{s // 3600} h {s % 3600 // 60} min" if s >= 3600 else f"{s // 60} min {s % 60} s"


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
    without finalizing its interpreter: tearing down dask, distributed, zarr and their threads
    costs a noticeable pause, though the run has closed its cluster and written everything."""
    try:
        main()
        code = 0
    except SystemExit as e:  # click's standalone mode always ends here
        code = command.exit_code(e)
        if not isinstance(e.code, int | None):
            click.echo(e.code, err=True)
    command.end_process(code)


if __name__ == "__main__":
    entry()
