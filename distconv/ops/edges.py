"""Edge and blob filters with scipy.ndimage semantics: sobel, prewitt (a derivative pass plus
smoothing passes), gaussian_laplace and gaussian_gradient_magnitude (a sum over axes of
Gaussian derivative filters, as one stencil: one halo task per chunk on dask)."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..core import checks
from ..core.modes import canonical_modes
from ..core.stencil import passes_depth
from .filters import _filter, linear, passes_filter
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


def sobel(x, axis=-1, mode="reflect", cval=0.0, *, output=None, allow_rechunk=True):
    """Sobel derivative along ``axis`` (scipy.ndimage.sobel semantics); ``mode``: one, or one
    per axis."""
    return linear(x, None, cval, output, lambda d, _w, c, dt: _gradient(
        d, axis, mode, c, SOBEL_SMOOTH, "distconv-sobel", allow_rechunk, dt))


def prewitt(x, axis=-1, mode="reflect", cval=0.0, *, output=None, allow_rechunk=True):
    """Prewitt derivative along ``axis`` (scipy.ndimage.prewitt semantics)."""
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


def gaussian_laplace(x, sigma, mode="reflect", cval=0.0, *, axes=None, output=None,
                     allow_rechunk=True, **kwargs):
    """Laplacian of Gaussian (scipy.ndimage.gaussian_laplace semantics): the sum over axes of
    second Gaussian derivatives; ``kwargs``: truncate, radius."""
    return linear(x, None, cval, output, lambda d, _w, c, dt: _over_axes(
        d, sigma, mode, c, axes, kwargs, 2, "sum", "distconv-gaussian-laplace", allow_rechunk, dt))


def gaussian_gradient_magnitude(x, sigma, mode="reflect", cval=0.0, *, axes=None, output=None,
                                allow_rechunk=True, **kwargs):
    """Gradient magnitude with Gaussian derivatives (scipy.ndimage.gaussian_gradient_magnitude
    semantics); ``kwargs``: truncate, radius."""
    return linear(x, None, cval, output, lambda d, _w, c, dt: _over_axes(
        d, sigma, mode, c, axes, kwargs, 1, "magnitude", "distconv-gradient-magnitude",
        allow_rechunk, dt))
