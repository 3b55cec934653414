"""The scipy.ndimage filters on an xarray DataArray by dim names: each runs along the dims its
leading per-dim argument names (sigma={"lat": 1, "lon": 2}, size={"lon": 3}, a footprint
DataArray, dims=, dim=) and leaves the others alone; every per-dim argument is read by
ops/per_dim.py, before any work. ops/named.py lists them with the other ops by dim names."""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import edges, filters, smooth
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


def correlate(obj, weights, dims, mode="reflect", cval=0.0, origin=0):
    """N-D correlation along ``dims`` (scipy.ndimage.correlate over those axes).

    Parameters
    ----------
    obj : xarray.DataArray
    weights : array_like
        The mask, one axis per entry of ``dims``, in that order.
    dims : sequence of str
    mode, cval : str or {dim: value}
        One for every dim of ``dims``, as scipy takes one.
    origin : int, sequence or {dim: int}

    Returns
    -------
    xarray.DataArray
    """
    return _masked(filters.correlate, obj, weights, dims, mode, cval, origin)


def convolve(obj, weights, dims, mode="reflect", cval=0.0, origin=0):
    """N-D convolution along ``dims`` (scipy.ndimage.convolve over those axes; arguments as
    :func:`correlate`)."""
    return _masked(filters.convolve, obj, weights, dims, mode, cval, origin)


def _along_one(obj, dim, mode, cval, origin):
    """(axis, mode, cval, origin) of a 1-D filter along ``dim``; each may be {dim: value}."""
    along = Dims.given(obj, (dim,), "dim")
    return along.axes[0], along.one_mode(mode), _cval(along, cval), along.one(origin, "origin", 0)


def correlate1d(obj, weights, dim, mode="reflect", cval=0.0, origin=0):
    """1-D correlation along ``dim`` (scipy.ndimage.correlate1d)."""
    return filters.correlate1d(obj, weights, *_along_one(obj, dim, mode, cval, origin))


def convolve1d(obj, weights, dim, mode="reflect", cval=0.0, origin=0):
    """1-D convolution along ``dim`` (scipy.ndimage.convolve1d)."""
    return filters.convolve1d(obj, weights, *_along_one(obj, dim, mode, cval, origin))


def gaussian_filter(obj, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, nan_policy="propagate"):
    """Gaussian filter along the dims ``sigma`` names (scipy.ndimage.gaussian_filter).

    Parameters
    ----------
    obj : xarray.DataArray
    sigma : float, sequence or {dim: float}
        One value for every dim, one per dim, or {dim: sigma} (the other dims left alone).
    order, mode : value, sequence or {dim: value}
        Per dim of ``sigma``, in its order; dims a dict leaves out take order 0, mode "reflect".
    cval : float
    truncate : float
    nan_policy : {"propagate", "omit"}

    Returns
    -------
    xarray.DataArray
    """
    along = Dims.of(obj, sigma, "sigma")
    return smooth.gaussian_filter(obj, along.values(sigma, "sigma"), along.values(order, "order", 0),
                                  along.modes(mode), _cval(along, cval), truncate,
                                  axes=along.axes, nan_policy=nan_policy)


def gaussian_filter1d(obj, sigma, dim, order=0, mode="reflect", cval=0.0, truncate=4.0, nan_policy="propagate"):
    """1-D Gaussian filter along ``dim`` (scipy.ndimage.gaussian_filter1d)."""
    one = Dims.given(obj, (dim,), "dim")
    return smooth.gaussian_filter1d(obj, one.one(sigma, "sigma"), one.axes[0], one.one(order, "order", 0),
                                    one.one_mode(mode), _cval(one, cval), truncate,
                                    nan_policy=nan_policy)


