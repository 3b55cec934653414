"""Rank filters with scipy.ndimage semantics: minimum/maximum (separable over a box: one 1-D
pass per axis), median, any rank and percentile over a footprint, on kernels/rank.cu for cupy
blocks. NaN ordering is unspecified, as in scipy."""

from __future__ import annotations

import operator
from functools import partial

import numpy as np

from .. import backends
from ..core import checks
from ..core.modes import canonical_mode, canonical_modes, one_mode
from ..core.stencil import mask_depth, reach
from .filters import _filter, _Then, deliver, expand_mask, output_dtype

_KINDS = checks.SUPPORTED_KINDS  # no complex: an order is needed


def _footprint(x, size, footprint, axes):
    """(box sizes per axis of ``axes``, None) for a full box, else (None, boolean footprint)."""
    if footprint is not None:
        if size is not None:
            checks.warn_user("size is ignored because footprint is given")
        fp = np.asarray(footprint, dtype=bool)
        if fp.size == 0 or not fp.any():
            raise ValueError(f"footprint must select at least one element, got shape {fp.shape}")
        return (fp.shape, None) if fp.all() else (None, fp)
    if size is None:
        raise checks.FilterArgumentError("give size or footprint")
    n = len(checks.axes_in_order(axes, x.ndim))
    sizes = checks.per_axis(size, n, "size", cast=operator.index)
    if any(k < 1 for k in sizes):
        raise checks.FilterArgumentError(f"size must be >= 1 along every axis, got {size!r}")
    return sizes, None


def _extremum(x, size, footprint, mode, cval, origin, axes, output, minimum: bool, name, allow_rechunk):
    x = checks.nonzero_ndim(checks.as_array(x, kinds=_KINDS))
    dt = output_dtype(output, x)
    sizes, fp = _footprint(x, size, footprint, axes)
    cval = checks.real(cval, "cval")
    if fp is not None:
        rank = 0 if minimum else int(fp.sum()) - 1
        return _ranked(x, fp, rank, mode, cval, origin, axes, output, dt, name, allow_rechunk)
    ax = checks.axes_in_order(axes, x.ndim)
    if len(sizes) != len(ax):
        raise checks.FilterArgumentError(f"footprint must have {len(ax)} dimensions (one per "
                                         f"filtered axis), got {len(sizes)}")
    origins = checks.per_axis(origin, len(ax), "origin", cast=operator.index)
    for k, o in zip(sizes, origins):
        checks.origins(o, (k,))
    modes = canonical_modes(mode, len(ax))
    passes = [(a, k, o) for a, k, o in zip(ax, sizes, origins) if k > 1]
    full = checks.spread(modes, ax, x.ndim, modes[0] if modes else "reflect")
    depth = [(0, 0)] * x.ndim
    for a, k, o in passes:
        depth[a] = reach(k, o)
    func = partial(backends.extremum_passes, passes=passes, minimum=minimum, mode=full, cval=cval)
    return _run(x, func, tuple(depth), one_mode(full), name, allow_rechunk, dt, output)


def _run(x, func, depth, mode, name, allow_rechunk, dt, output):
    if dt is not None and dt != x.dtype:  # a rank filter picks values: cast what it picked
        func = _Then(func, _AsType(dt))
    return deliver(_filter(x, func, depth, mode, name, allow_rechunk, dt), output)


class _AsType:
    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __call__(self, block):
        return block.astype(self.dtype)


def _ranked(x, fp, rank, mode, cval, origin, axes, output, dt, name, allow_rechunk):
    mode = canonical_mode(mode)  # one mode: a footprint is not separable (scipy's rule)
    fp, org = expand_mask(x, fp, origin, axes, "footprint")
    n = int(fp.sum())
    if not -n <= rank < n:
        raise checks.FilterArgumentError(f"rank {rank} is outside a footprint of {n} elements")
    rank %= n
    depth = mask_depth(fp.shape, org)
    func = partial(backends.rank, footprint=fp, rank=rank, mode=mode, cval=cval, origin=org)
    return _run(x, func, depth, mode, name, allow_rechunk, dt, output)


