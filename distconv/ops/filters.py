"""Linear filters with scipy.ndimage semantics: correlate, convolve, their 1-D forms and the
separable Gaussian. Arguments are checked first; numpy/cupy in -> the backend on the whole
array, dask in -> one halo task per chunk (graph.halo), xarray in -> the same on its data."""

from __future__ import annotations

from functools import partial

import numpy as np

from .. import backends
from ..core import checks
from ..core.arrays import on_data
from ..core.modes import canonical_mode
from ..core.stencil import Probe, Stencil, chain, identity_stencil

# Consecutive stencils on a dask array fuse when the graph is built: the second one runs on
# the first one's input with the summed halo, one task per chunk, no intermediate array in the
# graph. False keeps one halo pass per op (for comparison; results are the same).
FUSE = True


def _filter(x, func, depth: tuple, mode: str, name: str, allow_rechunk: bool):
    st = Stencil(func, tuple(depth), mode, name)
    if isinstance(x, Probe):  # planning: the checked stencil, nothing run
        return st

    def run(data):
        if checks.array_kind(data) == "dask":
            return apply_stencil(data, st, allow_rechunk)
        return func(data)

    return on_data(x, run)


def fused_source(data):
    """(the array a dask stencil result was computed from, the stencil), or None."""
    return getattr(data, "_distconv_stencil", None) if FUSE else None


def apply_stencil(data, st: Stencil, allow_rechunk: bool = True, per_chunk=None, out_func=None,
                  dtype=None):
    """``st`` over a dask array as one halo task per chunk, fused with the stencil that made
    ``data`` when there is one. ``per_chunk``/``out_func``: reduce each chunk's result with
    ``out_func`` to a small array of that shape instead (a fused histogram)."""
    from ..graph.halo import map_halo

    prev = fused_source(data)
    source = data
    if prev is not None and (prev[1].mode == "wrap") == (st.mode == "wrap"):
        source, st = prev[0], chain([prev[1], st], _joined(prev[1].name, st.name))
    func = st.func if out_func is None else _Then(st.func, out_func)
    periodic = (st.mode == "wrap",) * source.ndim
    out = map_halo(source, func, st.depth, periodic, st.name, dtype or source.dtype, allow_rechunk,
                   per_chunk=per_chunk)
    if per_chunk is None:
        out._distconv_stencil = (source, st)
    return out


def _joined(a: str, b: str) -> str:
    return a + "-" + b.removeprefix("distconv-")


class _Then:
    """g(f(tile)): a stencil's block handed to a per-chunk reduction (picklable)."""

    def __init__(self, f, g):
        self.f, self.g = f, g

    def __call__(self, tile):
        return self.g(self.f(tile))


def _depth(ksize: int, origin: int) -> tuple:
    centre = ksize // 2 + origin
    return (centre, ksize - 1 - centre)


def correlate_nd(x, weights, mode, cval, origin, flip: bool, name: str, allow_rechunk):
    x = checks.nonzero_ndim(checks.as_array(x))
    w = checks.weights(weights, x.ndim)
    mode = canonical_mode(mode)
    cval = checks.real(cval, "cval")
    org = checks.origins(origin, w.shape)
    # scipy.ndimage's N-D filters keep only taps with |w| > DBL_EPSILON (NaN taps drop out)
    w = np.where(np.abs(w) > np.finfo(np.float64).eps, w, 0.0)
    if flip:  # convolve = correlate with the mask reversed (scipy's origin shift for even sizes)
        w = w[(slice(None, None, -1),) * w.ndim]
        org = tuple(-o - (1 - k % 2) for o, k in zip(org, w.shape))
    depth = tuple(_depth(k, o) for k, o in zip(w.shape, org))
    func = partial(backends.correlate, weights=w, mode=mode, cval=cval, origin=org)
    return _filter(x, func, depth, mode, name, allow_rechunk)


def correlate(x, weights, mode="reflect", cval=0.0, origin=0, *, allow_rechunk=True):
    """N-D correlation with scipy.ndimage.correlate semantics, for any chunking.

    ``mode``: constant, reflect, nearest, mirror, wrap (grid-* aliases accepted). Chunks
    thinner than the mask's reach are merged with a warning (``allow_rechunk=False``: error).
    """
    return correlate_nd(x, weights, mode, cval, origin, False, "distconv-correlate", allow_rechunk)


