"""Workflow reports: Markdown with PNG plots (histograms, before/after thumbnails)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


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
    fig.savefig(path)
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
    fig.savefig(path)
    plt.close(fig)
    return path


def write_report(wf, summary: dict, before, out_path: str) -> str:
    report = Path(wf.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    thumb = thumbnails_png(before, out_path, str(report.with_suffix(".thumbs.png")))
    lines = [f"# distconv report: {wf.name}", "",
             f"- input: `{summary['input']}` {tuple(summary['shape'])} {summary['dtype']}",
             f"- steps: {' -> '.join(summary['steps'])}",
             f"- output: `{summary['output']}`",
             f"- time: {summary['seconds']:.2f} s, {summary['GBps']:.3f} GB/s "
             f"({summary['bytes_in'] / 1e9:.3f} GB in, {summary['bytes_out'] / 1e9:.3f} GB out)"]
    if summary.get("gpu_memory_peak") is not None:
        lines.append(f"- GPU memory peak: {summary['gpu_memory_peak'] / 2**30:.2f} GiB")
    lines += ["", f"![before and after]({Path(thumb).name})", ""]
    if summary.get("histogram", {}).get("png"):
        lines += [f"![histogram]({Path(summary['histogram']['png']).name})", ""]
    report.write_text("\n".join(lines))
    return str(report)
