"""Smoothing filters with scipy.ndimage semantics: the separable Gaussian (and its 1-D form),
the uniform (box) filter (and its 1-D form). Each is a run of 1-D passes of the correlate
kernels, one halo task per chunk on dask (ops/filters.py)."""

from __future__ import annotations

import numbers
import operator

import numpy as np

from .. import backends
from ..core import checks
from ..core.arrays import array_module
from ..core.modes import canonical_mode, canonical_modes, mode_of
from ..core.stencil import Stencil, chained, reach
from . import docs
from .stencil_ops import _filter, linear, nan_policy_of, normalized, passes_filter


def gaussian_kernel1d(sigma: float, order: int, radius: int) -> np.ndarray:
    """The 1-D Gaussian (derivative) kernel scipy.ndimage uses, ready for correlate1d."""
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / (sigma * sigma) * x.astype(np.float64) ** 2)
    phi /= phi.sum()
    if order == 0:
        return phi
    exps = np.arange(order + 1)
    q = np.zeros(order + 1)
    q[0] = 1
    dq = np.diag(exps[1:], 1) + np.diag(np.ones(order) / -(sigma * sigma), -1)
    for _ in range(order):
        q = dq.dot(q)
    return ((x[:, None] ** exps).dot(q) * phi)[::-1]


def _radius(r, radius):
    if not isinstance(r, numbers.Integral) or isinstance(r, bool) or r < 0:
        raise ValueError(f"radius must be a non-negative integer, got {radius!r}")
    return int(r)


def gaussian(x, sigma, order, mode, cval, truncate, radius, axes, allow_rechunk, dtype,
             name="distconv-gaussian"):
    """gaussian_filter on real data; per-axis arguments follow ``axes`` (scipy's order)."""
    x = checks.nonzero_ndim(checks.as_array(x))
    ax = checks.axes_in_order(axes, x.ndim)
    modes = canonical_modes(mode, len(ax))
    cval = checks.real(cval, "cval")
    passes = gaussian_passes(x.ndim, sigma, order, truncate, radius, axes)
    full = checks.spread(modes, ax, x.ndim, modes[0] if modes else "reflect")
    return passes_filter(x, passes, full, cval, name, allow_rechunk, dtype)


def gaussian_passes(ndim: int, sigma, order, truncate, radius, axes) -> list:
    """The 1-D passes [(axis, weights, 0), ...] of a Gaussian (derivative) filter over ``axes``
    of an ``ndim`` array (an axis with sigma 0 has none), every argument checked."""
    ax = checks.axes_in_order(axes, ndim)
    n = len(ax)
    sigmas = checks.per_axis(sigma, n, "sigma")
    orders = checks.per_axis(order, n, "order", cast=operator.index)
    truncate = checks.real(truncate, "truncate")
    radii = checks.per_axis(radius, n, "radius", cast=lambda r: r) if radius is not None else (None,) * n
    if not all(s >= 0 for s in sigmas):
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    if any(o < 0 for o in orders):
        raise ValueError(f"order must be >= 0, got {order!r}")
    passes = []
    for a, s, o, r in zip(ax, sigmas, orders, radii):
        if s > 1e-15:
            r = int(truncate * s + 0.5) if r is None else _radius(r, radius)
            passes.append((a, gaussian_kernel1d(s, o, r), 0))
    return passes


