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
from ..core.stencil import ScanStep, Stencil
from ..engine.location import join
from ..graph.declared import declared, fusing
from ..ops.registry import OPS
from .inputs import region_box, stored_input, whole_input
from .steps import step_function
from .workflow import Workflow, region_edges


def why_not(wf: Workflow) -> str | None:
    """None when the direct path may apply (direct_job has the last word), else the reason it
    does not."""
    inp = wf.input
    if wf.kind != "array":
        return "not an array workflow"
    if wf.outputs.get("codec", "zstd") != "zstd":
        return f"outputs.codec is {wf.outputs.get('codec')!r}"
    ops = [OPS[op] for op, _ in wf.steps]
    if not all(op.stencil for op in ops[:-1]) or not (ops[-1].stencil or ops[-1].scan):
        return "a step is neither a stencil nor a scan as the last step"
    hist = wf.outputs.get("histogram")
    if hist and np.ndim(hist.get("bins", 256)) == 0 and hist.get("range") is None:
        return "the histogram has no range (it needs a pass over the result first)"
    return None


def takes(wf: Workflow) -> bool:
    """Does ``wf`` run on the direct path (and write its sharded layout)?"""
    if why_not(wf) is not None or 0 in whole_input(wf).shape:
        return False
    if stored_input(wf) is None:  # a synthetic input not written yet: the steps' chain decides
        result, unfused = planned_steps(wf)
        return unfused is None and engine.stencil_chain(getattr(result, "data", result))[1] is not None
    return engine_steps(wf)[1] is not None


def engine_steps(wf: Workflow):
    """The steps over the whole input (planned; a region is the engine's window, not a cut), as
    the engine runs them: (why it cannot, None, result) or (None, (the stored input
    (engine.source.Stored), its folder or URL, the fused Stencil, the scan after it or None),
    result); ``result`` is the lazy DataArray the steps make over a dataset variable's region
    (None for an array)."""
    result, unfused = planned_steps(wf)
    dataset = hasattr(result, "dims")
    reason, found = engine.engine_chain(result.data if dataset else result)
    if found is None and unfused is not None:
        reason = unfused
    region = wf.input.get("region")
    box = region and region_box(region, result.shape, result.dims if dataset else None)
    if found is not None and found[3] is not None and region and region_edges(wf.input) == "data":
        reason = _carry_before(wf, found[3].axis, box, result.dims if dataset else None)
        found = None if reason else found
    if not dataset:
        return reason, found, None
    if region:
        result = result.isel({d: slice(a, b) for d, (a, b) in zip(result.dims, box)})
    return reason, found, result


def _carry_before(wf: Workflow, axis: int, box: tuple, dims) -> str | None:
    """Why the engine cannot scan along ``axis`` inside the region ``box`` of the whole
    result (input.region_edges: data), or None: its blocks carry from the region's start, the
    whole result's scan from the array's."""
    start = box[axis][0]
    if start == 0:
        return None
    name = f"dim {dims[axis]!r}" if dims is not None else f"axis {axis}"
    i, (op, _) = len(wf.steps), wf.steps[-1]
    return (f"step {i} ({op}) scans along {name}, which input.region starts at {start}: with input.region_edges: "
            "data its values carry the whole array's from index 0, which the engine's blocks of the region do not")


def planned_steps(wf: Workflow):
    """(the steps' lazy result over the whole input, why the first step that did not make one
    stencil or scan did not, or None), planned once per opened input of ``wf`` (a synthetic
    input is planned again once it is written: the engine reads the stored array)."""
    whole_input(wf)
    if wf.planned is None or wf.planned[0] is not wf.opened:
        wf.planned = (wf.opened, _planned(wf))
    return wf.planned[1]


def _planned(wf: Workflow):
    """planned_steps' answer, worked out. An array's steps are planned (core.planned: no graph,
    no dask) where each makes one stencil or scan step; from a step that cannot, on the lazy dask
    array (batch.steps). A dataset variable's run on its lazy DataArray."""
    result, dataset = whole_input(wf), "variable" in wf.input
    unfused = None
    with warnings.catch_warnings():
        # a dataset's storage chunks thinner than a halo: the engine cuts its own blocks, and the
        # general path, where it runs, says so as it builds its graph
        warnings.filterwarnings("ignore", message="axis .*: chunks too thin", category=DistconvWarning)
        for i, (op, params) in enumerate(wf.steps, 1):
            before, result = result, step_function(op, dataset)(result, **params)
            made = declared(result.data if dataset else result, (Stencil, ScanStep))
            if unfused is None and made is None and fusing():
                unfused = _not_one_stencil(i, op, params, before)
    return result, unfused


