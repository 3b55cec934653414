"""The one list of public ops. distconv/__init__ exports it, distconv/xarray.py builds both
accessors from it, and workflow steps are looked up in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import edges, filters, histograms, kmeans, rank, reductions, scans, smooth, stencils, transpose


@dataclass(frozen=True)
class Op:
    name: str
    func: Callable                    # on numpy, cupy, dask or xarray arrays (axes)
    has_named: bool = False           # has a form on a DataArray by dim names (ops.named)
    step: bool = False                # a shape-preserving workflow step
    stencil: bool = False             # declares a Stencil on its graph layer: fusable
    scan: bool = False                # declares a ScanStep: the engine's last step

    @property
    def named(self) -> Callable | None:
        """The form on a DataArray by dim names (the accessors), or None; ops.named imports
        xarray, so it is loaded on first use."""
        if not self.has_named:
            return None
        from . import named

        return getattr(named, self.name)


def _ops():
    filter_steps = [(filters, "correlate"), (filters, "convolve"), (filters, "correlate1d"),
                    (filters, "convolve1d"), (smooth, "gaussian_filter"), (smooth, "gaussian_filter1d"),
                    (smooth, "uniform_filter"), (smooth, "uniform_filter1d"), (edges, "sobel"),
                    (edges, "prewitt"), (edges, "gaussian_laplace"),
                    (edges, "gaussian_gradient_magnitude"), (rank, "minimum_filter"),
                    (rank, "maximum_filter"), (rank, "minimum_filter1d"), (rank, "maximum_filter1d"),
                    (rank, "median_filter"), (rank, "rank_filter"), (rank, "percentile_filter"),
                    (stencils, "derivative"), (stencils, "laplace")]
    out = [Op(n, getattr(m, n), True, True, True) for m, n in filter_steps]
    scan_steps = ["scan", "cumsum", "cumprod", "cummin", "cummax"]
    out += [Op(n, getattr(scans, n), True, True, scan=True) for n in scan_steps]
    out.append(Op("histogram", histograms.histogram, True))
    for m, names in [(reductions, ("reduce", "sum", "prod", "min", "max", "mean")),
                     (histograms, ("bincount", "histogram2d")),
                     (kmeans, ("kmeans_assign", "bovw_histogram", "KMeans")),
                     (transpose, ("transpose",))]:
        out += [Op(n, getattr(m, n)) for n in names]
    return {op.name: op for op in out}


OPS = _ops()
STEPS = tuple(name for name, op in OPS.items() if op.step)
