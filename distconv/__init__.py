"""distconv: convolution, stencils, scans, reductions, histograms and k-means over large
N-D arrays (numpy, cupy, dask, xarray), on every GPU of a node.

Importing distconv never imports cupy and never touches a GPU.
"""

from .api import (  # noqa: F401
    convolve,
    convolve1d,
    correlate,
    correlate1d,
    gaussian_filter,
    reduce,
    scan,
    transpose,
)
from .kmeans import KMeans, bovw_histogram, kmeans_assign  # noqa: F401
from .histograms import bincount, histogram, histogram2d  # noqa: F401
from .stencil import derivative, laplace  # noqa: F401
from .numpy_names import cummax, cummin, cumprod, cumsum, max, mean, min, prod, sum  # noqa: F401,A004

from . import xarray as _xarray_accessor  # noqa: E402,F401  (registers .distconv)
from .cluster import cluster  # noqa: E402,F401  (the function; the module stays importable)

__version__ = "0.1.0"
