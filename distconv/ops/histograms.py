"""Public histograms: numpy semantics (edges, closed last bin, dropped out-of-range values,
numpy's errors), on numpy, cupy, dask and xarray inputs."""

from __future__ import annotations

import builtins
import math
import operator
from functools import partial

import numpy as np

from .. import backends
from ..core import checks
from ..core.ops import FAN_IN
from . import docs
from .bin_edges import bin_edges, check_range, edge_dtype, finite_range


def _data(x, name="x"):
    x = checks.as_array(x, name)
    return x.data if checks.array_kind(x) == "xarray" else x


def _check_weights(weights, x, name="weights"):
    if weights is None:
        return None
    w = _data(weights, name)
    if tuple(w.shape) != tuple(x.shape):
        raise ValueError(f"{name} must have the shape of x {tuple(x.shape)}, got {tuple(w.shape)}")
    return w


def check_weight_dims(weights, obj):
    """``weights`` (a DataArray) refused by name where it cannot give each value of ``obj`` a
    weight: a dim the data lack, or a dim whose values it covers only in part (broadcasting
    would give the rest NaN weights, and NaN bins; xarray's ``.weighted`` refuses them too).
    Returns ``weights``."""
    extra = [d for d in weights.dims if d not in obj.dims]
    if extra:
        raise ValueError(f"weights has dims {tuple(extra)} that the data lack; the data's dims are "
                         f"{tuple(obj.dims)}, the weights' {tuple(weights.dims)}")
    for d in weights.dims:
        n, m = obj.sizes[d], weights.sizes[d]
        if d in obj.indexes and d in weights.indexes:
            covered = int(obj.indexes[d].isin(weights.indexes[d]).sum())
        elif m != n:
            raise ValueError(f"weights has {m} values along dim {d!r}, the data {n}; give one weight per value")
        else:
            covered = n
        if covered < n:
            raise ValueError(f"weights cover only part of dim {d!r}: {covered} of its {n} values have a weight; "
                             f"give every value of {d!r} a weight (the rest would count as NaN)")
    return weights


def _counts(func, arrays, shape, weighted, bins=None):
    """Run ``func`` per chunk and merge (dask), or once (numpy/cupy); ``bins`` = (edges,
    uniform) when ``func`` counts into them."""
    x = arrays[0]
    if checks.array_kind(x) == "dask":
        from ..graph import merge
        from .stencil_ops import apply_stencil, fused_source

        dtype = np.float64 if weighted else np.int64
        fused = fused_source(x)
        if fused is not None and len(arrays) == 1:  # count inside the stencil's own tasks
            source, st = fused
            return merge.merge(apply_stencil(source, st, per_chunk=shape, out_func=func, dtype=dtype,
                                             bins=None if weighted else bins))
        rest = merge.unify(x, *[merge.as_dask_like(x, a) for a in arrays[1:]])
        parts = merge.per_chunk(func, [x, *rest], shape, dtype)
        return merge.merge(parts)
    return func(*arrays)


