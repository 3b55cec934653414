"""`distconv run --dry-run`: what a checked workflow's run would do, as `make -n` says it,
without starting a cluster or writing a byte: the path (the engine or dask's general path, and
why), the blocks and their halo, the output's layout, and what the run does with an output
already there."""

from __future__ import annotations

import numpy as np

from ..engine.plan import BLOCKS_PER_WORKER
from . import direct
from .inputs import stored_input, whole_input
from .workflow import Workflow

# what the run does with the output, by ownership.check_target's answer
ACTIONS = {
    "new": "a new output",
    "resume": "--resume: writes only the blocks the interrupted run did not finish",
    "replace": "--overwrite: removes distconv's own files of the output first, then writes it anew",
    "done": "--resume: already complete (the same steps and input), nothing to do",
}


def describe(wf: Workflow, action: str, gpu: bool) -> str:
    """The dry run's lines for ``wf`` (checked), whose output check said ``action``; ``gpu``:
    blocks would run on GPUs."""
    arr = whole_input(wf)
    steps = " -> ".join(op for op, _ in wf.steps) or "(no steps)"
    where = "GPUs" if gpu else "CPUs"
    lines = [f"{wf.name}: {steps} on {tuple(arr.shape)} {np.dtype(arr.dtype)}",
             f"  input: {wf.input['path']}" + (f" [{wf.input['variable']}]" if "variable" in wf.input else "")
             + ("" if stored_input(wf) is not None else " (synthetic: written first)"),
             f"  output: {wf.outputs['path']}: {ACTIONS.get(action, action)}"]
    if action == "done":
        return "\n".join(lines)
    why = direct.why_not(wf)
    if why is None and stored_input(wf) is None:  # not written yet: the steps' chain decides
        taken = direct.takes(wf)
        lines.append(f"  path: {'the engine (one task per block, read to write)' if taken else 'dask (general)'}"
                     + ("" if taken else "; why: a step is not one stencil the engine runs")
                     + f", on {where}; blocks are planned once the input is written")
        return "\n".join(lines)
    job, _, why = direct.direct_job(wf, gpu) if why is None else (None, None, why)
    if job is None:
        lines.append(f"  path: dask (general), on {where}; why: {why}")
        return "\n".join(lines)
    halo = " x ".join(f"({lo}, {hi})" for lo, hi in job.stencil.depth)
    rows = [r1 - r0 for r0, r1 in job.row_blocks]
    sizes = f"{rows[0]} rows" if min(rows) == max(rows) else f"{min(rows)}-{max(rows)} rows"
    lay = job.layout
    lines += [f"  path: the engine (one task per block, read to write), on {where}",
              f"  blocks: {len(rows)} of {sizes} each" + ("" if gpu else " (as one CPU worker cuts them: the run "
                                                          f"cuts up to {BLOCKS_PER_WORKER} a worker)")
              + f", halo {halo} (before, after) per axis"
              + (f", then {job.scan.name.removeprefix('distconv-')} along axis {job.scan.axis}"
                 if job.scan is not None else ""),
              f"  output layout: {tuple(lay.shape)} {np.dtype(lay.dtype)}, shards {tuple(lay.shard)} of "
              f"chunks {tuple(lay.inner)}, zstd"]
    return "\n".join(lines)
