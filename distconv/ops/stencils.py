"""Finite-difference stencils: central differences of any derivative order and even accuracy,
coefficients from Fornberg's algorithm, run as one 1-D correlation pass per derivative
(kernels/convolve.cu's tiled kernel: coefficients in constant memory, coalesced tiles along any
axis, halos through the same graph as every filter)."""

from __future__ import annotations

import functools
import operator
from fractions import Fraction

import numpy as np

from ..core import checks
from . import docs
from .filters import correlate_along, correlate_nd
from .stencil_ops import linear


def _fornberg(offsets: list[int], order: int) -> list[Fraction]:
    """Weights of the ``order``-th derivative at 0 from values at integer ``offsets``."""
    n = len(offsets)
    c = [[Fraction(0)] * (order + 1) for _ in range(n)]
    c[0][0] = Fraction(1)
    c1, c4 = Fraction(1), Fraction(offsets[0])
    for i in range(1, n):
        mn = min(i, order)
        c2, c5, c4 = Fraction(1), c4, Fraction(offsets[i])
        for j in range(i):
            c3 = Fraction(offsets[i] - offsets[j])
            c2 *= c3
            if j == i - 1:
                for k in range(mn, 0, -1):
                    c[i][k] = c1 * (k * c[i - 1][k - 1] - c5 * c[i - 1][k]) / c2
                c[i][0] = -c1 * c5 * c[i - 1][0] / c2
            for k in range(mn, 0, -1):
                c[j][k] = (c4 * c[j][k] - k * c[j][k - 1]) / c3
            c[j][0] = c4 * c[j][0] / c3
        c1 = c2
    return [row[order] for row in c]


@functools.cache
def central_coefficients(order: int, accuracy: int) -> np.ndarray:
    """Central-difference weights (float64) for d^order/dx^order with error O(h^accuracy).

    accuracy=8, order=1 gives the classic radius-4 stencil (4/5, -1/5, 4/105, -1/280)."""
    radius = (order + 1) // 2 - 1 + accuracy // 2
    offsets = list(range(-radius, radius + 1))
    return np.array([float(w) for w in _fornberg(offsets, order)])


def _check(order, accuracy):
    order = operator.index(order)
    accuracy = operator.index(accuracy)
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if accuracy < 2 or accuracy % 2:
        raise ValueError(f"accuracy must be an even integer >= 2, got {accuracy}")
    return order, accuracy


def _float_result(x):
    """A difference quotient of integers is not an integer: float64 for integer or bool input
    (as numpy.gradient), the input's own dtype otherwise."""
    return np.float64 if np.dtype(x.dtype).kind in "biu" else None


@docs.fill
def derivative(x, axis, order=1, accuracy=2, spacing=1.0, mode="nearest", *, edge_order=None, allow_rechunk=True):
    """Derivative along an axis by central finite differences of any order and accuracy.

    ``d^order x / d axis^order`` on a uniform grid of step ``spacing``, by the central
    difference whose error is O(spacing^accuracy): weights from Fornberg's algorithm over
    ``order + accuracy - 1`` points (rounded up to odd), one 1-D correlation pass. The boundary
    ``mode`` supplies the values beyond the edges, so the edges use the same central formula;
    ``edge_order`` gives ``numpy.gradient``'s one-sided differences there instead (and
    ``DataArray.differentiate``'s, through the accessor). scipy.ndimage has no counterpart.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data; integers and bools give float64
        (as ``numpy.gradient``), the others their own dtype.
    axis : int
        The axis to differentiate along.
    order : int, optional
        The derivative's order, 1 or more. Default 1.
    accuracy : int, optional
        The order of the error, an even integer from 2: accuracy 2 is the 3-point
        ``[-1/2, 0, 1/2]`` for ``order=1``; accuracy 8, the classic 9-point stencil. Default 2.
    spacing : float, optional
        The grid step along ``axis``. Default 1.0.
    {mode}
        Default 'nearest'.
    edge_order : {{1, 2}}, optional
        One-sided differences of this accuracy at the first and last element along ``axis``,
        as ``numpy.gradient(x, spacing, axis=axis, edge_order=edge_order)`` (``order=1`` and
        ``accuracy=2`` only; ``mode`` is then not used). Default None: the central formula
        everywhere, with ``mode`` beyond the edges.
    {allow_rechunk}

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        An ``order`` below 1, an odd ``accuracy`` or one below 2, a ``spacing`` of zero, an
        unknown ``mode``, an ``axis`` out of range, an ``edge_order`` other than 1 or 2 (or
        with another ``order`` or ``accuracy``, or fewer than ``edge_order + 1`` elements
        along ``axis``), or, with ``allow_rechunk=False``, dask chunks thinner than the
        stencil's reach.
    TypeError
        ``x`` of a dtype distconv does not process (float16, object, strings), or a
        non-integer ``axis``, ``order`` or ``accuracy``.

    See Also
    --------
    laplace : The sum of second derivatives along every axis.
    numpy.gradient : First derivatives, one-sided at the edges.
    sobel, gaussian_filter : Smoothed derivatives.

    Examples
    --------
    >>> dc.derivative(np.arange(5.0) ** 2, 0).tolist()
    [0.5, 2.0, 4.0, 6.0, 3.5]
    >>> dc.derivative(np.arange(5) ** 2, 0, order=2, spacing=0.5).tolist()
    [4.0, 8.0, 8.0, 8.0, -28.0]
    >>> dc.derivative(np.arange(6.0).reshape(2, 3), axis=1).tolist()
    [[0.5, 1.0, 0.5], [0.5, 1.0, 0.5]]
    >>> dc.derivative(np.arange(5.0) ** 2, 0, edge_order=2).tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0]
    """
    order, accuracy = _check(order, accuracy)
    h = checks.real(spacing, "spacing")
    if h == 0:
        raise ValueError("spacing must not be zero")
    if edge_order is not None:
        return _one_sided_ends(checks.as_array(x, kinds=checks.SUPPORTED_KINDS + "c"), axis, order, accuracy, h,
                               edge_order)
    w = central_coefficients(order, accuracy) / h**order
    x = checks.as_array(x, kinds=checks.SUPPORTED_KINDS + "c")
    return linear(x, w, 0.0, _float_result(x), lambda d, w, c, dt: correlate_along(
        d, w, axis, mode, c, 0, False, "distconv-derivative", allow_rechunk, dt), conjugate=True)


