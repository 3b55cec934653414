"""A rank filter's arguments checked (before any work) and turned into its per-block work and
halo: a box minimum or maximum as one 1-D pass per axis, any other pick over its footprint,
each under the NaN rule of ops/rank_nan.py."""

from __future__ import annotations

import operator
from functools import partial

import numpy as np

from .. import backends
from ..core import checks
from ..core.modes import canonical_mode, canonical_modes, one_mode
from ..core.stencil import mask_depth, reach
from .stencil_ops import _filter, _Then, deliver, expand_mask, nan_policy_of, output_dtype
from .rank_nan import NanRule, Pick, all_values, median_box, omitted_cval

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


def _picked_in(x, dt, mode, cval):
    """``x`` in the dtype a box minimum or maximum picks in. scipy runs those as 1-D passes
    that read a constant edge's ``cval`` in double precision and write the output's dtype (its
    footprint, rank and median filters cast ``cval`` to the input's dtype instead, as
    distconv's do): where the output's dtype is not the input's and ``cval`` does not fit the
    input's dtype (1.5 for integers, 0.1 for float32), the box picks in float64 too."""
    if dt is None or dt == x.dtype or np.dtype(x.dtype) == np.float64:
        return x
    modes = mode if isinstance(mode, (list, tuple)) else [mode]
    if not any(isinstance(m, str) and canonical_mode(m) == "constant" for m in modes):
        return x
    with np.errstate(all="ignore"):  # compared as Python floats: numpy would compare in x's dtype
        fits = float(np.asarray(cval).astype(x.dtype)) == float(cval)
    return x if fits else x.astype(np.float64)


def extremum(x, size, footprint, mode, cval, origin, axes, output, minimum: bool, name, allow_rechunk,
              nan_policy="propagate"):
    x = checks.nonzero_ndim(checks.as_array(x, kinds=_KINDS))
    dt = output_dtype(output, x)
    sizes, fp = _footprint(x, size, footprint, axes)
    cval = checks.real(cval, "cval")
    nan_policy = nan_policy_of(nan_policy)
    if fp is not None:
        pick = Pick("min" if minimum else "max")
        return _footprint_pick(x, fp, pick, mode, cval, origin, axes, output, dt, name, allow_rechunk, nan_policy)
    x = _picked_in(x, dt, mode, cval)  # a box: scipy's 1-D passes
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
    func = partial(backends.extremum_passes, passes=passes, minimum=minimum, mode=full,
                   cval=omitted_cval(cval, nan_policy, np.inf if minimum else -np.inf, x.dtype))
    if np.dtype(x.dtype).kind == "f":
        windows = [partial(backends.extremum_passes, passes=passes, minimum=m, mode=full,
                           cval=float(np.isnan(cval))) for m in (False, True)]
        func = NanRule(func, *windows, nan_policy, np.inf if minimum else -np.inf,
                       "constant" in full and bool(np.isnan(cval)), native=True)
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


def _footprint_pick(x, fp, pick, mode, cval, origin, axes, output, dt, name, allow_rechunk, nan_policy):
    mode = canonical_mode(mode)  # one mode: a footprint is not separable (scipy's rule)
    fp, org = expand_mask(x, fp, origin, axes, "footprint")
    n = int(fp.sum())
    rank = pick(n)
    if not -n <= rank < n:
        raise checks.FilterArgumentError(f"rank {rank} is outside a footprint of {n} elements")
    rank %= n
    depth = mask_depth(fp.shape, org)
    extreme = {"min": np.inf, "max": -np.inf}.get(pick.kind)
    func = partial(backends.rank, footprint=fp, rank=rank, mode=mode, origin=org,
                   cval=cval if extreme is None else omitted_cval(cval, nan_policy, extreme, x.dtype))
    if np.dtype(x.dtype).kind == "f":
        windows = [partial(backends.rank, footprint=fp, rank=r, mode=mode, cval=float(np.isnan(cval)),
                           origin=org) for r in (n - 1, 0)]
        omit = clean = None
        if extreme is None:
            omit = partial(backends.rank_omit, footprint=fp, pick=pick, mode=mode, cval=cval, origin=org)
            clean = all_values(pick, n, partial(backends.rank, footprint=fp, mode=mode, cval=cval, origin=org))
        func = NanRule(func, *windows, nan_policy, extreme, mode == "constant" and bool(np.isnan(cval)), omit,
                       native=median_box(fp, rank), clean=clean)
    return _run(x, func, depth, mode, name, allow_rechunk, dt, output)



def by_rank(x, size, footprint, mode, cval, origin, axes, output, pick, name, allow_rechunk,
                 nan_policy="propagate"):
    """``pick(n)`` -> the rank in a footprint of n elements; min/max ranks take the separable
    path where the footprint is a box, as scipy's do."""
    x = checks.nonzero_ndim(checks.as_array(x, kinds=_KINDS))
    dt = output_dtype(output, x)
    sizes, fp = _footprint(x, size, footprint, axes)
    cval = checks.real(cval, "cval")
    nan_policy = nan_policy_of(nan_policy)
    box = fp is None
    if box:
        fp = np.ones(sizes, dtype=bool)
    n = int(fp.sum())
    rank = pick(n)
    if not -n <= rank < n:
        raise checks.FilterArgumentError(f"rank {rank} is outside a footprint of {n} elements")
    rank %= n
    if box and rank in (0, n - 1) and (nan_policy == "propagate" or pick.kind in ("min", "max")):
        return extremum(x, fp.shape, None, mode, cval, origin, axes, output, rank == 0, name,
                         allow_rechunk, nan_policy)
    return _footprint_pick(x, fp, pick, mode, cval, origin, axes, output, dt, name, allow_rechunk, nan_policy)