def uniform_filter(obj, size=3, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Uniform filter along the dims ``size`` names (scipy.ndimage.uniform_filter).

    Parameters
    ----------
    obj : xarray.DataArray
    size : int, sequence or {dim: int}
        One value for every dim, one per dim, or {dim: size} (the other dims left alone).
    mode, origin : value, sequence or {dim: value}
        Per dim of ``size``, in its order; dims a dict leaves out take "reflect", 0.
    cval : float
    nan_policy : {"propagate", "omit"}

    Returns
    -------
    xarray.DataArray
    """
    along = Dims.of(obj, size, "size")
    return smooth.uniform_filter(obj, along.values(size, "size"), along.modes(mode),
                                 _cval(along, cval), along.values(origin, "origin", 0),
                                 axes=along.axes, nan_policy=nan_policy)


def uniform_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """1-D uniform filter along ``dim`` (scipy.ndimage.uniform_filter1d)."""
    ax, mode, cval, origin = _along_one(obj, dim, mode, cval, origin)
    return smooth.uniform_filter1d(obj, size, ax, mode, cval, origin, nan_policy=nan_policy)


def _gradient(op, obj, dim, mode, cval):
    """``op`` (sobel, prewitt): the derivative along ``dim``, smoothed along every other dim,
    as scipy's; ``mode``: one, one per dim, or {dim: mode}."""
    every = Dims.every_dim(obj)
    return op(obj, axis_of(obj, dim), every.modes(mode), _cval(every, cval))


def sobel(obj, dim, mode="reflect", cval=0.0):
    """Sobel derivative along ``dim`` (scipy.ndimage.sobel: smoothing along the other dims).

    Parameters
    ----------
    obj : xarray.DataArray
    dim : str
    mode : str, sequence (one per dim of the array) or {dim: mode}
        Dims a dict leaves out take "reflect".
    cval : float

    Returns
    -------
    xarray.DataArray
    """
    return _gradient(edges.sobel, obj, dim, mode, cval)


def prewitt(obj, dim, mode="reflect", cval=0.0):
    """Prewitt derivative along ``dim`` (scipy.ndimage.prewitt; arguments as :func:`sobel`)."""
    return _gradient(edges.prewitt, obj, dim, mode, cval)


def gaussian_laplace(obj, sigma, mode="reflect", cval=0.0, truncate=4.0):
    """Laplacian of Gaussian along the dims ``sigma`` names (scipy.ndimage.gaussian_laplace
    with ``axes=``; the other dims left alone).

    Parameters
    ----------
    obj : xarray.DataArray
    sigma : float, sequence or {dim: float}
    mode : str, sequence or {dim: mode}
        Per dim of ``sigma``, in its order (term i of the sum uses mode i, as scipy's).
    cval, truncate : float

    Returns
    -------
    xarray.DataArray
    """
    along = Dims.of(obj, sigma, "sigma")
    return edges.gaussian_laplace(obj, along.values(sigma, "sigma"), along.modes(mode),
                                  _cval(along, cval), axes=along.axes, truncate=truncate)


def gaussian_gradient_magnitude(obj, sigma, mode="reflect", cval=0.0, truncate=4.0):
    """Gradient magnitude of Gaussian derivatives along the dims ``sigma`` names
    (scipy.ndimage.gaussian_gradient_magnitude with ``axes=``); the other dims are left alone
    (sigma 0 there: scipy would smooth every axis).

    Parameters
    ----------
    As :func:`gaussian_laplace`.

    Returns
    -------
    xarray.DataArray
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


def minimum_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Minimum over a window along named dims (scipy.ndimage.minimum_filter).

    Parameters
    ----------
    obj : xarray.DataArray
    size : int, sequence or {dim: int}
        One value for every dim, one per dim, or {dim: size} (the other dims left alone).
    footprint : array_like or xarray.DataArray, optional
        Instead of ``size``: over every dim (an array) or over its dims (a DataArray).
    mode : str, sequence or {dim: mode}
        Per dim of the window, in the order named (dims a dict leaves out take "reflect");
        one mode for a footprint that is not a box.
    cval : float
    origin : int, sequence or {dim: int}
    nan_policy : {"propagate", "omit"}

    Returns
    -------
    xarray.DataArray
    """
    return _extremum(ranked.minimum_filter, obj, size, footprint, mode, cval, origin, nan_policy)


def maximum_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Maximum over a window along named dims (scipy.ndimage.maximum_filter; arguments as
    :func:`minimum_filter`)."""
    return _extremum(ranked.maximum_filter, obj, size, footprint, mode, cval, origin, nan_policy)


def median_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Median over a window along named dims (scipy.ndimage.median_filter).

    Parameters
    ----------
    obj : xarray.DataArray
    size, footprint, origin, cval, nan_policy
        As :func:`minimum_filter`.
    mode : str, or the same mode for every dim as a sequence or {dim: mode}
        One mode, as scipy's rank filters take; a dict of differing modes is refused.

    Returns
    -------
    xarray.DataArray
    """
    return _ranked(ranked.median_filter, obj, (), size, footprint, mode, cval, origin, nan_policy)


def rank_filter(obj, rank, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """The ``rank``-th value of a window along named dims (scipy.ndimage.rank_filter;
    arguments as :func:`median_filter`)."""
    return _ranked(ranked.rank_filter, obj, (rank,), size, footprint, mode, cval, origin, nan_policy)


def percentile_filter(obj, percentile, size=None, footprint=None, mode="reflect", cval=0.0, origin=0,
                      nan_policy="propagate"):
    """The ``percentile`` of a window along named dims (scipy.ndimage.percentile_filter;
    arguments as :func:`median_filter`)."""
    return _ranked(ranked.percentile_filter, obj, (percentile,), size, footprint, mode, cval, origin, nan_policy)


def minimum_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Minimum over ``size`` elements along ``dim`` (scipy.ndimage.minimum_filter1d)."""
    return ranked.minimum_filter1d(obj, size, *_along_one(obj, dim, mode, cval, origin), nan_policy=nan_policy)


def maximum_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    """Maximum over ``size`` elements along ``dim`` (scipy.ndimage.maximum_filter1d)."""
    return ranked.maximum_filter1d(obj, size, *_along_one(obj, dim, mode, cval, origin), nan_policy=nan_policy)