@docs.fill
def gaussian_filter(x, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, *, radius=None,
                    axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    """Multidimensional Gaussian filter, as scipy.ndimage.gaussian_filter.

    A sequence of 1-D Gaussian (or Gaussian derivative) filters, one along each axis with a
    sigma above 0, each intermediate kept in the result's dtype as scipy keeps it; the numbers
    are scipy.ndimage.gaussian_filter's for every chunking of a dask input and on every device.
    ``nan_policy='omit'``, which scipy lacks, gives the Gaussian-weighted mean of each
    window's non-NaN values.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    sigma : float or sequence of float
        The Gaussian's standard deviation in elements: one for every axis, or one per axis
        (of ``axes``). An axis with sigma 0 is left alone.
    order : int or sequence of int, optional
        0 (default) smooths; 1, 2, 3... convolve with that derivative of the Gaussian. One for
        every axis, or one per axis.
    {modes}
    {cval}
    {truncate}
    {radius}
    {axes}
    {output}
    {nan_policy_smooth}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a negative ``sigma`` or ``order``, a negative ``radius``, or
        ``nan_policy='omit'`` with ``order`` other than 0 or with ``output``.
    TypeError
        {raises_type}

    See Also
    --------
    gaussian_filter1d : Along one axis.
    gaussian_laplace, gaussian_gradient_magnitude : Sums of Gaussian derivatives.
    scipy.ndimage.gaussian_filter : The reference on numpy arrays.

    Notes
    -----
    {halo}

    Examples
    --------
    >>> dc.gaussian_filter(np.array([0.0, 0, 1, 0, 0]), 1).round(3).tolist()
    [0.058, 0.242, 0.399, 0.242, 0.058]
    >>> dc.gaussian_filter(np.arange(6.0).reshape(2, 3), 1, axes=[1]).round(3).tolist()
    [[0.422, 1.0, 1.578], [3.422, 4.0, 4.578]]
    >>> dc.gaussian_filter(np.array([1.0, np.nan, 3, 4]), 1, nan_policy="omit").round(3).tolist()
    [1.186, 2.106, 3.236, 3.671]
    """
    if _omit(nan_policy, order, output):
        return normalized(x, lambda d, c: gaussian_filter(d, sigma, order, mode, c, truncate, radius=radius,
                                                          axes=axes, allow_rechunk=allow_rechunk), mode, cval)
    return linear(x, None, cval, output, lambda d, _w, c, dt: gaussian(
        d, sigma, order, mode, c, truncate, radius, axes, allow_rechunk, dt))


@docs.fill
def gaussian_filter1d(x, sigma, axis=-1, order=0, mode="reflect", cval=0.0, truncate=4.0, *,
                      radius=None, output=None, nan_policy="propagate", allow_rechunk=True):
    """One-dimensional Gaussian filter along an axis, as scipy.ndimage.gaussian_filter1d.

    The numbers are scipy.ndimage.gaussian_filter1d's for every chunking of a dask input and
    on every device; ``nan_policy='omit'``, which scipy lacks, gives the Gaussian-weighted mean
    of each window's non-NaN values.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    sigma : float
        The Gaussian's standard deviation in elements.
    {axis}
    order : int, optional
        0 (default) smooths; 1, 2, 3... convolve with that derivative of the Gaussian.
    {mode}
    {cval}
    {truncate}
    radius : int, optional
        The Gaussian's radius in elements, instead of the one ``truncate`` gives.
    {output}
    {nan_policy_smooth}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a negative ``sigma``, ``order`` or ``radius``, a sequence of modes, or
        ``nan_policy='omit'`` with ``order`` other than 0 or with ``output``.
    TypeError
        {raises_type}

    See Also
    --------
    gaussian_filter : Along several axes.
    scipy.ndimage.gaussian_filter1d : The reference on numpy arrays.

    Examples
    --------
    >>> dc.gaussian_filter1d(np.array([1.0, 2, 3, 4, 5]), 1).round(3).tolist()
    [1.427, 2.068, 3.0, 3.932, 4.573]
    >>> dc.gaussian_filter1d(np.array([1.0, 2, 3, 4, 5]), 1, order=1).round(3).tolist()
    [0.364, 0.849, 0.97, 0.849, 0.364]
    """
    canonical_mode(mode)  # one mode, as scipy's 1-D filters take
    if _omit(nan_policy, order, output):
        return normalized(x, lambda d, c: gaussian_filter1d(d, sigma, axis, order, mode, c, truncate, radius=radius,
                                                            allow_rechunk=allow_rechunk), mode, cval)
    x = checks.as_array(x, kinds=checks.SUPPORTED_KINDS + "c")
    ax = checks.axis(axis, max(x.ndim, 1))
    return linear(x, None, cval, output, lambda d, _w, c, dt: gaussian(
        d, checks.real(sigma, "sigma"), operator.index(order), mode, c, truncate, radius, (ax,),
        allow_rechunk, dt, "distconv-gaussian-axis"))


def uniform(x, size, mode, cval, origin, axes, allow_rechunk, dtype, name="distconv-uniform"):
    """uniform_filter on real data: one box pass per axis of ``axes`` with a size over 1."""
    x = checks.nonzero_ndim(checks.as_array(x))
    ax = checks.axes_in_order(axes, x.ndim)
    n = len(ax)
    sizes = checks.per_axis(size, n, "size", cast=operator.index)
    if any(k < 1 for k in sizes):
        raise ValueError(f"size must be >= 1 along every axis, got {size!r}")
    origins = checks.per_axis(origin, n, "origin", cast=operator.index)
    for k, o in zip(sizes, origins):
        checks.origins(o, (k,))
    modes = canonical_modes(mode, n)
    cval = checks.real(cval, "cval")
    full = checks.spread(modes, ax, x.ndim, modes[0] if modes else "reflect")
    steps = [(a, k, o) for a, k, o in zip(ax, sizes, origins) if k > 1]
    out = np.dtype(x.dtype if dtype is None else dtype)
    if out.kind == "f" or not steps:
        passes = [(a, np.full(k, 1.0 / k), o) for a, k, o in steps]
        return passes_filter(x, passes, full, cval, name, allow_rechunk, dtype)
    # integers: scipy divides an exact sum and truncates after every axis; a sum of values
    # times 1/size can land a hair below an integer, so each axis sums exactly, then divides
    stencils = []
    for a, k, o in steps:
        depth = tuple(reach(k, o) if b == a else (0, 0) for b in range(x.ndim))
        total = backends.correlate_passes.bind(passes=[(a, np.ones(k), o)], mode=mode_of(full, a),
                                               cval=cval, dtype=np.float64)
        stencils.append(Stencil(_Mean(total, k, out), depth, full, name, out))
    st = chained(stencils, name)
    return _filter(x, st.func, st.depth, st.mode, name, allow_rechunk, dtype)


def _omit(nan_policy, order, output) -> bool:
    """Is NaN to be omitted (checked: a smoothing filter, its result in the input's dtype)?"""
    if nan_policy_of(nan_policy) == "propagate":
        return False
    if np.any(np.asarray(order) != 0):
        raise ValueError(f"nan_policy='omit' takes a mean of the non-NaN values: it needs order=0, "
                         f"got order={order!r}")
    if output is not None:
        raise ValueError("nan_policy='omit' does not take output=: cast the result instead")
    return True


class _Mean:
    """A block's exact box sums divided by the box size and cast as scipy's C code casts
    (truncate, then wrap into the integer type); picklable."""

    def __init__(self, total, size: int, dtype):
        self.total, self.size, self.dtype = total, size, np.dtype(dtype)

    def __call__(self, tile):
        s = self.total(tile)
        xp = array_module(s)
        return xp.trunc(s / self.size).astype(np.int64).astype(self.dtype)


@docs.fill
def uniform_filter(x, size=3, mode="reflect", cval=0.0, origin=0, *, axes=None, output=None,
                   nan_policy="propagate", allow_rechunk=True):
    """Multidimensional uniform (box-mean) filter, as scipy.ndimage.uniform_filter.

    A sequence of 1-D box means, one along each axis with a size above 1. Integer data is
    summed exactly and divided, truncating after every axis as scipy's C code does; the
    numbers are scipy.ndimage.uniform_filter's for every chunking of a dask input and on every
    device. ``nan_policy='omit'``, which scipy lacks, gives the mean of each box's non-NaN
    values.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    size : int or sequence of int, optional
        The box's length along every axis, or one length per axis (of ``axes``). Default 3.
    {modes}
    {cval}
    {origin}
    {axes}
    {output}
    {nan_policy_smooth}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a ``size`` below 1, or ``nan_policy='omit'`` with ``output``.
    TypeError
        {raises_type}

    See Also
    --------
    uniform_filter1d : Along one axis.
    scipy.ndimage.uniform_filter : The reference on numpy arrays.

    Notes
    -----
    {halo}

    Examples
    --------
    >>> dc.uniform_filter(np.arange(5.0), 3)
    array([0.33333333, 1.        , 2.        , 3.        , 3.66666667])
    >>> dc.uniform_filter(np.array([[1, 2], [3, 4]]), 2).tolist()
    [[1, 1], [2, 2]]
    >>> dc.uniform_filter(np.array([1.0, np.nan, 3, 4, 5]), 3, nan_policy="omit").round(3).tolist()
    [1.0, 2.0, 3.5, 4.0, 4.667]
    """
    if _omit(nan_policy, 0, output):
        return normalized(x, lambda d, c: uniform_filter(d, size, mode, c, origin, axes=axes,
                                                         allow_rechunk=allow_rechunk), mode, cval)
    return linear(x, None, cval, output, lambda d, _w, c, dt: uniform(
        d, size, mode, c, origin, axes, allow_rechunk, dt))


@docs.fill
def uniform_filter1d(x, size, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
                     nan_policy="propagate", allow_rechunk=True):
    """One-dimensional uniform filter along an axis, as scipy.ndimage.uniform_filter1d.

    The numbers are scipy.ndimage.uniform_filter1d's (integer data summed exactly, then divided
    and truncated) for every chunking of a dask input and on every device;
    ``nan_policy='omit'``, which scipy lacks, gives the mean of each box's non-NaN values.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    size : int
        The box's length.
    {axis}
    {mode}
    {cval}
    origin : int, optional
        Where the box sits over each element: 0 (default) centres it, a positive value
        shifts it to the left, a negative one to the right.
    {output}
    {nan_policy_smooth}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a ``size`` below 1, a sequence of modes, or ``nan_policy='omit'`` with
        ``output``.
    TypeError
        {raises_type}

    See Also
    --------
    uniform_filter : Along several axes.
    scipy.ndimage.uniform_filter1d : The reference on numpy arrays.

    Examples
    --------
    >>> dc.uniform_filter1d(np.array([1, 2, 3, 4, 5]), 3).tolist()
    [1, 2, 3, 4, 4]
    >>> dc.uniform_filter1d(np.array([1.0, 2, 3, 4, 6]), 2).tolist()
    [1.0, 1.5, 2.5, 3.5, 5.0]
    """
    canonical_mode(mode)
    if _omit(nan_policy, 0, output):
        return normalized(x, lambda d, c: uniform_filter1d(d, size, axis, mode, c, origin,
                                                           allow_rechunk=allow_rechunk), mode, cval)
    x = checks.as_array(x, kinds=checks.SUPPORTED_KINDS + "c")
    ax = checks.axis(axis, max(x.ndim, 1))
    return linear(x, None, cval, output, lambda d, _w, c, dt: uniform(
        d, operator.index(size), mode, c, origin, (ax,), allow_rechunk, dt, "distconv-uniform-axis"))