def _one_sided_ends(x, axis, order: int, accuracy: int, h: float, edge_order):
    """numpy.gradient's scheme along ``axis``: the central accuracy-2 first difference inside,
    one-sided differences of ``edge_order`` at the two ends (numpy, cupy and dask alike; dask's
    chunks along ``axis`` grown where thinner than the ends' reach)."""
    from ..core.arrays import array_kind, array_module, on_data

    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise ValueError(f"edge_order must be 1 or 2, got {edge_order!r}")
    if (order, accuracy) != (1, 2):
        raise ValueError(f"edge_order gives numpy.gradient's scheme (order 1, accuracy 2), got order {order} "
                         f"and accuracy {accuracy}")
    ax = checks.axis(axis, x.ndim)
    if x.shape[ax] < edge_order + 1:
        raise ValueError(f"edge_order {edge_order} needs at least {edge_order + 1} elements along axis {ax}, "
                         f"got {x.shape[ax]}")

    def run(d):
        if array_kind(d) != "dask":
            return array_module(d).gradient(d, h, axis=ax, edge_order=edge_order)
        import dask.array as da

        if min(d.chunks[ax]) < edge_order + 1:  # dask's gradient needs that much in every chunk
            from ..core.stencil import merge_thin

            d = d.rechunk({ax: merge_thin(d.chunks[ax], edge_order + 1, edge_order + 1)})
        return da.gradient(d, h, axis=ax, edge_order=edge_order)

    return on_data(x, run)


@docs.fill
def laplace(x, accuracy=2, spacing=1.0, mode="nearest", *, allow_rechunk=True):
    """N-D Laplacian by central finite differences of any accuracy.

    The sum over every axis of second derivatives (:func:`derivative` with ``order=2``), run as
    one N-D star-stencil pass. This differs from scipy.ndimage.laplace, which is the 3-point
    ``[1, -2, 1]`` alone with unit spacing: here ``accuracy`` picks the stencil (2 gives
    scipy's 3 points, 4 five points, ...), ``spacing`` scales each axis, the default mode is
    'nearest', and integer data gives float64.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data; integers and bools give float64,
        the others their own dtype.
    accuracy : int, optional
        The order of the error, an even integer from 2. Default 2.
    spacing : float or sequence of float, optional
        The grid step: one for every axis, or one per axis. Default 1.0.
    {mode}
        Default 'nearest'.
    {allow_rechunk}

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        An odd ``accuracy`` or one below 2, a ``spacing`` of zero, an unknown ``mode``, a 0-d
        ``x``, or, with ``allow_rechunk=False``, dask chunks thinner than the stencil's reach.
    TypeError
        ``x`` of a dtype distconv does not process (float16, object, strings), or a
        non-integer ``accuracy``.

    See Also
    --------
    derivative : One derivative along one axis.
    gaussian_laplace : The Laplacian of a Gaussian-smoothed input.
    scipy.ndimage.laplace : The 3-point Laplacian.

    Examples
    --------
    >>> dc.laplace(np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]])).tolist()
    [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]
    >>> x4 = np.arange(7.0) ** 4  # its second derivative is 12 x**2
    >>> dc.laplace(x4)[1:5].tolist(), dc.laplace(x4, accuracy=4)[2:5].round(6).tolist()
    ([14.0, 50.0, 110.0, 194.0], [48.0, 108.0, 192.0])
    """
    _, accuracy = _check(2, accuracy)
    x = checks.nonzero_ndim(checks.as_array(x, kinds=checks.SUPPORTED_KINDS + "c"))
    hs = checks.per_axis(spacing, x.ndim, "spacing")
    if any(h == 0 for h in hs):
        raise ValueError(f"spacing must not be zero, got {spacing!r}")
    c = central_coefficients(2, accuracy)
    r = len(c) // 2
    star = np.zeros((2 * r + 1,) * x.ndim)
    centre = (r,) * x.ndim
    for ax, h in enumerate(hs):
        idx = list(centre)
        for k, wk in enumerate(c):
            idx[ax] = k
            star[tuple(idx)] += wk / h**2
    return linear(x, star, 0.0, _float_result(x), lambda d, w, c, dt: correlate_nd(
        d, w, mode, c, 0, False, "distconv-laplace", allow_rechunk, dtype=dt))
