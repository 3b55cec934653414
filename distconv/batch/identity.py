"""What writes an output, recorded in its owner mark so that --resume continues only the same
job: the steps and everything else that decides the output's values and layout, and the
input's identity (path, shape, dtype and a stamp of its files that changes when they do)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ..engine.location import Location
from .inputs import lazy_input
from .outputs import jsonable
from .workflow import Workflow, region_edges


def output_identity(wf: Workflow) -> dict:
    """The job of ``wf`` as plain JSON values; the input's stamp is None while it does not
    exist yet (a synthetic input the run writes first)."""
    inp = wf.input
    where = Location(inp["path"])
    arr = lazy_input(wf)
    return jsonable({
        "steps": [[op, params] for op, params in wf.steps],
        "variable": inp.get("variable"),
        "region": inp.get("region"),
        "region_edges": region_edges(inp),
        "layout": {"sharded": _direct(wf), "codec": wf.outputs.get("codec", "zstd"),
                   "chunks": wf.outputs.get("chunks")},
        "input": {"path": where.key(), "shape": list(arr.shape), "dtype": str(arr.dtype),
                  "stamp": where.stamp() if where.exists() else None},
        "distconv": _version(),
    })


def _direct(wf: Workflow) -> bool:
    """Does the run write the direct path's sharded layout (else zarr's plain chunks)?"""
    from .direct import takes

    return takes(wf)


def _version() -> str:
    try:
        return version("distconv")
    except PackageNotFoundError:
        return "unknown"
