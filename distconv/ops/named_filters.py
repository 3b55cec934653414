"""The scipy.ndimage filters on an xarray DataArray by dim names: each runs along the dims its
leading per-dim argument names (sigma={"lat": 1, "lon": 2}, size={"lon": 3}, a footprint
DataArray, dims=, dim=) and leaves the others alone; every per-dim argument is read by
ops/per_dim.py, before any work. Here the linear filters; the edge filters are in
ops/named_edges.py, the rank filters in ops/named_rank.py; ops/named.py lists them all with
the other ops by dim names."""

from __future__ import annotations

import numpy as np

from . import docs, filters, smooth
from .per_dim import Dims

# One value for every dim where scipy's filter takes one (ops/per_dim.py: Dims.one).
ONE_CVAL = "scipy's filters take one cval"
ONE_MODE_MASK = "scipy's correlate and convolve take one mode"
ONE_MODE_RANK = "scipy's rank filters take one mode"
ONE_MODE_FOOTPRINT = "scipy's minimum and maximum filters take one mode over a footprint that is not a box"


def one_cval(along, cval) -> float:
    """The one cval scipy's filters take (given once, or alike for every dim)."""
    return along.one(cval, "cval", 0.0, ONE_CVAL)


def _masked(op, obj, weights, dims, mode, cval, origin):
    """``op`` (correlate, convolve) with a mask over ``dims`` (one mask axis per entry, in
    that order) along those dims alone."""
    along = Dims.given(obj, dims)
    w = np.asarray(weights)
    if w.ndim != len(along.named):
        raise ValueError(f"weights have {w.ndim} dimensions but dims names {len(along.named)}: "
                         f"{list(along.named)}")
    w = np.transpose(w, [along.named.index(d) for d in along.dims])  # to the array's order
    return op(obj, w, along.one_mode(mode, ONE_MODE_MASK), one_cval(along, cval),
              along.values(origin, "origin", 0), axes=along.axes)


_NAMED_CORRELATE_DOC = """${Name} with a mask along named dims, as scipy.ndimage.${name}.

    ``da.distconv.${name}(weights, dims)``: :func:`distconv.${name}` with the mask's axes
    laid along ``dims``; the other dims are left alone.

    Parameters
    ----------
    weights : array_like
        The mask, one axis per entry of ``dims``, in that order.
    dims : sequence of str
        The dims the mask spans.
    {dim_one_mode}
    {dim_cval}
    {dim_origin}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}
        Also a mask with another number of axes than ``dims`` names.

    See Also
    --------
    distconv.${name} : On arrays, by axes.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_CORRELATE_DOC, name="correlate", Name="Correlation", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.correlate([1, 0, -1], dims=["x"]).values.tolist()
    [[-1, -2, -2, -1], [-1, -2, -2, -1], [-1, -2, -2, -1]]""")
def correlate(obj, weights, dims, mode="reflect", cval=0.0, origin=0):
    return _masked(filters.correlate, obj, weights, dims, mode, cval, origin)


@docs.twin(_NAMED_CORRELATE_DOC, name="convolve", Name="Convolution", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.convolve([1, 1], dims=["y"], mode="constant").values.tolist()
    [[4, 6, 8, 10], [12, 14, 16, 18], [8, 9, 10, 11]]""")
def convolve(obj, weights, dims, mode="reflect", cval=0.0, origin=0):
    return _masked(filters.convolve, obj, weights, dims, mode, cval, origin)


def along_one(obj, dim, mode, cval, origin):
    """(axis, mode, cval, origin) of a 1-D filter along ``dim``; each may be {dim: value}."""
    along = Dims.given(obj, (dim,), "dim")
    return along.axes[0], along.one_mode(mode), one_cval(along, cval), along.one(origin, "origin", 0)


_NAMED_CORRELATE_1D_DOC = """One-dimensional ${noun} along a named dim, as scipy.ndimage.${name}1d.

    ``da.distconv.${name}1d(weights, dim)``: :func:`distconv.${name}1d` along ``dim``.

    Parameters
    ----------
    weights : array_like
        The 1-D mask.
    dim : str
        The dim to filter along.
    {dim_one_mode}
    {dim_cval}
    origin : int or dict {dim: int}, optional
        Where the mask sits over each element: 0 (default) centres it.

    {outcome_named}

    See Also
    --------
    distconv.${name}1d : On arrays, by axis.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_CORRELATE_1D_DOC, name="correlate", noun="correlation", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.correlate1d([1, 1, 1], "y").values.tolist()
    [[4, 7, 10, 13], [12, 15, 18, 21], [20, 23, 26, 29]]""")
def correlate1d(obj, weights, dim, mode="reflect", cval=0.0, origin=0):
    return filters.correlate1d(obj, weights, *along_one(obj, dim, mode, cval, origin))


@docs.twin(_NAMED_CORRELATE_1D_DOC, name="convolve", noun="convolution", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.convolve1d([1, 0, -1], "x").values.tolist()
    [[1, 2, 2, 1], [1, 2, 2, 1], [1, 2, 2, 1]]""")
def convolve1d(obj, weights, dim, mode="reflect", cval=0.0, origin=0):
    return filters.convolve1d(obj, weights, *along_one(obj, dim, mode, cval, origin))


