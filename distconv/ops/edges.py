"""Edge and blob filters with scipy.ndimage semantics: sobel, prewitt (a derivative pass plus
smoothing passes), gaussian_laplace and gaussian_gradient_magnitude (a sum over axes of
Gaussian derivative filters, as one stencil: one halo task per chunk on dask)."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..core import checks
from ..core.modes import canonical_modes
from ..core.stencil import passes_depth
from . import docs
from .stencil_ops import _filter, linear, passes_filter
from .smooth import gaussian_passes

DIFFERENCE = np.array([-1.0, 0.0, 1.0])
SOBEL_SMOOTH = np.array([1.0, 2.0, 1.0])
PREWITT_SMOOTH = np.array([1.0, 1.0, 1.0])


def _gradient(x, axis, mode, cval, smooth, name, allow_rechunk, dtype):
    x = checks.nonzero_ndim(checks.as_array(x))
    ax = checks.axis(axis, x.ndim)
    modes = canonical_modes(mode, x.ndim)
    cval = checks.real(cval, "cval")
    passes = [(ax, DIFFERENCE, 0)] + [(a, smooth, 0) for a in range(x.ndim) if a != ax]
    return passes_filter(x, passes, modes, cval, name, allow_rechunk, dtype)


@docs.fill
def sobel(x, axis=-1, mode="reflect", cval=0.0, *, output=None, allow_rechunk=True):
    """Sobel derivative filter, as scipy.ndimage.sobel.

    The difference ``[-1, 0, 1]`` along ``axis`` and the smoothing ``[1, 2, 1]`` along every
    other axis, as 1-D passes in the result's dtype (an integer input gives integers, as
    scipy's); the numbers are scipy.ndimage.sobel's for every chunking and device.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    axis : int, optional
        The axis of the derivative. Default -1 (the last).
    mode : str or sequence of str, optional
        One mode, or one per axis of ``x``.
        {mode_names}
    {cval}
    {output}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
    TypeError
        {raises_type}

    See Also
    --------
    prewitt : The same with the smoothing ``[1, 1, 1]``.
    derivative : Central differences of any order and accuracy.
    scipy.ndimage.sobel : The reference on numpy arrays.

    Examples
    --------
    >>> step = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]])
    >>> dc.sobel(step, axis=1).tolist()
    [[0, 4, 4, 0], [0, 4, 4, 0], [0, 4, 4, 0]]
    >>> dc.sobel(step, axis=0).tolist()
    [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    """
    return linear(x, None, cval, output, lambda d, _w, c, dt: _gradient(
        d, axis, mode, c, SOBEL_SMOOTH, "distconv-sobel", allow_rechunk, dt))


@docs.fill
def prewitt(x, axis=-1, mode="reflect", cval=0.0, *, output=None, allow_rechunk=True):
    """Prewitt derivative filter, as scipy.ndimage.prewitt.

    The difference ``[-1, 0, 1]`` along ``axis`` and the smoothing ``[1, 1, 1]`` along every
    other axis, as 1-D passes in the result's dtype; the numbers are scipy.ndimage.prewitt's
    for every chunking and device.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    axis : int, optional
        The axis of the derivative. Default -1 (the last).
    mode : str or sequence of str, optional
        One mode, or one per axis of ``x``.
        {mode_names}
    {cval}
    {output}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
    TypeError
        {raises_type}

    See Also
    --------
    sobel : The same with the smoothing ``[1, 2, 1]``.
    scipy.ndimage.prewitt : The reference on numpy arrays.

    Examples
    --------
    >>> step = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]])
    >>> dc.prewitt(step, axis=1).tolist()
    [[0, 3, 3, 0], [0, 3, 3, 0], [0, 3, 3, 0]]
    """
    return linear(x, None, cval, output, lambda d, _w, c, dt: _gradient(
        d, axis, mode, c, PREWITT_SMOOTH, "distconv-prewitt", allow_rechunk, dt))


def _over_axes(x, sigma, mode, cval, axes, kwargs, order, combine, name, allow_rechunk, dtype):
    """``combine`` ("sum" or "magnitude") of one Gaussian derivative filter of ``order`` per
    axis of ``axes`` (term i uses mode[i] on every axis, as scipy's generic_laplace /
    generic_gradient_magnitude; scipy's gradient magnitude smooths every axis with ``sigma``,
    its Laplacian only ``axes``), as one stencil: backends.correlate_terms runs the terms of a
    2-D plane as one kernel on GPUs."""
    unknown = set(kwargs) - {"truncate", "radius"}
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}; the Gaussian takes "
                        f"truncate and radius")
    x = checks.nonzero_ndim(checks.as_array(x))
    ax = checks.axes_in_order(axes, x.ndim)
    if order == 2:
        sigmas = checks.spread(checks.per_axis(sigma, len(ax), "sigma"), ax, x.ndim, 0.0)
    else:
        sigmas = checks.per_axis(sigma, x.ndim, "sigma")
    modes = canonical_modes(mode, len(ax))
    cval = checks.real(cval, "cval")
    if len({m == "wrap" for m in modes}) > 1:
        raise ValueError(f"mode cannot mix 'wrap' with other modes here, got {mode!r}")
    truncate, radius = kwargs.get("truncate", 4.0), kwargs.get("radius")
    terms = [(gaussian_passes(x.ndim, sigmas, checks.spread((order,), (a,), x.ndim, 0), truncate, radius, None), m)
             for a, m in zip(ax, modes)]
    if not terms:
        return passes_filter(x, [], "reflect", 0.0, name, allow_rechunk, dtype)
    depths = [passes_depth(passes, x.ndim) for passes, _ in terms]
    depth = tuple((max(d[a][0] for d in depths), max(d[a][1] for d in depths)) for a in range(x.ndim))
    mode = modes[0] if len(set(modes)) == 1 else "mixed"
    func = backends.correlate_terms.bind(terms=terms, cval=cval, combine=combine, dtype=dtype)
    return _filter(x, func, depth, mode, name, allow_rechunk, dtype)


@docs.fill
def gaussian_laplace(x, sigma, mode="reflect", cval=0.0, *, axes=None, output=None,
                     allow_rechunk=True, **kwargs):
    """Laplacian of Gaussian, as scipy.ndimage.gaussian_laplace.

    The sum over ``axes`` of second Gaussian derivatives (each term smoothing along ``axes``
    alone, as scipy's), computed as one stencil: one pass over the data, one task per chunk
    of a dask input. The numbers are scipy.ndimage.gaussian_laplace's for every chunking and
    device.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    sigma : float or sequence of float
        The Gaussian's standard deviation in elements: one for every axis, or one per axis
        (of ``axes``).
    mode : str or sequence of str, optional
        One mode, or one per axis of ``axes`` (term i of the sum uses mode i along every
        axis, as scipy's generic_laplace); 'wrap' cannot be mixed with the others.
        {mode_names}
    {cval}
    {axes}
    {output}
    {allow_rechunk}
    **kwargs
        ``truncate`` and ``radius``, as :func:`gaussian_filter` takes them.

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a negative ``sigma``, or 'wrap' mixed with other modes.
    TypeError
        {raises_type}
        Also a keyword argument other than ``truncate`` and ``radius``.

    See Also
    --------
    laplace : The Laplacian by central differences, without smoothing.
    gaussian_gradient_magnitude : The gradient's magnitude.
    scipy.ndimage.gaussian_laplace : The reference on numpy arrays.

    Examples
    --------
    >>> dc.gaussian_laplace(np.array([0.0, 0, 1, 0, 0]), 1).round(3).tolist()
    [0.197, 0.002, -0.399, 0.002, 0.197]
    >>> dc.gaussian_laplace(np.array([0.0, 0, 1, 0, 0]), 1, truncate=2).round(3).tolist()
    [0.163, 0.0, -0.403, 0.0, 0.163]
    """
    return linear(x, None, cval, output, lambda d, _w, c, dt: _over_axes(
        d, sigma, mode, c, axes, kwargs, 2, "sum", "distconv-gaussian-laplace", allow_rechunk, dt))


@docs.fill
def gaussian_gradient_magnitude(x, sigma, mode="reflect", cval=0.0, *, axes=None, output=None,
                                allow_rechunk=True, **kwargs):
    """Gaussian gradient magnitude, as scipy.ndimage.gaussian_gradient_magnitude.

    The square root of the sum over ``axes`` of the squared first Gaussian derivatives (each
    term smoothing every axis with ``sigma``, as scipy's), computed as one stencil: one pass
    over the data, one task per chunk of a dask input. The numbers are scipy's for every
    chunking and device.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    sigma : float or sequence of float
        The Gaussian's standard deviation in elements: one for every axis, or one per axis
        of ``x``.
    mode : str or sequence of str, optional
        One mode, or one per axis of ``axes`` (term i of the sum uses mode i along every
        axis, as scipy's generic_gradient_magnitude); 'wrap' cannot be mixed with the others.
        {mode_names}
    {cval}
    {axes}
    {output}
    {allow_rechunk}
    **kwargs
        ``truncate`` and ``radius``, as :func:`gaussian_filter` takes them.

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a negative ``sigma``, or 'wrap' mixed with other modes.
    TypeError
        {raises_type}
        Also a keyword argument other than ``truncate`` and ``radius``.

    See Also
    --------
    gaussian_laplace : The Laplacian of Gaussian.
    sobel : A 3-element derivative.
    scipy.ndimage.gaussian_gradient_magnitude : The reference on numpy arrays.

    Examples
    --------
    >>> dc.gaussian_gradient_magnitude(np.array([0.0, 0, 1, 1, 1]), 1).round(3).tolist()
    [0.108, 0.363, 0.364, 0.122, 0.013]
    """
    return linear(x, None, cval, output, lambda d, _w, c, dt: _over_axes(
        d, sigma, mode, c, axes, kwargs, 1, "magnitude", "distconv-gradient-magnitude",
        allow_rechunk, dt))
