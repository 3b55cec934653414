"""What made a lazy array, declared where dask keeps the array: on the graph layer that
computes it. A layer built by map_halo or the scan carries may record (the array it read, the
step it ran: a Stencil, a ScanStep); a later op reads it back to fuse with that step (a filter
after a filter, a histogram of a filter) and ``dc.to_zarr`` to hand the chain to the engine.
A new array (a slice, a persist, any other op) has its own layer and so declares nothing:
fusion never reaches past an array the user changed."""

from __future__ import annotations

from dask.highlevelgraph import MaterializedLayer

from ..core import keys
from ..core.arrays import array_kind

# dask config ``distconv.fuse: false`` keeps one halo pass per op (for comparison; results are
# the same), read when an op is called and when a face hands a result to the engine
FUSE_KEY = keys.FUSE.name  # (tests and benchmarks set it by this name)


def fusing() -> bool:
    """May a step fuse with the step its input declares (and the engine take a declared chain)?"""
    return bool(keys.get(keys.FUSE))


class Declared(MaterializedLayer):
    """An array's tasks, with the array they read (``source``) and the ``step`` they run."""

    def __init__(self, mapping, source, step):
        super().__init__(mapping)
        self.source, self.step = source, step


def declare(tasks: dict, made_of: tuple | None):
    """The layer of ``tasks``: a Declared one when ``made_of`` = (source, step) is given."""
    return tasks if made_of is None else Declared(tasks, *made_of)


def declared(arr, kind) -> tuple | None:
    """(source, step) when ``arr`` is a dask array whose own layer declares a step of type
    ``kind`` (or a planned array whose step is one); else None."""
    if array_kind(arr) == "planned":  # a plan's stand-in declares its step itself
        return arr.declared(kind)
    graph, name = getattr(arr, "dask", None), getattr(arr, "name", None)
    layer = None if graph is None or not hasattr(graph, "layers") else graph.layers.get(name)
    if isinstance(layer, Declared) and isinstance(layer.step, kind):
        return layer.source, layer.step
    return None
