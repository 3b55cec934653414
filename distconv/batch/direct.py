"""The direct path of a workflow: Zarr in -> the fused stencil chain, then a scan if the last
step is one -> sharded Zarr out, one task per block (distconv.engine; a scan along the first
axis two, its carries chained between them). Taken when the input is a Zarr array (a folder or
object storage: engine/location.py) or a dataset variable read as stored, every step is a
stencil with a boundary mode other than wrap (the last may be a scan along an axis), and the
output is zstd; with or without a region, whatever the ``chunks:`` (the engine makes its own
blocks). Otherwise the general dask path runs, and the summary says why."""

from __future__ import annotations

import warnings

import numpy as np

from .. import engine
from ..core.checks import DistconvWarning
from ..core.stencil import ScanStep, Stencil, identity
from ..graph.declared import declared
from ..graph.declared import fusing
from ..ops.filters import chain_name, fused_chain, stencil_of
from ..ops.histograms import planned_edges
from ..ops.registry import OPS
from ..ops.scans import scan_step
from .inputs import region_box, whole_input
from .workflow import Workflow, region_edges


def why_not(wf: Workflow) -> str | None:
    """None when the direct path may apply (plan() has the last word), else the reason it
    does not."""
    inp = wf.input
    if wf.kind != "array":
        return "not an array workflow"
    if wf.outputs.get("codec", "zstd") != "zstd":
        return f"outputs.codec is {wf.outputs.get('codec')!r}"
    ops = [OPS[op] for op, _ in wf.steps]
    if not all(op.stencil for op in ops[:-1]) or not (ops[-1].stencil or ops[-1].scan):
        return "a step is neither a stencil nor a scan as the last step"
    scan = ops[-1].scan
    if scan and inp.get("region") and region_edges(inp) == "data":
        return "a scan with input.region_edges: data (its carry starts before the region)"
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
        return dataset_chain(wf)[1] is not None
    return _steps(wf, arr.ndim, arr.dtype)[2] is None


def dataset_chain(wf: Workflow):
    """The steps over the dataset variable of ``wf`` read whole (lazy, as xr.open_zarr gives
    it; a region is the engine's window, not a cut), as the engine runs them: (why it cannot,
    None, result) or (None, (zarr.Array, its folder or URL, the fused Stencil, the scan after
    it or None), result), ``result`` the lazy DataArray the steps make over the region."""
    result = whole_input(wf)
    unfused = None  # the first step whose result is not one stencil or scan the engine can take
    with warnings.catch_warnings():
        # storage chunks thinner than a halo: the engine cuts its own blocks, and the general
        # path, where it runs, says so as it builds its graph
        warnings.filterwarnings("ignore", message="axis .*: chunks too thin", category=DistconvWarning)
        for i, (op, params) in enumerate(wf.steps, 1):
            result = OPS[op].named(result, **params)
            if unfused is None and declared(result.data, (Stencil, ScanStep)) is None and fusing():
                unfused = _not_one_stencil(i, op, params)
    reason, found = engine.engine_chain(result.data)
    if found is None and unfused is not None:
        reason = unfused
    region = wf.input.get("region")
    if region:
        box = region_box(region, result.shape, result.dims)
        result = result.isel({d: slice(a, b) for d, (a, b) in zip(result.dims, box)})
    return reason, found, result


def _not_one_stencil(i: int, op: str, params: dict) -> str:
    """Why step ``i`` (an op the registry calls a stencil) did not make one stencil here, in
    the workflow's words."""
    if params.get("nan_policy") == "omit":
        return _omit(i, op)
    if op == "laplace":
        return (f"step {i} (laplace) over some of the input's dims, or with a mode per dim, is a sum of "
                "second derivatives, not one stencil the engine runs")
    return f"step {i} ({op}) with these arguments is not one stencil the engine runs"


def _omit(i: int, op: str) -> str:
    return (f"step {i} ({op}) has nan_policy: omit, a normalized convolution (two filters and a "
            "division) that the engine does not run")


def bins_of(wf: Workflow, dtype):
    """(numpy's edges, (the kernels' edges, uniform)) of the histogram the outputs ask for
    over a result of ``dtype``, or (None, (None, True))."""
    hist = wf.outputs.get("histogram")
    if not hist:
        return None, (None, True)
    edges, kernel_edges, uniform = planned_edges(dtype, hist.get("bins", 256), hist.get("range"))
    return edges, (kernel_edges, uniform)


def _steps(wf: Workflow, ndim: int, dtype):
    """(the fused stencil chain, the scan after it or None, why the engine cannot run them or
    None)."""
    steps = list(wf.steps)
    last = steps.pop() if OPS[steps[-1][0]].scan else None
    stencils, step_dtype = [], dtype
    for i, (op, params) in enumerate(steps, 1):
        if params.get("nan_policy") == "omit" and np.dtype(step_dtype).kind == "f":
            return None, None, _omit(i, op)  # integers have no NaN: omit is the plain filter there
        stencils.append(stencil_of(OPS[op].func, ndim, step_dtype, **params))
        step_dtype = stencils[-1].result_dtype(step_dtype)
    if any(any(s.periodic) for s in stencils):  # wrap reads its halo from the far edge
        return None, None, engine.WRAP_REASON
    # task names read as the steps on the dashboard and in the summary: distconv-gaussian-laplace
    chain = fused_chain(stencils, chain_name(stencils)) if stencils else None
    if last is None:
        return chain, None, None
    # the scan runs over the chain's result
    scan = scan_step(OPS[last[0]].func, ndim, chain.result_dtype(dtype) if chain else dtype, **last[1])
    if scan.axis is None:
        return None, None, f"{last[0]} with axis: null (it scans the flattened array)"
    return chain or identity(ndim, scan.name), scan, None


def plan(wf: Workflow, gpu: bool, ndim: int, dtype, shape, storage_chunks, src_meta=None):
    """(job, numpy histogram edges or None, None), or (None, None, why the engine cannot run
    the steps)."""
    if 0 in tuple(shape):  # no blocks to cut; dask's path writes the empty output
        return None, None, f"the input is empty (shape {tuple(shape)})"
    st, scan, why = _steps(wf, ndim, dtype)
    if why is not None:
        return None, None, why
    job, edges = job_of(wf, wf.input["path"], wf.outputs["path"], st, scan, gpu, shape, dtype, storage_chunks,
                        src_meta)
    return job, edges, None


def job_of(wf: Workflow, src: str, dst: str, st, scan, gpu: bool, shape, dtype, storage_chunks, src_meta=None,
           dims=None):
    """(the engine's job of the fused chain ``st`` and ``scan`` from the Zarr array at ``src``
    (``wf``'s input, or its variable's array) to ``dst``, numpy histogram edges or None):
    ``wf``'s region (by axis, or by name with ``dims``) is its window."""
    edges, bins = bins_of(wf, scan.dtype if scan is not None else st.result_dtype(dtype))
    region = wf.input.get("region")
    window = region_box(region, shape, dims) if region else ()
    job = engine.plan(src, dst, st, shape, dtype, storage_chunks, gpu, src_meta,
                      wf.outputs.get("chunks"), bins, window, region_edges(wf.input) == "data", scan)
    return job, edges
