"""The direct path of a workflow: Zarr in -> the fused stencil chain -> sharded Zarr out, one
task per block (graph.storage_job). Taken when the input is a local Zarr array or a dataset
variable read as stored, every step is a stencil (filters, derivative, laplace) with a
boundary mode other than wrap, no region is cut and the output is zstd; whatever the
``chunks:`` (the engine makes its own blocks). Otherwise the general dask path runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..graph import storage_job
from ..ops.filters import chain_name, fused_chain, stencil_of
from ..ops.histograms import planned_edges
from ..ops.registry import OPS
from .workflow import Workflow


def why_not(wf: Workflow) -> str | None:
    """None when the direct path applies, else the reason it does not."""
    inp = wf.input
    if wf.kind != "array":
        return "not an array workflow"
    if inp.get("region"):
        return "input.region is set"
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


def takes(wf: Workflow, arr) -> bool:
    """Does ``wf`` run on the direct path (and write its sharded layout)? ``arr``: its lazy
    input (inputs.lazy_input)."""
    if why_not(wf) is not None:
        return False
    if "variable" in wf.input:
        return dataset_chain(wf, arr)[1] is not None
    return not _periodic(_stencils(wf, arr.ndim, arr.dtype))


def dataset_chain(wf: Workflow, arr):
    """The steps over a dataset variable ``arr`` (lazy, as xr.open_zarr gives it), as the engine
    runs them: (why it cannot, None, result) or (None, (zarr.Array, its folder, the fused
    Stencil), result), ``result`` the lazy DataArray the steps make."""
    from ..ops import stores

    result = arr
    for op, params in wf.steps:
        result = OPS[op].named(result, **params)
    reason, found = stores.engine_chain(result.data)
    return reason, found, result


def bins_of(wf: Workflow, dtype):
    """(numpy's edges, (the kernels' edges, uniform)) of the histogram the outputs ask for
    over a result of ``dtype``, or (None, (None, True))."""
    hist = wf.outputs.get("histogram")
    if not hist:
        return None, (None, True)
    edges, kernel_edges, uniform = planned_edges(dtype, hist.get("bins", 256), hist.get("range"))
    return edges, (kernel_edges, uniform)


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
    edges, bins = bins_of(wf, st.result_dtype(dtype))
    job = storage_job.plan(str(Path(wf.input["path"])), wf.outputs["path"], st, shape, dtype, storage_chunks,
                           gpu, src_meta, wf.outputs.get("chunks"), bins)
    return job, edges