def _rank_filter(x, size, footprint, mode, cval, origin, axes, output, pick, name, allow_rechunk):
    """``pick(n)`` -> the rank in a footprint of n elements; min/max ranks take the separable
    path where the footprint is a box, as scipy's do."""
    x = checks.nonzero_ndim(checks.as_array(x, kinds=_KINDS))
    dt = output_dtype(output, x)
    sizes, fp = _footprint(x, size, footprint, axes)
    cval = checks.real(cval, "cval")
    box = fp is None
    if box:
        fp = np.ones(sizes, dtype=bool)
    n = int(fp.sum())
    rank = pick(n)
    if not -n <= rank < n:
        raise checks.FilterArgumentError(f"rank {rank} is outside a footprint of {n} elements")
    rank %= n
    if box and rank in (0, n - 1):
        return _extremum(x, fp.shape, None, mode, cval, origin, axes, output, rank == 0, name,
                         allow_rechunk)
    return _ranked(x, fp, rank, mode, cval, origin, axes, output, dt, name, allow_rechunk)


def minimum_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, output=None, allow_rechunk=True):
    """Minimum over a box (``size``: separable, ``mode`` one or per axis) or a ``footprint``
    (scipy.ndimage.minimum_filter semantics)."""
    return _extremum(x, size, footprint, mode, cval, origin, axes, output, True,
                     "distconv-minimum", allow_rechunk)


def maximum_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, output=None, allow_rechunk=True):
    """Maximum over a box or a footprint (scipy.ndimage.maximum_filter semantics)."""
    return _extremum(x, size, footprint, mode, cval, origin, axes, output, False,
                     "distconv-maximum", allow_rechunk)


def minimum_filter1d(x, size, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
                     allow_rechunk=True):
    """Minimum over ``size`` elements along ``axis`` (scipy.ndimage.minimum_filter1d)."""
    canonical_mode(mode)
    return minimum_filter(x, operator.index(size), None, mode, cval, origin, axes=[axis],
                          output=output, allow_rechunk=allow_rechunk)


def maximum_filter1d(x, size, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
                     allow_rechunk=True):
    """Maximum over ``size`` elements along ``axis`` (scipy.ndimage.maximum_filter1d)."""
    canonical_mode(mode)
    return maximum_filter(x, operator.index(size), None, mode, cval, origin, axes=[axis],
                          output=output, allow_rechunk=allow_rechunk)


def rank_filter(x, rank, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                axes=None, output=None, allow_rechunk=True):
    """The ``rank``-th smallest value (negative: from the top) over a box or footprint
    (scipy.ndimage.rank_filter semantics)."""
    r = operator.index(rank)
    return _rank_filter(x, size, footprint, mode, cval, origin, axes, output, lambda n: r,
                        "distconv-rank", allow_rechunk)


def median_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                  axes=None, output=None, allow_rechunk=True):
    """Median over a box or footprint (scipy.ndimage.median_filter semantics: the upper median
    of an even count)."""
    return _rank_filter(x, size, footprint, mode, cval, origin, axes, output, lambda n: n // 2,
                        "distconv-median", allow_rechunk)


def percentile_filter(x, percentile, size=None, footprint=None, mode="reflect", cval=0.0,
                      origin=0, *, axes=None, output=None, allow_rechunk=True):
    """The ``percentile`` (-100..100) over a box or footprint (scipy's percentile_filter)."""
    p = checks.real(percentile, "percentile")
    if p < 0:
        p += 100.0
    if not 0 <= p <= 100:
        raise checks.FilterArgumentError(f"percentile must be within [-100, 100], got {percentile!r}")

    def pick(n):
        return n - 1 if p == 100.0 else int(float(n) * p / 100.0)

    return _rank_filter(x, size, footprint, mode, cval, origin, axes, output, pick,
                        "distconv-percentile", allow_rechunk)