@docs.fill
def histogram(x, bins=10, range=None, weights=None, density=False):  # noqa: A002
    """Histogram of an array's values, as numpy.histogram.

    numpy's semantics: ``bins`` equal bins over ``range`` (or the given edges), every bin
    half-open but the last, which holds its right edge; values outside the range are dropped.
    Without a ``range``, NaN is missing data: the range comes from the other values and NaN
    falls in no bin (numpy refuses NaN there); data holding +inf or -inf raise ValueError, as
    numpy's do. Integer counts are exact and the same for every chunking; weighted sums
    accumulate in float64 (on a GPU with atomics, so their last bits may vary between runs)
    and come back in the weights' dtype, as numpy's do.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data, of any shape (every value counts).
    bins : int or sequence of scalars, optional
        The number of equal bins (default 10), or the bin edges, increasing.
    range : (float, float), optional
        The lower and upper edge of the equal bins; values outside it (+inf and -inf among
        them) are dropped. Default: the data's minimum and maximum, NaN left out (a first pass
        over the data, which a dask input computes at once, with a warning; pass ``range`` to
        stay lazy).
    weights : array_like, optional
        A weight for each value of ``x`` (same shape), summed instead of counting 1.
    density : bool, optional
        True: the counts divided by their total and the bin widths, so the histogram
        integrates to 1. Default False.

    Returns
    -------
    hist : ndarray, cupy.ndarray or dask.array.Array
        The counts per bin: int64 (float64 for ``density``; the weights' dtype with
        ``weights``). Of the data's kind (an xarray input gives its data's kind; the
        accessor's ``histogram`` gives a DataArray); lazy for a dask input.
    bin_edges : ndarray
        The ``len(hist) + 1`` edges, a numpy array for every input kind.

    Raises
    ------
    ValueError
        ``bins`` below 1, or edges not increasing or fewer than 2; a ``range`` that is not a
        finite (min, max) pair with min <= max; without ``range``, data holding +inf or
        -inf (numpy's error) or nothing but NaN; ``weights`` of another shape than ``x``.
    TypeError
        ``x`` of a dtype distconv does not process (complex, float16, object, strings), or
        ``bins`` neither an integer nor edges.

    See Also
    --------
    histogram2d : Of pairs of values.
    bincount : Counts of non-negative integers.
    numpy.histogram : The reference on numpy arrays.

    Examples
    --------
    >>> hist, edges = dc.histogram(np.array([1, 2, 2, 3, 3, 3]), bins=3)
    >>> hist.tolist(), edges.round(3).tolist()
    ([1, 2, 3], [1.0, 1.667, 2.333, 3.0])
    >>> dc.histogram(np.array([0.5, 1.5, np.nan, 9.0]), bins=[0, 1, 2])[0].tolist()
    [1, 1]
    >>> w = np.array([1.0, 0.5, 0.5, 2])
    >>> dc.histogram(np.array([1, 2, 2, 3]), bins=2, range=(0, 4), weights=w)[0].tolist()
    [1.0, 3.0]
    """
    x = _data(x)
    w = _check_weights(weights, x)
    edges, uniform = bin_edges(x, bins, range)
    e = edge_dtype(x.dtype, edges)
    fn = partial(_hist_block, edges=e, uniform=uniform)
    arrays = [x] if w is None else [x, w]
    hist = _counts(fn, arrays, (len(e) - 1,), w is not None, (e, uniform))
    if w is not None:  # numpy returns the weights' dtype (sums accumulate in float64 here)
        hist = hist.astype(w.dtype)
    if density:
        db = np.diff(edges).astype(np.float64)
        hist = hist / db / hist.sum()
    return hist, edges


def _hist_block(xb, wb=None, *, edges, uniform):
    return backends.counts(xb, edges, uniform, wb)


def histogram_along(x, axes, bins=10, range=None, weights=None, density=False):  # noqa: A002
    """numpy.histogram of every slice along ``axes``: counts shaped (the other axes in order...,
    bins), with one set of edges for every slice (``range``, or the whole data's min and max).
    dask in -> one task per chunk counting each of its slices, then a tree sum over the chunks
    of ``axes``; numpy or cupy in -> the same kind out."""
    x = _data(x)
    w = _check_weights(weights, x)
    axes = sorted({checks.axis(a, x.ndim) for a in axes})
    edges, uniform = bin_edges(x, bins, range)
    e = edge_dtype(x.dtype, edges)
    keep = [a for a in builtins.range(x.ndim) if a not in axes]
    order, nk, nbins = keep + axes, len(keep), len(e) - 1
    fn = partial(_slices_block, nkeep=nk, edges=e, uniform=uniform)
    same = order == list(builtins.range(x.ndim))
    arrays = [a if same else a.transpose(order) for a in ([x] if w is None else [x, w])]
    if checks.array_kind(x) == "dask":
        from ..graph import merge

        xt, *rest = arrays
        rest = merge.unify(xt, *[merge.as_dask_like(xt, a) for a in rest])
        dtype = np.float64 if w is not None else np.int64
        counted = tuple(builtins.range(nk, x.ndim))
        if all(len(xt.chunks[a]) == 1 for a in counted):  # each slice whole in one chunk: no merge
            hist = xt.map_blocks(_squeezed, *rest, fn=fn, nkeep=nk, drop_axis=counted, new_axis=nk,
                                 chunks=xt.chunks[:nk] + ((nbins,),), name="distconv-hist-slices",
                                 dtype=dtype)
        else:
            chunks = xt.chunks[:nk] + tuple((1,) * len(xt.chunks[a]) for a in counted) + ((nbins,),)
            parts = xt.map_blocks(fn, *rest, new_axis=x.ndim, chunks=chunks, name="distconv-hist-slices",
                                  dtype=dtype)
            hist = parts.sum(axis=counted, split_every=FAN_IN)
    else:
        hist = fn(*arrays).reshape(tuple(x.shape[a] for a in keep) + (nbins,))
    if w is not None:
        hist = hist.astype(w.dtype)
    if density:
        db = np.diff(edges).astype(np.float64)
        hist = hist / db / hist.sum(axis=-1, keepdims=True)
    return hist, edges


