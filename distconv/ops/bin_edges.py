"""A histogram's bin edges as numpy.histogram makes them: the range (given, or the data's
finite min and max), the edges' dtype, and the edges a plan knows before the data are read."""

from __future__ import annotations

import operator

import numpy as np

from ..core import checks
from ..core.arrays import to_host
from .reductions import max as _max
from .reductions import min as _min


def finite_range(x, why: str = "histogram without range computes the min and max of the data now (a full "
                                 "pass over the input; NaN is left out, as it falls in no bin); pass "
                                 "range=(lo, hi) to stay lazy", of: str = "the data"):
    """The autodetected range: (min, max) of the data's values but NaN (missing data, which
    falls in no bin), numpy's where no value is NaN; numpy's ValueError where that range is not
    finite (the data hold +inf or -inf). ``why``: the warning a dask input gets, since this
    computes; ``of``: the data, as the error names them."""
    if x.size == 0:
        return 0, 1
    if np.dtype(x.dtype).kind == "f":  # NaN (a masked land, a gap) does not stretch the range
        nan = np.isnan(x)
        lo, hi = _min(np.where(nan, np.inf, x)), _max(np.where(nan, -np.inf, x))
    else:
        lo, hi = _min(x), _max(x)
    if checks.array_kind(x) == "dask":
        import dask

        checks.warn_user(why)
        lo, hi = dask.compute(lo, hi)
    lo, hi = to_host(lo)[()], to_host(hi)[()]  # numpy scalars of the data's dtype, as numpy uses
    if lo > hi:  # all NaN: nothing to take a range from
        raise ValueError(f"range=None takes the range from the min and max of {of}, and {of} hold no "
                         "value but NaN; pass range=(lo, hi)")
    if not (np.isfinite(lo) and np.isfinite(hi)):  # numpy's error, in its words first
        raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite: range=None takes the range "
                         f"from the min and max of {of}, which hold {'-inf' if np.isinf(lo) else 'inf'}; "
                         "pass a finite range=(lo, hi) (values outside it, inf included, are dropped)")
    return lo, hi


def bin_edges(x, bins=10, range=None):  # noqa: A002 - numpy's name
    """The edges numpy.histogram would use for ``x`` (a first min/max pass when needed)."""
    if isinstance(bins, str):
        raise ValueError(f"bins must be a positive integer or an array of edges, got {bins!r}")
    if np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError:
            raise TypeError(f"bins must be an integer or an array of edges, got {bins!r}") from None
        if n < 1:
            raise ValueError(f"bins must be a positive integer, got {bins}")
        if range is not None:
            lo, hi = check_range(range)
        else:
            lo, hi = finite_range(x)
        return np.histogram_bin_edges(np.empty(0, dtype=x.dtype), n, range=(lo, hi)), True
    edges = to_host(bins) if hasattr(bins, "get") else np.asarray(bins)
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(f"bins as edges must be 1-D with at least 2 values, got shape {edges.shape}")
    if np.any(edges[:-1] > edges[1:]):
        raise ValueError("`bins` must increase monotonically, when an array")
    return edges, False


def check_range(range):  # noqa: A002
    """(lo, hi) as given: their types decide numpy's edge dtype (a float64 scalar makes float64
    edges for float32 data, a Python float does not)."""
    try:
        lo, hi = range
        flo, fhi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValueError(f"range must be a pair (min, max), got {range!r}") from None
    if not (np.isfinite(flo) and np.isfinite(fhi)):
        raise ValueError(f"supplied range of [{flo}, {fhi}] is not finite")
    if flo > fhi:
        raise ValueError(f"max must be larger than min in range parameter, got {range!r}")
    return lo, hi


def edge_dtype(x_dtype, edges):
    e = np.result_type(x_dtype, edges.dtype)
    return edges.astype(np.float32 if e == np.float32 else np.float64)


def planned_edges(dtype, bins, range):  # noqa: A002
    """(numpy's edges, the edges the kernels bin with, uniform?) for data of ``dtype`` when the
    edges are known without looking at the data (an explicit range, or explicit edges)."""
    if np.ndim(bins) == 0 and range is None:
        raise ValueError("a histogram planned before the data is read needs 'range'")
    probe = np.empty(0, dtype=dtype)
    edges, uniform = bin_edges(probe, bins, range)
    return edges, edge_dtype(np.dtype(dtype), edges), uniform