def _not_one_stencil(i: int, op: str, params: dict, data) -> str:
    """Why step ``i`` (an op the registry calls a stencil) did not make one stencil here over
    ``data`` (what the step took), in the workflow's words."""
    if np.dtype(data.dtype).kind == "c":
        return (f"step {i} ({op}) on {np.dtype(data.dtype)} data: the engine's blocks take real data; dask runs "
                "each step on the complex values")
    if params.get("nan_policy") == "omit":
        return _omit(i, op)
    uneven = _uneven_coordinate(op, params, data)
    if uneven:
        return (f"step {i} (derivative) along {uneven!r}, whose coordinate is not evenly spaced, takes xarray's "
                "differentiate (weights that change along it), not one stencil the engine runs")
    if OPS[op].scan and params.get("axis") is None:
        return f"step {i} ({op}) with axis: null scans the flattened array, which the engine does not"
    if op == "laplace":
        return (f"step {i} (laplace) over some of the input's dims, or with a mode per dim, is a sum of "
                "second derivatives, not one stencil the engine runs")
    return f"step {i} ({op}) with these arguments is not one stencil the engine runs"


def _uneven_coordinate(op: str, params: dict, data) -> str | None:
    """The dim a derivative step takes its spacing from, where that dim's coordinate is not
    evenly spaced (a monthly cftime axis), else None."""
    if op != "derivative" or not hasattr(data, "dims") or params.get("spacing") is not None:
        return None
    from ..ops.named_stencils import _spacing

    dim = params.get("dim")
    try:
        h = _spacing(data, dim, params.get("accuracy", 2), params.get("order", 1), params.get("datetime_unit"))
    except (ValueError, KeyError, TypeError):  # refused by the step itself, with its own words
        return None
    return dim if h is None else None


def _omit(i: int, op: str) -> str:
    return (f"step {i} ({op}) has nan_policy: omit, a normalized convolution (two filters and a "
            "division) that the engine does not run")


def why_reader(job) -> str | None:
    """Why the engine's blocks decode ``job``'s input with zarr-python's codec pipeline rather
    than the fast one (zarrs), in the user's words, as planned from the input's metadata; None
    where zarrs reads it. (distconv's own chunk and shard readers, nvCOMP on a GPU, take only
    the layouts they read: shards and plain chunks of zstd, little-endian; any other layout is
    decoded by the pipeline.)"""
    source = job.source
    if source is None or source.why is None:
        return None
    return f"the input is decoded by zarr-python's codec pipeline: {source.why}"


def bins_of(wf: Workflow, dtype):
    """(numpy's edges, (the kernels' edges, uniform)) of the histogram the outputs ask for
    over a result of ``dtype``, or (None, (None, True))."""
    hist = wf.outputs.get("histogram")
    if not hist:
        return None, (None, True)
    from ..ops.bin_edges import planned_edges

    edges, kernel_edges, uniform = planned_edges(dtype, hist.get("bins", 256), hist.get("range"))
    return edges, (kernel_edges, uniform)


def direct_job(wf: Workflow, gpu: bool):
    """(the engine's job, numpy histogram edges or None, None), or (None, None, why the engine
    cannot run the steps)."""
    return direct_plan(wf, gpu)[:3]


def direct_plan(wf: Workflow, gpu: bool):
    """direct_job's (job, edges, why), then the zarr.Array the job reads and, for a dataset
    variable, the lazy DataArray of its result over the region (the output dataset's frame)."""
    shape = whole_input(wf).shape
    if 0 in tuple(shape):  # no blocks to cut; dask's path writes the empty output
        return None, None, f"the input is empty (shape {tuple(shape)})", None, None
    why, found, result = engine_steps(wf)
    if found is None:
        return None, None, why, None, None
    stored, _, st, scan = found
    dst = str(wf.outputs["path"])
    if result is not None:  # a dataset variable: its array inside the output dataset
        from ..engine.storage import dataset_array_name

        dst = join(dst, dataset_array_name(result))
    job, edges = build_job(wf, stored, dst, st, scan, gpu, None if result is None else list(map(str, result.dims)))
    return job, edges, None, stored, result


def build_job(wf: Workflow, stored, dst: str, st, scan, gpu: bool, dims=None):
    """(the engine's job of the fused chain ``st`` and ``scan`` from the stored array ``stored``
    (engine.source.Stored: ``wf``'s input, or its variable's array) to ``dst``, numpy histogram
    edges or None): ``wf``'s region (by axis, or by name with ``dims``) is its window."""
    edges, bins = bins_of(wf, scan.dtype if scan is not None else st.result_dtype(stored.dtype))
    region = wf.input.get("region")
    window = region_box(region, stored.shape, dims) if region else ()
    job = engine.plan_job(stored, dst, st, gpu, scan=scan, bins=bins, window=window,
                          edges_data=region_edges(wf.input) == "data", out_chunks=wf.outputs.get("chunks"))
    return job, edges
