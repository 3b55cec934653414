"""Per-block functions written once for numpy and cupy blocks alike (array_module picks the
module): what no kernel of ours does yet, run with the array library's own sort and indexing.
Both backends export them (backends/numpy/rank.py and backends/cuda/rank.py)."""

from __future__ import annotations

import numpy as np

from ..core.arrays import array_module
from ..core.stencil import mask_depth
from ..core.tile import Tile


# scipy.ndimage's boundary modes as numpy.pad (and cupy.pad) names them
PAD_MODES = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap",
             "constant": "constant"}
OMIT_SLAB_VALUES = 2**25  # window values sorted at once (memory: 8 bytes each, twice)


def padded(tile: Tile, need: tuple, mode: str, cval: float):
    """The tile's extended array with exactly ``need`` ((lo, hi) per axis) around its centre:
    halo beyond it cut off, the missing part at global edges filled by ``mode`` (numpy.pad or
    cupy.pad; a copy only where something is filled)."""
    xp = array_module(tile.centre)
    ext = tile.assemble()
    cut = tuple(slice(max(0, h - n), ext.shape[a] - max(0, g - m))
                for a, ((n, m), (h, g)) in enumerate(zip(need, tile.halo)))
    pads = [(max(0, n - h), max(0, m - g)) for (n, m), (h, g) in zip(need, tile.halo)]
    if not any(lo or hi for lo, hi in pads):
        return ext[cut]
    extra = {"constant_values": cval} if mode == "constant" else {}
    return xp.pad(ext[cut], pads, mode=PAD_MODES[mode], **extra)


def nan_positions(m, kind: str, value: float = 0.0):
    """Where numpy's nan-functions read a window's ``m`` non-NaN values, sorted: (lo, hi,
    gamma), the result coming from the values at lo and hi (blend). ``m``: an int or an integer
    array (of numpy or cupy). ``kind``: median (np.nanmedian: the middle value, the mean of the
    two middle ones for an even count), percentile (np.nanpercentile's default 'linear'
    method, ``value`` in 0..100: q = value / 100, index (m - 1) * q in float64, gamma its
    fraction, the last value from index m - 1 on), min, max, or rank (``value``: from the
    bottom, negative from the top; no interpolation)."""
    if kind == "median":
        return (m - 1) // 2, m // 2, None
    if kind == "percentile":
        v = (m - 1) * (float(value) / 100.0)
        lo = v // 1  # floor, of a Python float and of an array alike
        gamma = v - lo
        top = v >= m - 1
        lo = lo.astype(np.int64) if hasattr(lo, "astype") else int(lo)
        lo, hi = _where(top, m - 1, lo), _where(top, m - 1, lo + 1)
        return lo, hi, gamma
    if kind == "min":
        return m * 0, m * 0, None
    if kind == "max":
        return m - 1, m - 1, None
    r = int(value)
    at = m + r if r < 0 else m * 0 + r
    return at, at, None


def _where(cond, a, b):
    """``a`` where ``cond`` else ``b``: for Python scalars too."""
    if isinstance(cond, (bool, np.bool_)):
        return a if cond else b
    return array_module(cond).where(cond, a, b)


def blend(a, b, gamma, kind: str, single=False):
    """numpy's value of a window from its sorted non-NaN values ``a`` (at nan_positions' lo)
    and ``b`` (at hi), in their dtype: np.nanmedian's mean ``(a + b) / 2`` (``a`` itself where
    ``single``, an odd count); np.nanpercentile's linear interpolation, numpy's _lerp step for
    step (``a + (b - a) * gamma``, from gamma 0.5 on ``b - (b - a) * (1 - gamma)``; gamma and
    1 - gamma rounded to the dtype first, as numpy does for a Python float percentile, so
    float32 data interpolate in float32). Other kinds: ``a``."""
    xp = array_module(a)
    with np.errstate(over="ignore", invalid="ignore"):  # inf and huge values: numpy's answers
        if kind == "median":
            if single is True:
                return a
            mean = (a + b) / 2
            return mean if single is False else xp.where(single, a, mean)
        if kind != "percentile":
            return a
        d = b - a
        if isinstance(gamma, float):  # one gamma for every window
            dt = a.dtype.type
            return b - d * dt(1.0 - gamma) if gamma >= 0.5 else a + d * dt(gamma)
        return xp.where(gamma >= 0.5, b - d * (1.0 - gamma).astype(a.dtype), a + d * gamma.astype(a.dtype))


def nan_picked(a, b, m, kind: str, value: float = 0.0):
    """numpy's nan-function value of windows holding ``m`` non-NaN values (an array), ``a``
    and ``b`` being the values at nan_positions' lo and hi among them: blended (median,
    percentile), NaN where m is 0 or a rank lies beyond m."""
    xp = array_module(a)
    lo, hi, gamma = nan_positions(m, kind, value)
    got = blend(a, b, gamma, kind, lo == hi) if kind in ("median", "percentile") else a
    return xp.where((lo >= 0) & (lo < m), got, xp.nan)


def rank_omit(block, footprint: np.ndarray, pick, mode: str, cval: float, origin: tuple):
    """A rank filter ignoring NaN (nan_policy='omit'): of the m non-NaN values under
    ``footprint`` at each output, what numpy's nan-functions give (``pick.kind`` and
    ``pick.value``: nan_positions, nan_picked). Written once for numpy and cupy blocks
    (array_module): the windows of a slab of rows are sorted (NaN last) and indexed; the numpy
    backend runs its compiled kernel instead where it can (backends/numpy/rank.py)."""
    tile = Tile.of(block)
    xp = array_module(tile.centre)
    ext = padded(tile, mask_depth(footprint.shape, origin), mode, cval)
    windows = xp.lib.stride_tricks.sliding_window_view(ext, footprint.shape)
    taps = xp.asarray(np.flatnonzero(footprint))  # the footprint's places in a flat window
    out = xp.empty(tile.centre.shape, dtype=tile.centre.dtype)
    row = int(np.prod(tile.centre.shape[1:])) * footprint.size
    step = max(1, OMIT_SLAB_VALUES // max(row, 1))
    last = int(taps.size) - 1

    def at(vals, idx):
        return xp.take_along_axis(vals, xp.clip(idx, 0, last)[..., None], axis=-1)[..., 0]

    for r in range(0, out.shape[0], step):
        slab = windows[r:r + step]
        flat = slab.reshape(slab.shape[:tile.ndim] + (footprint.size,))  # a copy: the values
        vals = xp.sort(flat[..., taps], axis=-1)
        m = (~xp.isnan(vals)).sum(axis=-1)
        lo, hi, _ = nan_positions(m, pick.kind, pick.value)
        out[r:r + step] = nan_picked(at(vals, lo), at(vals, hi), m, pick.kind, pick.value)
    return out


def combine_terms(block, terms, cval: float, combine: str, dtype, passes_fn):
    """``combine`` of separable terms = [(passes, mode), ...], each run by ``passes_fn`` (a
    backend's correlate_passes) in ``dtype``: "sum" adds them (scipy's generic_laplace),
    "magnitude" is the square root of the sum of their squares (generic_gradient_magnitude),
    every step in ``dtype`` as scipy's in-place steps (the square root cast back unsafely)."""
    out = None
    for passes, mode in terms:
        t = passes_fn(block, passes, mode, cval, dtype)
        if combine == "magnitude":
            t *= t
        out = t if out is None else out.__iadd__(t)
    if combine == "magnitude":
        out = array_module(out).sqrt(out).astype(out.dtype)
    return out
