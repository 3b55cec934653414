"""The one list of public ops. distconv/__init__ exports it, distconv/xarray.py builds both
accessors from it, and workflow steps are looked up in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import filters, histograms, kmeans, named, reductions, scans, stencils, transpose


@dataclass(frozen=True)
class Op:
    name: str
    func: Callable                    # on numpy, cupy, dask or xarray arrays (axes)
    named: Callable | None = None     # on a DataArray by dim names (the accessors)
    step: bool = False                # a shape-preserving workflow step
    stencil: bool = False             # plans to a Stencil (filters.stencil_of): fusable


def _ops():
    steps = [(filters, "correlate"), (filters, "convolve"), (filters, "correlate1d"),
             (filters, "convolve1d"), (filters, "gaussian_filter"), (stencils, "derivative"),
             (stencils, "laplace"), (scans, "scan"), (scans, "cumsum"), (scans, "cumprod"),
             (scans, "cummin"), (scans, "cummax")]
    out = [Op(n, getattr(m, n), getattr(named, n), True, m in (filters, stencils)) for m, n in steps]
    out.append(Op("histogram", histograms.histogram, named.histogram))
    for m, names in [(reductions, ("reduce", "sum", "prod", "min", "max", "mean")),
                     (histograms, ("bincount", "histogram2d")),
                     (kmeans, ("kmeans_assign", "bovw_histogram", "KMeans")),
                     (transpose, ("transpose",))]:
        out += [Op(n, getattr(m, n)) for n in names]
    return {op.name: op for op in out}


OPS = _ops()
STEPS = tuple(name for name, op in OPS.items() if op.step)
