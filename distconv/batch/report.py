"""Run reports: Markdown with PNG plots, built from a run's summary (what `distconv run --json`
writes): the steps with their arguments, the input and output arrays, where the time went
(seconds per stage, start-up) and the job's timeline (each block a bar in its worker's lane, the
bytes done over time below it), plus a workflow's histogram and before/after thumbnails.
``write_report`` writes a workflow's own ``report:``; ``write_run_report`` the report of a whole
`distconv run --report DIR` (one section per workflow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..engine import paths


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def histogram_png(counts, edges, path: str, title: str = "histogram"):
    plt = _plt()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    ax.stairs(np.asarray(counts), np.asarray(edges), fill=True)
    ax.set_xlabel("value")
    ax.set_ylabel("count")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, metadata=paths.PNG_METADATA)  # distconv's mark: a later run may replace it
    plt.close(fig)
    return path


def _slice2d(arr, max_side=512):
    """A host 2-D slice (the first plane along leading axes), strided down to a thumbnail."""
    from ..core.arrays import to_host

    a = arr.data if hasattr(arr, "dims") else arr
    while a.ndim > 2:
        a = a[0]
    if a.ndim == 1:
        a = a[None, :]
    step = max(1, max(a.shape) // max_side)
    a = a[::step, ::step]
    return to_host(a.compute() if hasattr(a, "compute") else a)


def thumbnails_png(before, after_path: str, path: str):
    import zarr

    plt = _plt()
    after = zarr.open_array(after_path, mode="r")
    idx = (0,) * (after.ndim - 2)
    b = _slice2d(before)
    step = max(1, max(after.shape[-2:]) // 512)
    a = np.asarray(after[idx + (slice(None, None, step), slice(None, None, step))])
    fig, axes = plt.subplots(1, 2, figsize=(8, 4), dpi=100)
    for ax, img, title in zip(axes, (b, a), ("input", "output")):
        ax.imshow(img, cmap="gray")
        ax.set_title(title)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, metadata=paths.PNG_METADATA)  # distconv's mark: a later run may replace it
    plt.close(fig)
    return path


def write_report(wf, summary: dict, before, out_path: str) -> str:
    """Write a workflow's own report (its ``report:`` path), PNGs beside it.

    Parameters
    ----------
    wf : Workflow
        The workflow run (its name and ``report`` path).
    summary : dict
        Its run's summary (run_lines: the steps, arrays, seconds, timeline, histogram).
    before : array
        The input, for the before/after thumbnails.
    out_path : str
        The output array, for the thumbnails.

    Returns
    -------
    str
        The report's path.
    """
    report = Path(wf.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    thumb = thumbnails_png(before, out_path, str(report.with_suffix(".thumbs.png")))
    lines = [paths.MARK_LINE, f"# distconv report: {wf.name}", ""]
    lines += run_lines(summary, report.parent, report.with_suffix(".timeline.png").name)
    lines += ["", f"![before and after]({Path(thumb).name})", ""]
    report.write_text("\n".join(lines))
    return str(report)


def write_run_report(folder, summaries: list) -> str:
    """Write ``folder``/report.md (the folder made where missing) for the runs of one
    `distconv run --report`: a section per workflow (run_lines), its timeline plot beside it
    (timeline.png; with several workflows timeline-1.png, timeline-2.png, ...).

    Parameters
    ----------
    folder : str or Path
        Where the report and its plots are written (not inside an output: the command checks
        that before the run, report_dir_problems).
    summaries : list of dict
        The runs' summaries, as ``--json`` writes them.

    Returns
    -------
    str
        The path of report.md.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [paths.MARK_LINE, TITLE, ""]
    for k, s in enumerate(summaries, 1):
        png = "timeline.png" if len(summaries) == 1 else f"timeline-{k}.png"
        lines += [f"## {s.get('workflow', k)}", ""] + run_lines(s, folder, png, level=3) + [""]
    (folder / "report.md").write_text("\n".join(lines))
    return str(folder / "report.md")


