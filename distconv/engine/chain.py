"""What the engine runs of a lazy result: the fused stencil chain (and the scan after it) that
its graph layers declare over a Zarr array read whole, planned into a job, or why the engine
cannot take it (then dask's path writes it, and the face says why)."""

from __future__ import annotations

from dataclasses import dataclass

from ..backends.devices import gpu_blocks  # noqa: F401 - the one GPU probe, as engine.gpu_blocks
from ..core.arrays import array_kind
from ..core.stencil import ScanStep, Stencil, identity
from ..graph.declared import declared, fusing
from .plan import Job, plan_job
from .source import Stored


@dataclass(frozen=True)
class Plan:
    """A write's plan: the engine's ``job``, or else dask's writes of ``data`` (``why``: the
    reason the engine does not run it, in the user's words)."""
    job: Job | None = None
    data: object = None
    why: str | None = None


def engine_chain(data):
    """(None, (the stored array ``data`` reads (engine.source.Stored), its folder or URL, the
    fused Stencil made of it, the scan after it or None)), or (why the engine cannot run
    ``data``, None). ``data``: a lazy dask array, or a planned one (core.planned)."""
    why, made = stencil_chain(data)
    if made is None:
        return why, None
    source, st, scan = made
    if array_kind(source) == "planned":
        if not source.is_root:
            return NOT_WHOLE, None
        if source.source is None:
            return "the input is not written yet", None
        return None, (source.source, source.source.path, st, scan)
    from . import storage

    z, why = storage.zarr_source(source)
    if z is None:
        return why, None
    src, why = storage.store_path(z)
    if src is None:
        return why, None
    return None, (Stored.of_zarr(z, src), src, st, scan)


NOT_WHOLE = "the input is not a Zarr array read whole (sliced, rechunked or computed first)"


def stencil_chain(data):
    """(None, (the array ``data``'s declared chain reads, the fused Stencil, the scan after it
    or None)), or (why ``data`` is not such a chain, None): what engine_chain asks before the
    array it reads."""
    if array_kind(data) not in ("dask", "planned"):
        return f"a {array_kind(data)} array, not a lazy one read from Zarr", None
    data, scan = declared(data, ScanStep) or (data, None)
    fused = declared(data, Stencil) if fusing() else None
    if fused is None and scan is None:
        if getattr(data.dtype, "kind", "") == "c":
            return (f"the data are {data.dtype}: the engine's blocks take real data, and dask runs each step on "
                    "the complex values"), None
        if not fusing():
            return "distconv.fuse is off (the engine runs a fused chain of distconv stencils)", None
        return ("its last step is not a distconv stencil or scan but arithmetic, a slice or another dask "
                "operation (laplace over some of the dims, or with a mode per dim, is a sum of second "
                "derivatives; nan_policy='omit' divides two filters)"), None
    source, st = fused if fused is not None else (data, identity(data.ndim, scan.name))
    if any(st.periodic):
        return WRAP_REASON, None
    return None, (source, st, scan)


WRAP_REASON = "a step's mode is wrap (its halo comes from the far edge of the array)"


def plan_write(data, dst: str, gpu: bool, bins=(None, True), out_chunks=None, window=(), edges_data=False,
               out_inner=None) -> Plan:
    """The plan of writing the lazy result ``data`` to ``dst``: the engine's job where it takes
    the chain (``bins``, ``out_chunks``, ``window``, ``edges_data``, ``out_inner``: as plan_job's), else
    dask's writes of ``data`` and why."""
    why, found = engine_chain(data)
    if found is None:
        return Plan(data=data, why=why)
    stored, _, st, scan = found
    return Plan(job=plan_job(stored, dst, st, gpu, scan=scan, bins=bins, window=window, edges_data=edges_data,
                             out_chunks=out_chunks, out_inner=out_inner))