def _squeezed(xb, wb=None, *, fn, nkeep):
    """_slices_block's counts without the counted axes (size 1 each)."""
    out = fn(xb, wb)
    return out.reshape(out.shape[:nkeep] + out.shape[-1:])


def _slices_block(xb, wb=None, *, nkeep, edges, uniform):
    """Counts of each slice of a block along its last axes: (kept shape, 1 per counted axis, bins)."""
    kshape = xb.shape[:nkeep]
    out = backends.counts(xb, edges, uniform, wb, rows=math.prod(kshape))
    return out.reshape(kshape + (1,) * (xb.ndim - nkeep) + (len(edges) - 1,))


@docs.fill
def bincount(x, weights=None, minlength=0):
    """Count the occurrences of each non-negative integer, as numpy.bincount.

    ``out[i]`` is the number of times ``i`` occurs in ``x`` (or the sum of the weights where it
    does). The output's length is ``max(x) + 1`` (at least ``minlength``), which takes a first
    pass over the data: a dask input computes it at once, with a warning. Integer counts are
    exact and the same for every chunking.

    Parameters
    ----------
    x : array_like
        1-D non-negative integers (or bools): a numpy, cupy, dask or xarray array.
    weights : array_like, optional
        A weight for each value of ``x`` (same shape); sums in float64.
    minlength : int, optional
        The output's least length. Default 0.

    Returns
    -------
    out : ndarray, cupy.ndarray or dask.array.Array
        int64 counts (float64 sums with ``weights``), of the data's kind.

    Raises
    ------
    ValueError
        ``x`` not 1-D or holding a negative value, a negative ``minlength``, or ``weights``
        of another shape than ``x``.
    TypeError
        ``x`` not of integers (or bools), or a non-integer ``minlength``.

    See Also
    --------
    histogram : Counts in bins of any values.
    numpy.bincount : The reference on numpy arrays.

    Examples
    --------
    >>> dc.bincount(np.array([0, 1, 1, 3])).tolist()
    [1, 2, 0, 1]
    >>> dc.bincount(np.array([0, 1, 1, 3]), minlength=6).tolist()
    [1, 2, 0, 1, 0, 0]
    >>> dc.bincount(np.array([0, 1, 1]), weights=np.array([0.5, 1, 2])).tolist()
    [0.5, 3.0]
    """
    x = _data(x)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D for bincount, got {x.ndim} dimensions")
    if x.size == 0 and x.dtype.kind == "f":  # numpy casts an empty list's float64 safely
        x = x.astype(np.int64)
    if x.dtype.kind not in "iub":
        raise TypeError(f"x must hold integers for bincount, got dtype {x.dtype}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"minlength must not be negative, got {minlength}")
    w = _check_weights(weights, x)
    nbins = minlength
    if x.size:
        lo, hi = finite_range(x, "bincount computes the input's min and max now (a full pass "
                                  "over it): numpy's output size is max(x) + 1")
        if lo < 0:
            raise ValueError(f"x must have no negative elements for bincount, found {lo}")
        nbins = nbins if nbins > int(hi) else int(hi) + 1
    fn = partial(_bincount_block, nbins=nbins)
    return _counts(fn, [x] if w is None else [x, w], (nbins,), w is not None)


def _bincount_block(xb, wb=None, *, nbins):
    return backends.bincount(xb, nbins, wb)


@docs.fill
def histogram2d(x, y, bins=10, range=None, weights=None, density=False):  # noqa: A002
    """Two-dimensional histogram of pairs of values, as numpy.histogram2d.

    ``H[i, j]`` counts the pairs ``(x[k], y[k])`` with ``x[k]`` in x-bin i and ``y[k]`` in
    y-bin j, numpy's bins (the last of each axis closed); without a ``range`` each axis's
    comes from its values but NaN (which falls in no bin), and data holding +inf or -inf raise
    ValueError, as numpy's do. Counts are exact and the same for every chunking.

    Parameters
    ----------
    x, y : array_like
        1-D arrays of one length (numpy, cupy, dask or xarray): the pairs' coordinates.
    bins : int, array_like or [int, int] or [array, array], optional
        The number of bins for both axes (default 10), the edges for both, or one of either
        per axis.
    range : [[xmin, xmax], [ymin, ymax]], optional
        The outer edges per axis (default: the data's minimum and maximum, NaN left out, a
        first pass over the data, which a dask input computes at once).
    weights : array_like, optional
        A weight for each pair (the shape of ``x``), summed instead of counting 1.
    density : bool, optional
        True: the counts divided by their total and the bin areas. Default False.

    Returns
    -------
    H : ndarray, cupy.ndarray or dask.array.Array
        float64 counts, shape ``(nx, ny)``, of the data's kind (lazy for dask).
    xedges, yedges : ndarray
        The bin edges along each axis (numpy arrays).

    Raises
    ------
    ValueError
        ``x`` and ``y`` not 1-D of one length, ``bins`` below 1 or edges not increasing, a
        ``range`` that is not a pair of finite (min, max) pairs, without ``range`` data holding
        +inf or -inf, or ``weights`` of another shape than ``x``.
    TypeError
        ``x`` or ``y`` of a dtype distconv does not process (complex, float16, object,
        strings).

    See Also
    --------
    histogram : Of one array's values.
    numpy.histogram2d : The reference on numpy arrays.

    Examples
    --------
    >>> H, xe, ye = dc.histogram2d(np.array([0.0, 1, 1, 2]), np.array([0.0, 0, 1, 2]), bins=2)
    >>> H.tolist()
    [[1.0, 0.0], [1.0, 2.0]]
    >>> xe.tolist(), ye.tolist()
    ([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    """
    x, y = _data(x, "x"), _data(y, "y")
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of one length, got shapes {x.shape} and {y.shape}")
    w = _check_weights(weights, x)
    try:  # numpy's reading of bins: an int, a pair (ints or edge arrays), or one edge array
        count = len(bins)
    except TypeError:
        count = 1
    if count == 1:
        nb = (bins, bins) if np.ndim(bins) == 0 else (bins[0], bins[0])
    elif count == 2:
        nb = tuple(bins)
    else:
        nb = (np.asarray(bins), np.asarray(bins))
    rng = (None, None) if range is None else tuple(range)
    if len(rng) != 2:
        raise ValueError(f"range must be a pair of (min, max) pairs, got {range!r}")
    edges = []
    for name, data, b, r in zip("xy", (x, y), nb, rng):
        if np.ndim(b) == 0:
            n = operator.index(b)
            if n < 1:
                raise ValueError(f"bins must be positive integers, got {bins!r}")
            lo, hi = check_range(r) if r is not None else finite_range(data, of=name)
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges.append(np.linspace(lo, hi, n + 1))
        else:
            e = np.asarray(b, dtype=np.float64)
            if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) < 0):
                raise ValueError("`bins` must be monotonically increasing, when an array")
            edges.append(e)
    fn = partial(_hist2d_block, xedges=edges[0], yedges=edges[1])
    shape = (len(edges[0]) - 1, len(edges[1]) - 1)
    arrays = [x, y] if w is None else [x, y, w]
    hist = _counts(fn, arrays, shape, w is not None).astype(np.float64)
    if density:
        hist = hist / np.diff(edges[0])[:, None] / np.diff(edges[1])[None, :] / hist.sum()
    return hist, edges[0], edges[1]


def _hist2d_block(xb, yb, wb=None, *, xedges, yedges):
    return backends.counts2d(xb, yb, xedges, yedges, wb)
