"""Public functions: check arguments, then dispatch on the input's type.

numpy/cupy in -> the chunk function on the whole array; dask in -> a lazy graph (distconv.graph);
xarray in -> the same on its data, dims/coords/attrs kept. Errors come before any work.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from . import checks
from .chunk import convolve as chunk_convolve
from .chunk import ops as chunk_ops
from .chunk import reduce as chunk_reduce
from .chunk import scan as chunk_scan
from .chunk.modes import canonical_mode


def _keep_xarray(x, op):
    """Apply ``op`` to the data of a DataArray (shape-preserving), or to the array itself."""
    if checks.array_kind(x) == "xarray":
        return x.copy(data=op(x.data))
    return op(x)


# ---------------------------------------------------------------------------------- filters

def _filter(x, func, depth: tuple, mode: str, name: str, allow_rechunk: bool):
    def run(data):
        if checks.array_kind(data) == "dask":
            from .graph.halo import map_halo

            periodic = (mode == "wrap",) * data.ndim
            return map_halo(data, func, depth, periodic, name, data.dtype, allow_rechunk)
        return func(data)

    return _keep_xarray(x, run)


def _depth(ksize: int, origin: int) -> tuple:
    centre = ksize // 2 + origin
    return (centre, ksize - 1 - centre)


def _correlate_nd(x, weights, mode, cval, origin, flip: bool, name: str, allow_rechunk):
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
    func = partial(chunk_convolve.correlate, weights=w, mode=mode, cval=cval, origin=org)
    return _filter(x, func, depth, mode, name, allow_rechunk)


def correlate(x, weights, mode="reflect", cval=0.0, origin=0, *, allow_rechunk=True):
    """N-D correlation with scipy.ndimage.correlate semantics, for any chunking.

    ``mode``: constant, reflect, nearest, mirror, wrap (grid-* aliases accepted). Chunks
    thinner than the mask's reach are merged with a warning (``allow_rechunk=False``: error).
    """
    return _correlate_nd(x, weights, mode, cval, origin, False, "distconv-correlate", allow_rechunk)


def convolve(x, weights, mode="reflect", cval=0.0, origin=0, *, allow_rechunk=True):
    """N-D convolution with scipy.ndimage.convolve semantics (see :func:`correlate`)."""
    return _correlate_nd(x, weights, mode, cval, origin, True, "distconv-convolve", allow_rechunk)


def _passes_filter(x, passes, mode, cval, name, allow_rechunk):
    depth = [(0, 0)] * x.ndim
    for axis, w, o in passes:
        lo, hi = _depth(len(w), o)
        depth[axis] = (max(depth[axis][0], lo), max(depth[axis][1], hi))
    func = partial(chunk_convolve.correlate_passes, passes=passes, mode=mode, cval=cval)
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
        return _keep_xarray(x, lambda d: d.copy())
    return _passes_filter(x, passes, mode, cval, "distconv-gaussian", allow_rechunk)


# ------------------------------------------------------------------------------------ scans

def scan(x, op="add", axis=None, exclusive=False, dtype=None):
    """Inclusive (or exclusive) prefix scan with ``op`` in add | mul | min | max.

    numpy's rules: ``axis=None`` scans the C-order flattened array; add/mul widen small
    integers (as np.cumsum/np.cumprod), min/max keep the dtype; NaN propagates; integer
    overflow wraps. Distributed: chunk totals -> carries -> one seeded pass per chunk.
    """
    op = chunk_ops.check_op(op)
    x = checks.as_array(x)
    out_dtype = chunk_ops.result_dtype(op, x.dtype, dtype)
    if not isinstance(exclusive, bool):
        raise TypeError(f"exclusive must be True or False, got {exclusive!r}")
    if axis is None:
        if checks.array_kind(x) == "xarray":
            raise ValueError("axis=None flattens; give an axis (or use a dim) for xarray inputs")
        x = x.reshape(-1) if checks.array_kind(x) == "dask" else x.ravel()
        ax = 0
    else:
        ax = checks.axis(axis, max(x.ndim, 1))

    def run(data):
        if checks.array_kind(data) == "dask":
            from .graph.scan import scan as graph_scan

            return graph_scan(data, op, ax, exclusive, out_dtype)
        return chunk_scan.scan(data, op, ax, exclusive, out_dtype)

    return _keep_xarray(x, run)


# ------------------------------------------------------------------------------- reductions

def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    seq = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(sorted({checks.axis(a, ndim) for a in seq}))
    if len(out) != len(seq):
        raise ValueError(f"axis {axis!r} repeats an axis")
    return out


def reduce(x, op="add", axis=None, dtype=None, keepdims=False):
    """``op``-reduction (add | mul | min | max) over ``axis`` with numpy's dtype rules;
    distributed as a tree reduction."""
    op = chunk_ops.check_op(op)
    x = checks.as_array(x)
    out_dtype = chunk_ops.result_dtype(op, x.dtype, dtype)
    axes = _axes(axis, x.ndim)
    kind = checks.array_kind(x)
    if kind == "xarray":
        dims = [x.dims[a] for a in axes]
        return x.reduce(lambda d, axis=None: reduce(d, op, axis, dtype), dim=dims, keep_attrs=True)
    if kind == "dask":
        import dask.array as da

        chunk = partial(_chunk_reduce, op=op, dtype=out_dtype)
        return da.reduction(x, chunk, chunk, combine=chunk, axis=axes, keepdims=keepdims,
                            dtype=out_dtype, split_every=8, name=f"distconv-reduce-{op}",
                            meta=x._meta.astype(out_dtype))
    return chunk_reduce.reduce(x, op, axes, out_dtype, keepdims)


def _chunk_reduce(block, axis=None, keepdims=False, *, op, dtype, computing_meta=False):
    return chunk_reduce.reduce(block, op, axis, dtype, keepdims)


# -------------------------------------------------------------------------------- transpose

def transpose(x, axes=None):
    """numpy.transpose; on the GPU the result is materialized by a tiled shared-memory kernel."""
    from dask.base import tokenize

    from .chunk import transpose as chunk_transpose

    x = checks.as_array(x)
    perm = tuple(range(x.ndim))[::-1] if axes is None else tuple(checks.axis(a, x.ndim) for a in axes)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"axes must be a permutation of the {x.ndim} axes, got {axes!r}")
    kind = checks.array_kind(x)
    if kind == "xarray":
        return x.transpose(*[x.dims[a] for a in perm])
    if kind == "dask":
        import dask.array as da

        ind = tuple(range(x.ndim))
        return da.blockwise(partial(chunk_transpose.transpose, axes=perm), tuple(ind[a] for a in perm),
                            x, ind, dtype=x.dtype, name=f"distconv-transpose-{tokenize(x, perm)}",
                            meta=x._meta.transpose(perm) if x._meta.ndim == x.ndim else None)
    return chunk_transpose.transpose(x, perm)
