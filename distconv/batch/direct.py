"""The direct path of a workflow: Zarr in -> the fused stencil chain -> sharded Zarr out, one
task per block (graph.storage_job). Taken when the input is a local Zarr array, every step is
a stencil (filters, derivative, laplace) with a boundary mode other than wrap, and the
output is zstd (or uncompressed); otherwise the general dask path runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..graph import storage_job
from ..ops.filters import chain_name, fused_chain, stencil_of
from ..ops.histograms import planned_edges
from ..ops.registry import OPS
from .spec import Workflow


def why_not(wf: Workflow) -> str | None:
    """None when the direct path applies, else the reason it does not."""
    inp = wf.input
    if wf.kind != "array" or "variable" in inp:
        return "the input is a dataset variable"
    if inp.get("region"):
        return "input.region is set"
    if wf.chunks != "auto":
        return "chunks are given explicitly"
    if wf.outputs.get("codec", "zstd") != "zstd":
        return f"outputs.codec is {wf.outputs.get('codec')!r}"
    if "://" in inp["path"] or "://" in wf.outputs["path"]:
        return "a store that is not a local folder"
    if not all(OPS[op].stencil for op, _ in wf.steps):
        return "a step is not a stencil"
    hist = wf.outputs.get("histogram")
    if hist and np.ndim(hist.get("bins", 256)) == 0 and hist.get("range") is None:
        return "the histogram has no range (it needs a pass over the result first)"
    return None


def takes(wf: Workflow, ndim: int, dtype) -> bool:
    """Does ``wf`` run on the direct path (and write its sharded layout)?"""
    return why_not(wf) is None and not _periodic(_stencils(wf, ndim, dtype))


def _stencils(wf: Workflow, ndim: int, dtype) -> list:
    return [stencil_of(OPS[op].func, ndim, dtype, **params) for op, params in wf.steps]


def _periodic(stencils) -> bool:
    """A wrap mode rules the direct path out: it reads its halo from the far edge."""
    return any(any(s.periodic) for s in stencils)


def plan(wf: Workflow, gpu: bool, ndim: int, dtype, shape, storage_chunks, src_meta=None):
    """(job, numpy histogram edges or None), or None when a stencil's mode rules the path
    out (wrap reads its halo from the far edge of the array)."""
    stencils = _stencils(wf, ndim, dtype)
    if _periodic(stencils):
        return None
    # task names read as the steps on the dashboard and in the summary: distconv-gaussian-laplace
    st = fused_chain(stencils, chain_name(stencils))
    edges, bins = None, (None, True)
    hist = wf.outputs.get("histogram")
    if hist:
        edges, kernel_edges, uniform = planned_edges(st.result_dtype(dtype), hist.get("bins", 256), hist.get("range"))
        bins = (kernel_edges, uniform)
    job = storage_job.plan(str(Path(wf.input["path"])), wf.outputs["path"], st, shape, dtype, storage_chunks,
                           gpu, src_meta, wf.outputs.get("chunks"), bins)
    return job, edges