@docs.fill
def gaussian_filter(obj, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, nan_policy="propagate"):
    """Gaussian filter along named dims, as scipy.ndimage.gaussian_filter.

    ``da.distconv.gaussian_filter(sigma)``: :func:`distconv.gaussian_filter` along the dims
    ``sigma`` names (every dim for one value or a sequence); the other dims are left alone.

    Parameters
    ----------
    sigma : float, sequence of float or dict {dim: float}
        The Gaussian's standard deviation in elements: one for every dim, one per dim (in the
        array's order), or ``{dim: sigma}`` (filtering those dims alone).
    order : int, sequence of int or dict {dim: int}, optional
        0 (default) smooths; 1, 2... convolve with that derivative of the Gaussian. Per dim of
        ``sigma``, as ``sigma`` gives them; dims a dict leaves out take 0.
    {dim_mode}
    {dim_cval}
    {truncate}
    {nan_policy_smooth}

    {outcome_named}

    See Also
    --------
    distconv.gaussian_filter : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.gaussian_filter({"x": 1}).values.tolist()
    [[0, 1, 1, 2], [4, 5, 5, 6], [8, 9, 9, 10]]
    >>> da.astype(float).distconv.gaussian_filter({"x": 1}).round(2).values.tolist()[0]
    [0.43, 1.06, 1.94, 2.57]
    >>> da.distconv.gaussian_filter(1.0).dims
    ('y', 'x')
    """
    along = Dims.of(obj, sigma, "sigma")
    return smooth.gaussian_filter(obj, along.values(sigma, "sigma"), along.values(order, "order", 0),
                                  along.modes(mode), one_cval(along, cval), truncate,
                                  axes=along.axes, nan_policy=nan_policy)


@docs.fill
def gaussian_filter1d(obj, sigma, dim, order=0, mode="reflect", cval=0.0, truncate=4.0, nan_policy="propagate"):
    """One-dimensional Gaussian filter along a named dim, as scipy.ndimage.gaussian_filter1d.

    ``da.distconv.gaussian_filter1d(sigma, dim)``: :func:`distconv.gaussian_filter1d` along
    ``dim``.

    Parameters
    ----------
    sigma : float or dict {dim: float}
        The Gaussian's standard deviation in elements.
    dim : str
        The dim to filter along.
    order : int or dict {dim: int}, optional
        0 (default) smooths; 1, 2... convolve with that derivative of the Gaussian.
    {dim_one_mode}
    {dim_cval}
    {truncate}
    {nan_policy_smooth}

    {outcome_named}

    See Also
    --------
    distconv.gaussian_filter1d : On arrays, by axis.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.gaussian_filter1d(1.0, "x").values.tolist()
    [[0, 1, 1, 2], [4, 5, 5, 6], [8, 9, 9, 10]]
    """
    one = Dims.given(obj, (dim,), "dim")
    return smooth.gaussian_filter1d(obj, one.one(sigma, "sigma"), one.axes[0], one.one(order, "order", 0),
                                    one.one_mode(mode), one_cval(one, cval), truncate,
                                    nan_policy=nan_policy)


@docs.fill
def uniform_filter(obj, size=3, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Uniform (box-mean) filter along named dims, as scipy.ndimage.uniform_filter.

    ``da.distconv.uniform_filter(size)``: :func:`distconv.uniform_filter` along the dims
    ``size`` names (every dim for one value or a sequence); the other dims are left alone.

    Parameters
    ----------
    size : int, sequence of int or dict {dim: int}, optional
        The box: one length for every dim (default 3), one per dim (in the array's order), or
        ``{dim: length}`` (filtering those dims alone).
    {dim_mode}
    {dim_cval}
    {dim_origin}
    {nan_policy_smooth}

    {outcome_named}

    See Also
    --------
    distconv.uniform_filter : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.uniform_filter({"y": 3}).values.tolist()
    [[1, 2, 3, 4], [4, 5, 6, 7], [6, 7, 8, 9]]
    >>> da.to_dataset(name="t").distconv.uniform_filter({"y": 3})["t"].dims
    ('y', 'x')
    """
    along = Dims.of(obj, size, "size")
    return smooth.uniform_filter(obj, along.values(size, "size"), along.modes(mode),
                                 one_cval(along, cval), along.values(origin, "origin", 0),
                                 axes=along.axes, nan_policy=nan_policy)


@docs.fill
def uniform_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """One-dimensional uniform filter along a named dim, as scipy.ndimage.uniform_filter1d.

    ``da.distconv.uniform_filter1d(size, dim)``: :func:`distconv.uniform_filter1d` along
    ``dim``.

    Parameters
    ----------
    size : int
        The box's length.
    dim : str
        The dim to filter along.
    {dim_one_mode}
    {dim_cval}
    origin : int or dict {dim: int}, optional
        Where the box sits over each element: 0 (default) centres it.
    {nan_policy_smooth}

    {outcome_named}

    See Also
    --------
    distconv.uniform_filter1d : On arrays, by axis.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.uniform_filter1d(3, "y").values.tolist()
    [[1, 2, 3, 4], [4, 5, 6, 7], [6, 7, 8, 9]]
    """
    ax, mode, cval, origin = along_one(obj, dim, mode, cval, origin)
    return smooth.uniform_filter1d(obj, size, ax, mode, cval, origin, nan_policy=nan_policy)
