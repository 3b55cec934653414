"""distconv: convolution, stencils, scans, reductions, histograms and k-means over large
N-D arrays (numpy, cupy, dask, xarray), on every GPU of a node.

Importing distconv never imports cupy and never touches a GPU.
"""

from .ops.registry import OPS as _OPS

globals().update({_name: _op.func for _name, _op in _OPS.items()})
__all__ = [*_OPS, "cluster", "to_zarr"]

from . import xarray as _xarray_accessor  # noqa: E402,F401  (registers .distconv)
from .cluster import cluster  # noqa: E402,F401  (the function; the module stays importable)
from .ops.stores import to_zarr  # noqa: E402,F401  (Zarr out through the engine)

__version__ = "0.1.0"
