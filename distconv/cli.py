"""The ``distconv`` command: info, run, bench. Errors print one line and exit 2."""

from __future__ import annotations

import sys

import click

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
@click.argument("workflow_path", metavar="WORKFLOW.yaml")
@click.option("--cluster", "cluster_path", default=None, help="cluster YAML (default ./cluster.yaml)")
@click.option("--overwrite", is_flag=True, help="replace existing outputs")
@click.option("--resume", is_flag=True, help="finish an interrupted run: write only the missing blocks")
@click.option("--no-progress", is_flag=True, help="no progress bar")
@click.option("--json", "json_path", default=None, help="also write the run summary as JSON here")
def run(workflow_path, cluster_path, overwrite, resume, no_progress, json_path):
    """Run a batch workflow on the cluster."""
    import json
    import time

    from .cluster import cluster, load_config, warm_workers

    started = _process_start()
    warm_workers(cluster_path)  # the workers' imports run beside this process's and the check
    from . import batch as workflow

    try:
        wf = workflow.load(workflow_path)
        workflow.preflight(wf, overwrite or None, resume)
        load_config(cluster_path)
        checked = time.time()
        with cluster(cluster_path) as client:
            cluster_up = time.time()
            summary = workflow.run(wf, client, overwrite=overwrite or None, progress=not no_progress,
                                       resume=resume)
    except (workflow.WorkflowError, ClusterConfigError, ValueError, TypeError, FileNotFoundError) as e:
        _fail(str(e))
    except KeyboardInterrupt:
        click.echo(f"distconv: interrupted; finished blocks are kept: run again with --resume to "
                   f"write only the rest ({workflow_path})", err=True)
        sys.exit(130)
    first = summary.pop("first_task_at", None)
    submitted = summary.pop("submitted_at", None)
    if first is not None:
        summary["startup_s"] = round(first - started, 2)
        # where the start-up went, seconds since the process started (NOTES.md, issue 13)
        summary["startup"] = {k: round(v - started, 2) for k, v in (
            ("checked", checked), ("cluster_up", cluster_up), ("submitted", submitted),
            ("first_task", first)) if v is not None}
    summary["wall_s"] = round(time.time() - started, 2)
    click.echo(workflow.format_summary(summary))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(summary, f, indent=1, default=str)


def _process_start() -> float:
    """When this process started (epoch seconds): start-up is counted from there."""
    import time

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


if __name__ == "__main__":
    main()
