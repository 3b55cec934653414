"""Linear filters with scipy.ndimage semantics: correlate, convolve and their 1-D forms (the
machinery they share with every filter: ops/stencil_ops.py)."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..core import checks
from ..core.modes import canonical_mode
from ..core.stencil import mask_depth
from ..graph.declared import FUSE_KEY  # noqa: F401  (the switch tests and benchmarks set)
from . import docs
from .stencil_ops import _filter, expand_mask, linear, passes_filter


def correlate_nd(x, weights, mode, cval, origin, flip: bool, name: str, allow_rechunk,
                 axes=None, dtype=None):
    x = checks.nonzero_ndim(checks.as_array(x))
    w, org = expand_mask(x, checks.weights(weights, None), origin, axes, "weights")
    mode = canonical_mode(mode)
    cval = checks.real(cval, "cval")
    # scipy.ndimage's N-D filters keep only taps with |w| > DBL_EPSILON (NaN taps drop out)
    w = np.where(np.abs(w) > np.finfo(np.float64).eps, w, 0.0)
    if flip:  # convolve = correlate with the mask reversed (scipy's origin shift for even sizes)
        w = w[(slice(None, None, -1),) * w.ndim]
        org = tuple(-o - (1 - k % 2) for o, k in zip(org, w.shape))
    depth = mask_depth(w.shape, org)
    func = backends.correlate.bind(weights=w, mode=mode, cval=cval, origin=org, dtype=dtype)
    return _filter(x, func, depth, mode, name, allow_rechunk, dtype)


@docs.fill
def correlate(x, weights, mode="reflect", cval=0.0, origin=0, *, axes=None, output=None,
              allow_rechunk=True):
    """Multidimensional correlation, as scipy.ndimage.correlate.

    Each element of the result is the sum of ``weights`` times the input elements under the
    mask, the mask centred on that element (``origin`` shifts it). The numbers are
    scipy.ndimage.correlate's for every chunking of a dask input and on every device; as in
    scipy, mask entries smaller in magnitude than float64's epsilon drop out. Complex data or
    masks run as real correlations of their parts (a complex mask is conjugated, as
    ``numpy.correlate`` does).

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    weights : array_like
        The mask: real or complex numbers, one axis per axis of ``x`` (or per entry of
        ``axes``, in that order).
    {mode}
    {cval}
    {origin}
    {axes}
    {output}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also ``weights`` empty or with the wrong number of dimensions.
    TypeError
        {raises_type}

    See Also
    --------
    convolve : The same with the mask reversed.
    correlate1d : Along one axis.
    scipy.ndimage.correlate : The reference on numpy arrays.

    Notes
    -----
    {halo}

    Examples
    --------
    >>> dc.correlate(np.arange(5.0), [1, 0, -1])
    array([-1., -2., -2., -2., -1.])
    >>> cross = [[0, 1, 0], [1, 1, 1], [0, 1, 0]]
    >>> dc.correlate(np.arange(9.0).reshape(3, 3), cross, mode="constant")
    array([[ 4.,  7.,  8.],
           [13., 20., 19.],
           [16., 25., 20.]])
    """
    return linear(x, weights, cval, output, lambda d, w, c, dt: correlate_nd(
        d, w, mode, c, origin, False, "distconv-correlate", allow_rechunk, axes, dt), conjugate=True)


@docs.fill
def convolve(x, weights, mode="reflect", cval=0.0, origin=0, *, axes=None, output=None,
             allow_rechunk=True):
    """Multidimensional convolution, as scipy.ndimage.convolve.

    The correlation with the mask reversed along every axis (scipy's origin shift for masks of
    even size included). The numbers are scipy.ndimage.convolve's for every chunking of a dask
    input and on every device. Complex data or masks run as real convolutions of their parts.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    weights : array_like
        The mask: real or complex numbers, one axis per axis of ``x`` (or per entry of
        ``axes``, in that order).
    {mode}
    {cval}
    {origin}
    {axes}
    {output}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also ``weights`` empty or with the wrong number of dimensions.
    TypeError
        {raises_type}

    See Also
    --------
    correlate : The same without reversing the mask.
    convolve1d : Along one axis.
    scipy.ndimage.convolve : The reference on numpy arrays.

    Notes
    -----
    {halo}

    Examples
    --------
    >>> dc.convolve(np.arange(5.0), [1, 0, -1])
    array([1., 2., 2., 2., 1.])
    >>> dc.convolve(np.array([[1, 2], [3, 4]]), [[1, 1], [1, 1]], mode="constant").tolist()
    [[10, 6], [7, 4]]
    """
    return linear(x, weights, cval, output, lambda d, w, c, dt: correlate_nd(
        d, w, mode, c, origin, True, "distconv-convolve", allow_rechunk, axes, dt))


def correlate_along(x, weights, axis, mode, cval, origin, flip, name, allow_rechunk, dtype):
    x = checks.nonzero_ndim(checks.as_array(x))
    w = checks.weights(weights, 1)
    ax = checks.axis(axis, x.ndim)
    mode = canonical_mode(mode)
    cval = checks.real(cval, "cval")
    (org,) = checks.origins(origin, w.shape)
    if flip:
        w, org = w[::-1], -org - (1 - len(w) % 2)
    return passes_filter(x, [(ax, w, org)], mode, cval, name, allow_rechunk, dtype)


@docs.fill
def correlate1d(x, weights, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
                allow_rechunk=True):
    """One-dimensional correlation along an axis, as scipy.ndimage.correlate1d.

    Each 1-D line of ``x`` along ``axis`` is correlated with ``weights``; the numbers are
    scipy.ndimage.correlate1d's for every chunking and device. Complex data or masks run as
    real correlations of their parts (a complex mask is conjugated).

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    weights : array_like
        The 1-D mask (real or complex).
    {axis}
    {mode}
    {cval}
    origin : int, optional
        Where the mask sits over each element: 0 (default) centres it, a positive value
        shifts it to the left, a negative one to the right.
    {output}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also ``weights`` empty or not 1-D.
    TypeError
        {raises_type}

    See Also
    --------
    correlate : Over several axes at once.
    convolve1d : The same with the mask reversed.
    scipy.ndimage.correlate1d : The reference on numpy arrays.

    Examples
    --------
    >>> dc.correlate1d(np.array([1.0, 2, 4, 8]), [1, 1])
    array([ 2.,  3.,  6., 12.])
    >>> dc.correlate1d(np.arange(6).reshape(2, 3), [1, 1, 1], axis=0).tolist()
    [[3, 6, 9], [6, 9, 12]]
    """
    return linear(x, weights, cval, output, lambda d, w, c, dt: correlate_along(
        d, w, axis, mode, c, origin, False, "distconv-correlate-axis", allow_rechunk, dt), conjugate=True)


@docs.fill
def convolve1d(x, weights, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
               allow_rechunk=True):
    """One-dimensional convolution along an axis, as scipy.ndimage.convolve1d.

    Each 1-D line of ``x`` along ``axis`` is convolved with ``weights`` (the correlation with
    the mask reversed); the numbers are scipy.ndimage.convolve1d's for every chunking and
    device.

    Parameters
    ----------
    {x}
        Bool, integer, float32, float64 or complex data.
    weights : array_like
        The 1-D mask (real or complex).
    {axis}
    {mode}
    {cval}
    origin : int, optional
        Where the mask sits over each element: 0 (default) centres it, a positive value
        shifts it to the left, a negative one to the right.
    {output}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also ``weights`` empty or not 1-D.
    TypeError
        {raises_type}

    See Also
    --------
    convolve : Over several axes at once.
    correlate1d : The same without reversing the mask.
    scipy.ndimage.convolve1d : The reference on numpy arrays.

    Examples
    --------
    >>> dc.convolve1d(np.array([1.0, 2, 4, 8]), [1, 2], mode="constant")
    array([ 4.,  8., 16., 16.])
    """
    return linear(x, weights, cval, output, lambda d, w, c, dt: correlate_along(
        d, w, axis, mode, c, origin, True, "distconv-convolve-axis", allow_rechunk, dt))
