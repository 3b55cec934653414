"""The scipy.ndimage filters on an xarray DataArray by dim names: each runs along the dims its
leading per-dim argument names (sigma={"lat": 1, "lon": 2}, size={"lon": 3}, a footprint
DataArray, dims=, dim=) and leaves the others alone; every per-dim argument is read by
ops/per_dim.py, before any work. ops/named.py lists them with the other ops by dim names."""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import docs, edges, filters, smooth
from . import rank as ranked
from .per_dim import Dims, axis_of

# One value for every dim where scipy's filter takes one (ops/per_dim.py: Dims.one).
ONE_CVAL = "scipy's filters take one cval"
ONE_MODE_MASK = "scipy's correlate and convolve take one mode"
ONE_MODE_RANK = "scipy's rank filters take one mode"
ONE_MODE_FOOTPRINT = "scipy's minimum and maximum filters take one mode over a footprint that is not a box"


def _cval(along, cval) -> float:
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
    return op(obj, w, along.one_mode(mode, ONE_MODE_MASK), _cval(along, cval),
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


def _along_one(obj, dim, mode, cval, origin):
    """(axis, mode, cval, origin) of a 1-D filter along ``dim``; each may be {dim: value}."""
    along = Dims.given(obj, (dim,), "dim")
    return along.axes[0], along.one_mode(mode), _cval(along, cval), along.one(origin, "origin", 0)


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

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

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
    return filters.correlate1d(obj, weights, *_along_one(obj, dim, mode, cval, origin))


@docs.twin(_NAMED_CORRELATE_1D_DOC, name="convolve", noun="convolution", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.convolve1d([1, 0, -1], "x").values.tolist()
    [[1, 2, 2, 1], [1, 2, 2, 1], [1, 2, 2, 1]]""")
def convolve1d(obj, weights, dim, mode="reflect", cval=0.0, origin=0):
    return filters.convolve1d(obj, weights, *_along_one(obj, dim, mode, cval, origin))


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

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

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
                                  along.modes(mode), _cval(along, cval), truncate,
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

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

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
                                    one.one_mode(mode), _cval(one, cval), truncate,
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

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

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
                                 _cval(along, cval), along.values(origin, "origin", 0),
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

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.uniform_filter1d : On arrays, by axis.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.uniform_filter1d(3, "y").values.tolist()
    [[1, 2, 3, 4], [4, 5, 6, 7], [6, 7, 8, 9]]
    """
    ax, mode, cval, origin = _along_one(obj, dim, mode, cval, origin)
    return smooth.uniform_filter1d(obj, size, ax, mode, cval, origin, nan_policy=nan_policy)


def _gradient(op, obj, dim, mode, cval):
    """``op`` (sobel, prewitt): the derivative along ``dim``, smoothed along every other dim,
    as scipy's; ``mode``: one, one per dim, or {dim: mode}."""
    every = Dims.every_dim(obj)
    return op(obj, axis_of(obj, dim), every.modes(mode), _cval(every, cval))


_NAMED_GRADIENT_DOC = """${Name} derivative along a named dim, as scipy.ndimage.${name}.

    ``da.distconv.${name}(dim)``: :func:`distconv.${name}`, the derivative along ``dim`` smoothed
    along every other dim, as scipy's.

    Parameters
    ----------
    dim : str
        The dim of the derivative.
    mode : str, sequence of str or dict {dim: str}, optional
        One mode for every dim, one per dim of the array (in its order), or ``{dim: mode}``
        (the dims it leaves out take 'reflect').
        {mode_names}
    {dim_cval}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.${name} : On arrays, by axis.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_GRADIENT_DOC, Name="Sobel", name="sobel", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.sobel("x").values.tolist()
    [[4, 8, 8, 4], [4, 8, 8, 4], [4, 8, 8, 4]]""")
def sobel(obj, dim, mode="reflect", cval=0.0):
    return _gradient(edges.sobel, obj, dim, mode, cval)


@docs.twin(_NAMED_GRADIENT_DOC, Name="Prewitt", name="prewitt", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.prewitt("y").values.tolist()
    [[12, 12, 12, 12], [24, 24, 24, 24], [12, 12, 12, 12]]""")
def prewitt(obj, dim, mode="reflect", cval=0.0):
    return _gradient(edges.prewitt, obj, dim, mode, cval)


@docs.fill
def gaussian_laplace(obj, sigma, mode="reflect", cval=0.0, truncate=4.0):
    """Laplacian of Gaussian along named dims, as scipy.ndimage.gaussian_laplace.

    ``da.distconv.gaussian_laplace(sigma)``: :func:`distconv.gaussian_laplace` over the dims
    ``sigma`` names (every dim for one value or a sequence), as scipy's with ``axes=``; the
    other dims are left alone.

    Parameters
    ----------
    sigma : float, sequence of float or dict {dim: float}
        The Gaussian's standard deviation in elements: one for every dim, one per dim, or
        ``{dim: sigma}``.
    mode : str, sequence of str or dict {dim: str}, optional
        Per dim of ``sigma`` (term i of the sum uses mode i, as scipy's); 'wrap' cannot be
        mixed with the others.
        {mode_names}
    {dim_cval}
    {truncate}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.gaussian_laplace : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.array([0.0, 0, 1, 0, 0]), dims="x")
    >>> da.distconv.gaussian_laplace(1).round(3).values.tolist()
    [0.197, 0.002, -0.399, 0.002, 0.197]
    """
    along = Dims.of(obj, sigma, "sigma")
    return edges.gaussian_laplace(obj, along.values(sigma, "sigma"), along.modes(mode),
                                  _cval(along, cval), axes=along.axes, truncate=truncate)


@docs.fill
def gaussian_gradient_magnitude(obj, sigma, mode="reflect", cval=0.0, truncate=4.0):
    """Gaussian gradient magnitude along named dims, as scipy.ndimage.gaussian_gradient_magnitude.

    ``da.distconv.gaussian_gradient_magnitude(sigma)``: the gradient over the dims ``sigma``
    names (every dim for one value or a sequence). The other dims are left alone, not
    smoothed (scipy's ``axes=`` would smooth every axis with sigma: here their sigma is 0).

    Parameters
    ----------
    sigma : float, sequence of float or dict {dim: float}
        The Gaussian's standard deviation in elements: one for every dim, one per dim, or
        ``{dim: sigma}``.
    mode : str, sequence of str or dict {dim: str}, optional
        Per dim of ``sigma`` (term i of the sum uses mode i, as scipy's); 'wrap' cannot be
        mixed with the others.
        {mode_names}
    {dim_cval}
    {truncate}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.gaussian_gradient_magnitude : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.array([0.0, 0, 1, 0, 0]), dims="x")
    >>> da.distconv.gaussian_gradient_magnitude(1).round(3).values.tolist()
    [0.095, 0.241, 0.0, 0.241, 0.095]
    """
    along = Dims.of(obj, sigma, "sigma")
    sigmas = along.spread(along.values(sigma, "sigma"), 0.0)
    return edges.gaussian_gradient_magnitude(obj, sigmas, along.modes(mode), _cval(along, cval),
                                             axes=along.axes, truncate=truncate)


def _window(obj, size, footprint):
    """(the dims, the size per dim, the footprint in the array's order) of a rank filter:
    the footprint's dims (a DataArray names them; an array spans every dim) or size's."""
    if footprint is None:
        along = Dims.of(obj, size, "size")
        return along, None if size is None else along.values(size, "size"), None
    along = Dims.of(obj, footprint, "footprint")
    if isinstance(footprint, xr.DataArray):
        footprint = footprint.transpose(*along.dims).values
    return along, size, footprint


def _extremum(op, obj, size, footprint, mode, cval, origin, nan_policy):
    """``op`` (minimum_filter, maximum_filter) along the window's dims: a box takes a mode
    per dim, another footprint one mode (scipy's rule)."""
    along, size, footprint = _window(obj, size, footprint)
    box = footprint is None or bool(np.all(footprint))
    modes = along.modes(mode) if box else along.one_mode(mode, ONE_MODE_FOOTPRINT)
    return op(obj, size, footprint, modes, _cval(along, cval),
              along.values(origin, "origin", 0), axes=along.axes, nan_policy=nan_policy)


def _ranked(op, obj, pick, size, footprint, mode, cval, origin, nan_policy):
    """``op`` (rank, median or percentile filter; ``pick``: its rank or percentile, or none)
    along the window's dims, with one mode (scipy's rank filters take one)."""
    along, size, footprint = _window(obj, size, footprint)
    return op(obj, *pick, size, footprint, along.one_mode(mode, ONE_MODE_RANK),
              _cval(along, cval), along.values(origin, "origin", 0), axes=along.axes,
              nan_policy=nan_policy)


_NAMED_EXTREMUM_DOC = """${Name} filter along named dims, as scipy.ndimage.${name}_filter.

    ``da.distconv.${name}_filter(size)``: :func:`distconv.${name}_filter` over a window along
    the dims ``size`` (or a footprint DataArray) names; the other dims are left alone. NaN:
    a window holding one gives NaN, unless ``nan_policy='omit'``.

    Parameters
    ----------
    {dim_size}
    {dim_footprint}
    mode : str, sequence of str or dict {dim: str}, optional
        Per dim of the window, in the order named (the dims a dict leaves out take
        'reflect'); one mode for a footprint that is not a box.
        {mode_names}
    {dim_cval}
    {dim_origin}
    {nan_policy_rank}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.${name}_filter : On arrays, by axes.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_EXTREMUM_DOC, name="minimum", Name="Minimum", extreme="smallest", examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.minimum_filter({"x": 3}).values.tolist()
    [[1, 1, 1, 1], [5, 2, 2, 2]]""")
def minimum_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return _extremum(ranked.minimum_filter, obj, size, footprint, mode, cval, origin, nan_policy)


@docs.twin(_NAMED_EXTREMUM_DOC, name="maximum", Name="Maximum", extreme="largest", examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.maximum_filter({"x": 3}).values.tolist()
    [[3, 4, 4, 4], [9, 9, 9, 6]]""")
def maximum_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return _extremum(ranked.maximum_filter, obj, size, footprint, mode, cval, origin, nan_policy)


@docs.fill
def median_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Median filter along named dims, as scipy.ndimage.median_filter.

    ``da.distconv.median_filter(size)``: :func:`distconv.median_filter` over a window along
    the dims ``size`` (or a footprint DataArray) names; the other dims are left alone. NaN:
    a window holding one gives NaN, unless ``nan_policy='omit'``.

    Parameters
    ----------
    {dim_size}
    {dim_footprint}
    {dim_one_mode}
    {dim_cval}
    {dim_origin}
    {nan_policy_rank}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.median_filter : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.median_filter({"x": 3}).values.tolist()
    [[3, 3, 1, 1], [5, 5, 6, 6]]
    >>> da.distconv.median_filter(footprint=xr.DataArray([True, True, True], dims="x")).values.tolist()
    [[3, 3, 1, 1], [5, 5, 6, 6]]
    """
    return _ranked(ranked.median_filter, obj, (), size, footprint, mode, cval, origin, nan_policy)


@docs.fill
def rank_filter(obj, rank, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Rank filter along named dims, as scipy.ndimage.rank_filter.

    ``da.distconv.rank_filter(rank, size)``: :func:`distconv.rank_filter` over a window along
    the dims ``size`` (or a footprint DataArray) names; the other dims are left alone.

    Parameters
    ----------
    rank : int
        Which value of the sorted window: from the bottom (0 the smallest), or, negative, from
        the top (-1 the largest).
    {dim_size}
    {dim_footprint}
    {dim_one_mode}
    {dim_cval}
    {dim_origin}
    {nan_policy_rank}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.rank_filter : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.rank_filter(0, {"x": 3}).values.tolist()
    [[1, 1, 1, 1], [5, 2, 2, 2]]
    """
    return _ranked(ranked.rank_filter, obj, (rank,), size, footprint, mode, cval, origin, nan_policy)


@docs.fill
def percentile_filter(obj, percentile, size=None, footprint=None, mode="reflect", cval=0.0, origin=0,
                      nan_policy="propagate"):
    """Percentile filter along named dims, as scipy.ndimage.percentile_filter.

    ``da.distconv.percentile_filter(percentile, size)``: :func:`distconv.percentile_filter`
    over a window along the dims ``size`` (or a footprint DataArray) names; the other dims
    are left alone.

    Parameters
    ----------
    percentile : float
        From 0 to 100, or -100 to 0 counted as ``100 + percentile``.
    {dim_size}
    {dim_footprint}
    {dim_one_mode}
    {dim_cval}
    {dim_origin}
    {nan_policy_rank}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.percentile_filter : On arrays, by axes.

    Examples
    --------
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.percentile_filter(100, {"x": 3}).values.tolist()
    [[3, 4, 4, 4], [9, 9, 9, 6]]
    """
    return _ranked(ranked.percentile_filter, obj, (percentile,), size, footprint, mode, cval, origin, nan_policy)


_NAMED_EXTREMUM_1D_DOC = """One-dimensional ${name} filter along a named dim, as scipy.ndimage.${name}_filter1d.

    ``da.distconv.${name}_filter1d(size, dim)``: :func:`distconv.${name}_filter1d` along
    ``dim``.

    Parameters
    ----------
    size : int
        The window's length.
    dim : str
        The dim to filter along.
    {dim_one_mode}
    {dim_cval}
    origin : int or dict {dim: int}, optional
        Where the window sits over each element: 0 (default) centres it.
    {nan_policy_rank}

    Returns
    -------
    {returns_named}

    Raises
    ------
    ValueError
        {raises_named}

    See Also
    --------
    distconv.${name}_filter1d : On arrays, by axis.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_EXTREMUM_1D_DOC, name="minimum", Name="Minimum", extreme="smallest", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.minimum_filter1d(3, "x").values.tolist()
    [[0, 0, 1, 2], [4, 4, 5, 6], [8, 8, 9, 10]]""")
def minimum_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return ranked.minimum_filter1d(obj, size, *_along_one(obj, dim, mode, cval, origin), nan_policy=nan_policy)


@docs.twin(_NAMED_EXTREMUM_1D_DOC, name="maximum", Name="Maximum", extreme="largest", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.maximum_filter1d(3, "y").values.tolist()
    [[4, 5, 6, 7], [8, 9, 10, 11], [8, 9, 10, 11]]""")
def maximum_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return ranked.maximum_filter1d(obj, size, *_along_one(obj, dim, mode, cval, origin), nan_policy=nan_policy)