def report_dir_problems(folder: str, workflows: list) -> list[str]:
    """Why ``--report`` cannot write into ``folder`` (checked before the cluster starts or
    anything is written): it is a file, lies inside (or is) an input or an output of one of
    ``workflows``, is a URL, cannot be made, or holds a report or plot that distconv did not
    write (each must carry distconv's mark, engine/paths.py).

    Parameters
    ----------
    folder : str
        The folder given to ``--report``.
    workflows : list of Workflow
        The checked workflows of the run.

    Returns
    -------
    list of str
        The problems, each naming the option and its value (empty: it may be written).
    """
    import os

    from ..engine.location import is_url

    name = f"--report {folder!r}"
    if is_url(folder):
        return [f"{name}: the report is written as local files; give a local folder"]
    if os.path.exists(folder) and not os.path.isdir(folder):
        return [f"{name} is an existing file; give a folder (report.md and its plots are written in it)"]
    for wf in workflows:
        for what, path in (("output", wf.outputs["path"]), ("input", wf.input.get("path"))):
            if path is None or is_url(str(path)):
                continue
            why = paths.clash(name, folder, str(path), f"the {what}")
            if why is not None and " holds " not in why:
                return [f"{why} of workflow {wf.name!r}; choose a folder outside it"]
    existing = os.path.abspath(folder)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return [f"{name}: {existing!r} is a file, so the folder cannot be made"]
    if not os.access(existing, os.W_OK):
        return [f"{name}: the folder {existing!r} is not writable"]
    problems = []
    for f, kind in report_files(folder, len(workflows)):
        if os.path.lexists(f) and not (os.path.isfile(f) and paths.is_ours(f, kind)):
            problems.append(f"{name} holds {os.path.basename(f)!r}, which distconv did not write; choose another "
                            "folder or remove it yourself")
    return problems


TITLE = "# distconv run report"  # report.md's heading, below distconv's mark


def report_files(folder, n: int) -> list[tuple[str, str]]:
    """(path, kind) of every file ``write_run_report`` may write into ``folder`` for ``n``
    workflows: report.md and the timeline plots."""
    pngs = ["timeline.png"] + [f"timeline-{k}.png" for k in range(1, n + 1)] if n > 1 else ["timeline.png"]
    return [(str(Path(folder) / "report.md"), "markdown"), *((str(Path(folder) / p), "png") for p in pngs)]