def convolve(x, weights, mode="reflect", cval=0.0, origin=0, *, allow_rechunk=True):
    """N-D convolution with scipy.ndimage.convolve semantics (see :func:`correlate`)."""
    return correlate_nd(x, weights, mode, cval, origin, True, "distconv-convolve", allow_rechunk)


def _passes_filter(x, passes, mode, cval, name, allow_rechunk):
    depth = [(0, 0)] * x.ndim
    for axis, w, o in passes:
        lo, hi = _depth(len(w), o)
        depth[axis] = (max(depth[axis][0], lo), max(depth[axis][1], hi))
    func = partial(backends.correlate_passes, passes=passes, mode=mode, cval=cval)
    return _filter(x, func, tuple(depth), mode, name, allow_rechunk)


def _correlate_1d(x, weights, axis, mode, cval, origin, flip, name, allow_rechunk):
    x = checks.nonzero_ndim(checks.as_array(x))
    w = checks.weights(weights, 1)
    ax = checks.axis(axis, x.ndim)
    mode = canonical_mode(mode)
    cval = checks.real(cval, "cval")
    (org,) = checks.origins(origin, w.shape)
    if flip:
        w, org = w[::-1], -org - (1 - len(w) % 2)
    return _passes_filter(x, [(ax, w, org)], mode, cval, name, allow_rechunk)


def correlate1d(x, weights, axis=-1, mode="reflect", cval=0.0, origin=0, *, allow_rechunk=True):
    """1-D correlation along ``axis`` (scipy.ndimage.correlate1d semantics)."""
    return _correlate_1d(x, weights, axis, mode, cval, origin, False, "distconv-correlate1d",
                         allow_rechunk)


def convolve1d(x, weights, axis=-1, mode="reflect", cval=0.0, origin=0, *, allow_rechunk=True):
    """1-D convolution along ``axis`` (scipy.ndimage.convolve1d semantics)."""
    return _correlate_1d(x, weights, axis, mode, cval, origin, True, "distconv-convolve1d",
                         allow_rechunk)


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


def gaussian_filter(x, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, *, radius=None,
                    allow_rechunk=True):
    """Separable Gaussian filter (scipy.ndimage.gaussian_filter semantics), one pass per axis."""
    x = checks.nonzero_ndim(checks.as_array(x))
    sigmas = checks.per_axis(sigma, x.ndim, "sigma")
    orders = checks.per_axis(order, x.ndim, "order", cast=int)
    mode = canonical_mode(mode)
    cval = checks.real(cval, "cval")
    truncate = checks.real(truncate, "truncate")
    radii = checks.per_axis(radius, x.ndim, "radius", cast=lambda r: r) if radius is not None else (None,) * x.ndim
    for s in sigmas:
        if not s >= 0:
            raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    for o in orders:
        if o < 0:
            raise ValueError(f"order must be >= 0, got {order!r}")
    passes = []
    for ax, (s, o, r) in enumerate(zip(sigmas, orders, radii)):
        if s <= 1e-15:
            continue
        r = int(truncate * s + 0.5) if r is None else int(r)
        if r < 0:
            raise ValueError(f"radius must be >= 0, got {radius!r}")
        passes.append((ax, gaussian_kernel1d(s, o, r), 0))
    if not passes:
        if isinstance(x, Probe):
            return identity_stencil(x.ndim, mode, "distconv-gaussian")
        return on_data(x, lambda d: d.copy())
    return _passes_filter(x, passes, mode, cval, "distconv-gaussian", allow_rechunk)


def stencil_of(op, ndim: int, dtype, *args, **params) -> Stencil:
    """The Stencil that ``op(x, *args, **params)`` would run on an array of ``ndim`` and
    ``dtype`` (every argument checked as in a real call), for fused chains and storage jobs."""
    st = op(Probe.like(ndim, dtype), *args, **params)
    if not isinstance(st, Stencil):
        raise TypeError(f"{getattr(op, '__name__', op)!r} is not a stencil op")
    return st
