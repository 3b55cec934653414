"""Per-block work, one dispatch for every op: a numpy block (or a Tile of numpy blocks) runs
backends/numpy (scipy/numpy: the CPU path and the test oracle), a cupy block runs
backends/cuda (launchers of kernels/*.cu). Both backends define every function named in
FAMILIES with the same signature (a test checks it); neither knows about dask.

cupy is imported only when a cupy block arrives, i.e. on the worker, never at import.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..core.arrays import is_cupy

# family (a module in each backend) -> the per-block functions it provides
FAMILIES = {
    "convolve": ("correlate", "correlate_passes", "correlate_pair"),
    "terms": ("correlate_terms",),
    "rank": ("rank", "extremum_passes", "rank_omit"),
    "scan": ("scan",),
    "reduce": ("reduce",),
    "histogram": ("counts", "bincount", "counts2d"),
    "kmeans": ("assign", "bovw", "partial_sums"),
    "transpose": ("transpose",),
    "zstd": ("encode_frames", "decode_frames"),
}


# per-block functions that take ``out=`` (an array of the result's shape and dtype to fill and
# return): the dask layer hands them slices of one GPU-sized block (graph/groups.py)
TAKES_OUT = {"correlate", "correlate_passes", "correlate_pair", "scan"}


def backend_of(block) -> str:
    """'cuda' for a cupy block (or a Tile whose centre is one), else 'numpy'."""
    return "cuda" if is_cupy(getattr(block, "centre", block)) else "numpy"


def implementation(family: str, name: str, backend: str):
    if name not in FAMILIES.get(family, ()):
        raise KeyError(f"no per-block function {family}.{name}")
    return getattr(importlib.import_module(f"{__name__}.{backend}.{family}"), name)


@dataclass(frozen=True)
class Dispatch:
    """``family.name`` of whichever backend owns the first argument; picklable, so it can sit
    in a dask task."""

    family: str
    name: str

    @property
    def accepts_out(self) -> bool:
        return self.name in TAKES_OUT

    def __call__(self, block, *args, **kwargs):
        return implementation(self.family, self.name, backend_of(block))(block, *args, **kwargs)

    def bind(self, **params) -> "Call":
        """This function with its keywords, as a declared value (a stencil's step)."""
        return Call(self, params)


@dataclass(frozen=True, eq=False)
class Call:
    """One per-block call declared, ``function(block, **params)``: what a stencil runs, which
    the code that fuses steps reads by name and keywords (ops/filters.py pairs a separable
    pass with the mask after it); picklable, so it can sit in a dask task."""

    function: Dispatch
    params: dict

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def accepts_out(self) -> bool:
        return self.function.accepts_out

    def __call__(self, block, out=None):
        if out is None:
            return self.function(block, **self.params)
        return self.function(block, **self.params, out=out)


correlate = Dispatch("convolve", "correlate")
correlate_passes = Dispatch("convolve", "correlate_passes")
correlate_pair = Dispatch("convolve", "correlate_pair")
correlate_terms = Dispatch("terms", "correlate_terms")
rank = Dispatch("rank", "rank")
extremum_passes = Dispatch("rank", "extremum_passes")
rank_omit = Dispatch("rank", "rank_omit")
scan = Dispatch("scan", "scan")
reduce = Dispatch("reduce", "reduce")
counts = Dispatch("histogram", "counts")
bincount = Dispatch("histogram", "bincount")
counts2d = Dispatch("histogram", "counts2d")
kmeans_assign = Dispatch("kmeans", "assign")
bovw = Dispatch("kmeans", "bovw")
partial_sums = Dispatch("kmeans", "partial_sums")
transpose = Dispatch("transpose", "transpose")