def run_lines(summary: dict, folder, png: str, level: int = 2) -> list[str]:
    """One run's section of a report, from its summary: what ran and how fast, its steps with
    their arguments, the input and output arrays, the seconds per stage and the start-up, the
    histogram's plot, and its timeline (timeline_png).

    Parameters
    ----------
    summary : dict
        The run's summary, as ``--json`` writes it.
    folder : str or Path
        The report's folder (the timeline's plot is written there, images are linked from it).
    png : str
        The timeline plot's file name in ``folder``.
    level : int
        The Markdown level of the section's headings.

    Returns
    -------
    list of str
        The section's Markdown lines.
    """
    h = "#" * level
    if "shape" not in summary:  # nothing computed here (a finished output), or a bag of visual words
        lines = [f"- output: {code(summary.get('output'))}", f"- {summary.get('text', '')}"]
        if summary.get("seconds") is not None:
            lines.append(f"- time: {summary['seconds']:.2f} s")
        return lines + _step_lines(summary, h) + ["", "No timeline: this run has no blocks of an array job."]
    lines = [f"- {' -> '.join(summary['steps'])} on {tuple(summary['shape'])} {dtypes(summary)}",
             f"- time: {summary['seconds']:.2f} s, {summary['GBps']:.3f} GB/s "
             f"({summary['bytes_in'] / 1e9:.3f} GB in, {summary['bytes_out'] / 1e9:.3f} GB out)"]
    if summary.get("wall_s") is not None:
        lines.append(f"- wall: {summary['wall_s']:.2f} s from the command's start"
                     + (f", first task after {summary['startup_s']:.2f} s" if summary.get("startup_s") is not None
                        else ""))
    if summary.get("path"):
        why = f" ({summary['why_general']})" if summary.get("why_general") else ""
        lines.append(f"- path: {summary['path']}{why}")
    if summary.get("gpu_memory_peak") is not None:
        lines.append(f"- GPU memory peak: {summary['gpu_memory_peak'] / 2**30:.2f} GiB")
    if summary.get("dashboard"):  # the job on the cluster's distconv page, while the cluster runs
        lines.append(f"- on the dashboard: {summary['dashboard']}")
    if summary.get("report"):
        lines.append(f"- the workflow's own report: {code(summary['report'])}")
    lines += _step_lines(summary, h)
    lines += ["", f"{h} Input and output", "", "| | path | shape | dtype | chunks | shards |",
              "|---|---|---|---|---|---|"]
    arrays = summary.get("arrays") or {"input": {"path": summary["input"]}, "output": {"path": summary["output"]}}
    for what, a in arrays.items():
        path = code(a["path"]) + (f" (variable {code(a['variable'])})" if a.get("variable") else "")
        cells = [_tuple(a.get("shape")), a.get("dtype", "?"), _tuple(a.get("chunks")), _tuple(a.get("shards"))]
        lines.append(f"| {what} | {path} | " + " | ".join(cells) + " |")
    lines += _time_lines(summary, h)
    hist = (summary.get("histogram") or {}).get("png")
    if hist:
        import os

        lines += ["", f"{h} Histogram", "", f"![histogram]({os.path.relpath(hist, folder)})"]
    lines += ["", f"{h} Timeline", ""]
    timeline = summary.get("timeline")
    if timeline == []:
        lines.append("No timeline: no block ran in this run (an interrupted run had written them all).")
        return lines
    if not timeline:
        lines.append("No timeline: it is recorded for the engine's blocks (the direct path) and, on a cluster, "
                     "for dask's tasks (the general path); this run was on dask's local threads off the engine.")
        return lines
    timeline_png(summary, str(Path(folder) / png))
    workers = sorted({str(e[0]) for e in timeline})
    what = "tasks" if summary.get("path") == "general" else "blocks"
    lines += [f"![timeline]({png})", "",
              f"{len(timeline)} {what} on {len(workers)} worker{'s' if len(workers) > 1 else ''} "
              f"({', '.join(workers)}): the first began {min(e[1] for e in timeline):.2f} s and the last ended "
              f"{max(e[2] for e in timeline):.2f} s after the job was submitted; "
              f"{sum(e[3] for e in timeline) / 1e9:.3f} GB done."]
    if what == "tasks":
        lines.append("On dask's general path a block is several tasks (its read, each step, its chunk-aligned "
                     "write): each is a bar, and the bytes count at the writes.")
    return lines


def dtypes(s: dict) -> str:
    """The data type a run read, and the one it wrote where the steps changed it ("uint8 ->
    uint64"): a summary's "dtype" is its output's."""
    read = s.get("input_dtype") or s["dtype"]
    return read if read == s["dtype"] else f"{read} -> {s['dtype']}"


def code(text) -> str:
    """``text`` as Markdown inline code, whatever it holds: fenced by more backticks than any
    run of them inside (spaced where it starts or ends with one), its pipes escaped (a table
    cell ends at one)."""
    import re

    text = str(text).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _step_lines(summary: dict, h: str) -> list[str]:
    """The steps with their arguments, a table."""
    if not summary.get("steps"):
        return []
    lines = ["", f"{h} Steps", "", "| # | step | arguments |", "|---|---|---|"]
    args = summary.get("step_arguments") or [{}] * len(summary["steps"])
    for k, (op, kw) in enumerate(zip(summary["steps"], args), 1):
        shown = ", ".join(f"{key}={value!r}" for key, value in kw.items()) or "(defaults)"
        lines.append(f"| {k} | {code(op)} | {code(shown)} |")
    return lines


