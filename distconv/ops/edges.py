"""Edge and blob filters with scipy.ndimage semantics: sobel, prewitt (a derivative pass plus
smoothing passes), gaussian_laplace and gaussian_gradient_magnitude (a sum over axes of
Gaussian derivative filters, as one stencil: one halo task per chunk on dask)."""

from __future__ import annotations

import numpy as np

from ..core import checks
from ..core.arrays import array_module
from ..core.modes import canonical_modes
from ..core.stencil import Probe
from .filters import _filter, linear, passes_filter
from .smooth import gaussian

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
    """``combine`` of one Gaussian derivative filter of ``order`` per axis of ``axes`` (term i
    uses mode[i] on every axis, as scipy's generic_laplace / generic_gradient_magnitude; scipy's
    gradient magnitude smooths every axis with ``sigma``, its Laplacian only ``axes``)."""
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
    if len({m == "wrap" for m in modes}) > 1:
        raise ValueError(f"mode cannot mix 'wrap' with other modes here, got {mode!r}")
    probe = Probe.like(x.ndim, x.dtype)
    terms = [gaussian(probe, sigmas, checks.spread((order,), (a,), x.ndim, 0), m, cval,
                      kwargs.get("truncate", 4.0), kwargs.get("radius"), None, allow_rechunk, dtype)
             for a, m in zip(ax, modes)]
    if not terms:
        return passes_filter(x, [], "reflect", 0.0, name, allow_rechunk, dtype)
    depth = tuple((max(t.depth[a][0] for t in terms), max(t.depth[a][1] for t in terms))
                  for a in range(x.ndim))
    mode = modes[0] if len(set(modes)) == 1 else "mixed"
    return _filter(x, combine(tuple(t.func for t in terms)), depth, mode, name, allow_rechunk, dtype)


class _Sum:
    """Sum of the terms' blocks in their dtype (scipy adds into the output array)."""

    def __init__(self, terms):
        self.terms = terms

    def __call__(self, tile):
        out = self.terms[0](tile)
        for f in self.terms[1:]:
            out += f(tile)
        return out


class _Magnitude:
    """sqrt of the sum of the terms' squares, each step in the output dtype as scipy's
    generic_gradient_magnitude (the square root cast back unsafely)."""

    def __init__(self, terms):
        self.terms = terms

    def __call__(self, tile):
        out = None
        for f in self.terms:
            t = f(tile)
            t *= t
            out = t if out is None else out.__iadd__(t)
        return array_module(out).sqrt(out).astype(out.dtype)


def gaussian_laplace(x, sigma, mode="reflect", cval=0.0, *, axes=None, output=None,
                     allow_rechunk=True, **kwargs):
    """Laplacian of Gaussian (scipy.ndimage.gaussian_laplace semantics): the sum over axes of
    second Gaussian derivatives; ``kwargs``: truncate, radius."""
    return linear(x, None, cval, output, lambda d, _w, c, dt: _over_axes(
        d, sigma, mode, c, axes, kwargs, 2, _Sum, "distconv-gaussian-laplace", allow_rechunk, dt))


def gaussian_gradient_magnitude(x, sigma, mode="reflect", cval=0.0, *, axes=None, output=None,
                                allow_rechunk=True, **kwargs):
    """Gradient magnitude with Gaussian derivatives (scipy.ndimage.gaussian_gradient_magnitude
    semantics); ``kwargs``: truncate, radius."""
    return linear(x, None, cval, output, lambda d, _w, c, dt: _over_axes(
        d, sigma, mode, c, axes, kwargs, 1, _Magnitude, "distconv-gradient-magnitude",
        allow_rechunk, dt))