def _time_lines(summary: dict, h: str) -> list[str]:
    """Where the time went: seconds per stage (summed over blocks), busy seconds per task name,
    the start-up."""
    lines = ["", f"{h} Time", ""]
    stages = summary.get("stage_seconds") or {}
    if stages:
        lines += ["Seconds per stage, summed over blocks:", "", "| stage | seconds |", "|---|---|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in stages.items()] + [""]
    steps = summary.get("step_seconds") or {}
    if steps:
        lines += ["Busy seconds per task name (as the dashboard names them):", "", "| tasks | seconds |", "|---|---|"]
        lines += [f"| {code(k)} | {v:.3f} |" for k, v in steps.items()] + [""]
    startup = summary.get("startup") or {}
    if startup:
        lines += ["Start-up, seconds since the command started:", "", "| | seconds |", "|---|---|"]
        lines += [f"| {k} | {v:.2f} |" for k, v in startup.items()] + [""]
    samples = (summary.get("progress") or {}).get("samples") or []
    if len(samples) > 1:
        lines.append(f"Progress: {len(samples) - 1} blocks counted as they finished, the last after "
                     f"{samples[-1][0]:.2f} s.")
    if len(lines) == 3:
        lines.append("No seconds per stage or task were recorded (dask's local threads, off the engine).")
    return lines[:-1] if lines[-1] == "" else lines


def _tuple(v) -> str:
    return "—" if v is None else str(tuple(v))


def timeline_png(summary: dict, path: str) -> str:
    """Plot a run's timeline (``summary["timeline"]``: [[worker, start, end, bytes], ...]) into
    ``path``: above, each block a bar in its worker's lane (blocks in flight at once stacked
    in the lane); below, the GB done as blocks end; the throughput in the title.

    Parameters
    ----------
    summary : dict
        A run's summary with its ``timeline`` (and ``workflow``, ``GBps``).
    path : str
        The PNG to write.

    Returns
    -------
    str
        ``path``.
    """
    plt = _plt()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    timeline = sorted(summary["timeline"], key=lambda e: (str(e[0]), e[1]))
    workers = sorted({str(e[0]) for e in timeline}, key=lambda w: (len(w), w))
    rows: dict = {}
    for w in workers:  # blocks in flight at once in one worker: each its own row of the lane
        ends: list = []
        for e in (e for e in timeline if str(e[0]) == w):
            row = next((r for r, end in enumerate(ends) if end <= e[1]), len(ends))
            ends[row:row + 1] = [e[2]]
            rows.setdefault(w, []).append((row, e))
    heights = {w: max(r for r, _ in rows[w]) + 1 for w in workers}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 2.2 + 0.35 * sum(heights.values())), dpi=100, sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    colours = plt.get_cmap("tab10")
    base, ticks = 0.0, []
    for n, w in enumerate(workers):
        for row, e in rows[w]:
            top.broken_barh([(e[1], max(e[2] - e[1], 1e-6))], (base + row + 0.1, 0.8), facecolors=colours(n % 10),
                            edgecolors="black", linewidth=0.3)
        ticks.append((base + heights[w] / 2, w if w == "local" else f"worker {w}"))
        base += heights[w] + 0.5
    top.set_yticks([t for t, _ in ticks], [label for _, label in ticks])
    top.set_ylim(-0.25, base)
    top.invert_yaxis()
    total = sum(e[3] for e in timeline)
    span = max(e[2] for e in timeline) - min(e[1] for e in timeline)
    unit, scale = ("GB", 1e9) if total >= 1e9 else ("MB", 1e6)
    run = f", {summary['GBps']:.3f} GB/s the whole run" if summary.get("GBps") is not None else ""
    what = "tasks" if summary.get("path") == "general" else "blocks"
    top.set_title(f"{summary.get('workflow', '')}: {len(timeline)} {what}, {total / scale:.3f} {unit}, "
                  f"{total / max(span, 1e-9) / scale:.3f} {unit}/s while the {what} ran{run}", fontsize=9)
    done = sorted((e[2], e[3]) for e in timeline)
    t = [0.0] + [d[0] for d in done]
    bottom.step(t, np.cumsum([0] + [d[1] for d in done]) / scale, where="post")
    bottom.set_ylabel(f"{unit} done")
    bottom.set_xlabel("seconds since the job was submitted")
    fig.tight_layout()
    fig.savefig(path, metadata=paths.PNG_METADATA)  # distconv's mark: a later run may replace it
    plt.close(fig)
    return path
