"""Rank filters with scipy.ndimage semantics: minimum/maximum (separable over a box: one 1-D
pass per axis), median, any rank and percentile over a footprint, on kernels/rank.cu for cupy
blocks.

NaN: scipy leaves the order of NaN unspecified, and its result then depends on where its scan
starts, so on the chunking. distconv's rule, the same on every backend and chunking, is
numpy's: a window holding a NaN gives NaN (np.min, np.median), and windows without NaN give
scipy's numbers. ``nan_policy="omit"`` gives numpy's nan-functions of each window of float data
(np.nanmin, np.nanmedian, np.nanpercentile with its default 'linear' method), NaN only where a
window holds nothing else: a median of an even count is the mean of the two middle values and a
percentile interpolates, where scipy picks one value (backends/windows.py nan_positions, blend).
rank_filter's omit counts its rank among the window's non-NaN values."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial

import numpy as np

from .. import backends
from ..backends.windows import blend, nan_positions
from ..core import checks
from ..core.arrays import array_module
from ..core.tile import Tile
from ..core.modes import canonical_mode, canonical_modes, one_mode
from ..core.stencil import mask_depth, reach
from . import docs
from .stencil_ops import _filter, _Then, deliver, expand_mask, nan_policy_of, output_dtype

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


def _extremum(x, size, footprint, mode, cval, origin, axes, output, minimum: bool, name, allow_rechunk,
              nan_policy="propagate"):
    x = checks.nonzero_ndim(checks.as_array(x, kinds=_KINDS))
    dt = output_dtype(output, x)
    sizes, fp = _footprint(x, size, footprint, axes)
    cval = checks.real(cval, "cval")
    nan_policy = nan_policy_of(nan_policy)
    if fp is not None:
        pick = Pick("min" if minimum else "max")
        return _ranked(x, fp, pick, mode, cval, origin, axes, output, dt, name, allow_rechunk, nan_policy)
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
                   cval=_omitted_cval(cval, nan_policy, np.inf if minimum else -np.inf, x.dtype))
    if np.dtype(x.dtype).kind == "f":
        windows = [partial(backends.extremum_passes, passes=passes, minimum=m, mode=full,
                           cval=float(np.isnan(cval))) for m in (False, True)]
        func = NanRule(func, *windows, nan_policy, np.inf if minimum else -np.inf,
                       "constant" in full and bool(np.isnan(cval)), native=True)
    return _run(x, func, tuple(depth), one_mode(full), name, allow_rechunk, dt, output)


def _omitted_cval(cval: float, nan_policy: str, extreme: float, dtype) -> float:
    """The constant edge a minimum (maximum) of float data picks from with nan_policy='omit':
    a NaN cval is missing data, seen as +inf (-inf) as the tile's NaN are (NanRule)."""
    return extreme if nan_policy == "omit" and np.isnan(cval) and np.dtype(dtype).kind == "f" else cval


def _run(x, func, depth, mode, name, allow_rechunk, dt, output):
    if dt is not None and dt != x.dtype:  # a rank filter picks values: cast what it picked
        func = _Then(func, _AsType(dt))
    return deliver(_filter(x, func, depth, mode, name, allow_rechunk, dt), output)


class _AsType:
    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __call__(self, block):
        return block.astype(self.dtype)


def _ranked(x, fp, pick, mode, cval, origin, axes, output, dt, name, allow_rechunk, nan_policy):
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
                   cval=cval if extreme is None else _omitted_cval(cval, nan_policy, extreme, x.dtype))
    if np.dtype(x.dtype).kind == "f":
        windows = [partial(backends.rank, footprint=fp, rank=r, mode=mode, cval=float(np.isnan(cval)),
                           origin=org) for r in (n - 1, 0)]
        omit = clean = None
        if extreme is None:
            omit = partial(backends.rank_omit, footprint=fp, pick=pick, mode=mode, cval=cval, origin=org)
            clean = _all_values(pick, n, partial(backends.rank, footprint=fp, mode=mode, cval=cval, origin=org))
        func = NanRule(func, *windows, nan_policy, extreme, mode == "constant" and bool(np.isnan(cval)), omit,
                       native=_median_box(fp, rank), clean=clean)
    return _run(x, func, depth, mode, name, allow_rechunk, dt, output)


def _all_values(pick: "Pick", n: int, ranked):
    """nan_policy='omit' over windows that hold no NaN (all ``n`` values): the same ranks for
    every window, so ``ranked`` (the backend's rank filter, short of ``rank``) picks them, and
    numpy's blend of the two for a median of an even count or a percentile."""
    lo, hi, gamma = nan_positions(n, pick.kind, pick.value)
    if pick.kind == "median" and lo == hi or pick.kind not in ("median", "percentile"):
        return partial(ranked, rank=lo)
    return _Blend(partial(ranked, rank=lo), partial(ranked, rank=hi) if hi != lo else None, gamma, pick.kind)


@dataclass(frozen=True)
class _Blend:
    """numpy's value between two ranks of every window (backends.windows.blend): ``lower``
    and ``upper`` pick them (``upper`` None: the same rank)."""

    lower: object
    upper: object
    gamma: float | None
    kind: str

    def __call__(self, tile):
        a = self.lower(tile)
        return blend(a, a if self.upper is None else self.upper(tile), self.gamma, self.kind)


def _median_box(fp: np.ndarray, rank: int) -> bool:
    """The median of a full 3 x 3 or 5 x 5 box over two axes, or of a 3 x 3 x 3 box: on GPUs
    their kernels propagate NaN as they select (backends/cuda/rank.py), so nan_policy propagate
    needs no screen of the data (the backend marks NaN windows itself for other footprints
    asked the same way)."""
    box = sorted(int(n) for n in fp.shape if n > 1)
    return bool(fp.all()) and box in ([3, 3], [5, 5], [3, 3, 3]) and rank == fp.size // 2


@dataclass(frozen=True)
class Pick:
    """Which value of a window a rank filter picks: ``kind`` min, max, median, percentile
    (``value`` in 0..100) or rank (``value``: from the bottom, negative from the top).
    ``pick(n)``: scipy's rank among n values; nan_policy='omit' picks as numpy's
    nan-functions do instead (backends.windows.nan_positions)."""

    kind: str
    value: float = 0

    def __call__(self, n: int) -> int:
        if self.kind == "min":
            return 0
        if self.kind == "max":
            return n - 1
        if self.kind == "median":
            return n // 2
        if self.kind == "percentile":
            return n - 1 if self.value == 100.0 else int(float(n) * self.value / 100.0)
        return int(self.value)


@dataclass(frozen=True)
class NanRule:
    """A rank filter's ``func`` (a backend call on a tile) under the NaN rule: with
    ``policy`` propagate, NaN wherever the window holds one (``any_window``: the window's max,
    run on the 0/1 NaN indicator); with omit, NaN ignored: min/max see NaN as ``extreme``
    (+inf for a min) and give NaN only where the window is all NaN (``all_window``: its min
    over the indicator); other ranks run ``omit`` (numpy's nan-functions of each window), or
    ``clean`` on tiles without NaN. Other tiles without NaN run ``func`` alone.
    ``edge_nan``: a constant mode whose cval is NaN (every window over the edge holds one).
    ``native``: on GPUs ``func`` propagates NaN itself when asked (nan_propagate=True: the
    minimum/maximum kernels pick with NaN-propagating min/max, the median kernels of full
    boxes mark windows with NaN), so propagate runs it alone, without a screen of the data."""

    func: object
    any_window: object
    all_window: object
    policy: str
    extreme: float | None
    edge_nan: bool
    omit: object = None
    native: bool = False
    clean: object = None

    def __call__(self, tile):
        tile = Tile.of(tile)
        xp = array_module(tile.centre)
        if self.native and self.policy == "propagate" and backends.backend_of(tile) == "cuda":
            return self.func(tile, nan_propagate=True)
        if not self.edge_nan and not _holds_nan(tile):
            return self.clean(tile) if self.policy == "omit" and self.clean is not None else self.func(tile)
        flags = tile.map(lambda a: xp.isnan(a).astype(np.float32))
        if self.policy == "propagate":
            return xp.where(self.any_window(flags) > 0, xp.nan, self.func(tile))
        if self.extreme is None:
            return self.omit(tile)
        filled = tile.map(lambda a: xp.where(xp.isnan(a), a.dtype.type(self.extreme), a))
        return xp.where(self.all_window(flags) > 0, xp.nan, self.func(filled))


def _holds_nan(tile: Tile) -> bool:
    """Does any piece of ``tile`` hold a NaN? Its maximum is NaN exactly then (the max
    reductions propagate NaN): one read of the data, where isnan then any wrote and read a
    mask besides."""
    xp = array_module(tile.centre)
    for d in tile.directions():
        piece = tile.piece(d)
        if not piece.size:
            continue
        if piece.dtype in (np.float32, np.float64):
            top = backends.reduce(piece, "max", tuple(range(piece.ndim)), piece.dtype, False)
            if bool(xp.isnan(top)):
                return True
        elif bool(xp.isnan(piece).any()):
            return True
    return False


def _rank_filter(x, size, footprint, mode, cval, origin, axes, output, pick, name, allow_rechunk,
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
        return _extremum(x, fp.shape, None, mode, cval, origin, axes, output, rank == 0, name,
                         allow_rechunk, nan_policy)
    return _ranked(x, fp, pick, mode, cval, origin, axes, output, dt, name, allow_rechunk, nan_policy)


# minimum_filter and maximum_filter (and their 1-D forms) differ in a few words: one text each
_EXTREMUM_DOC = """Multidimensional $name filter, as scipy.ndimage.${name}_filter.

    The $extreme value in each element's window: a box (``size``, run as one 1-D pass per
    axis, each axis with its own mode if given) or any ``footprint``. Without NaN the numbers
    are scipy.ndimage.${name}_filter's for every chunking and device; NaN follows numpy's rule
    (see Notes).

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {size}
    {footprint}
    mode : str or sequence of str, optional
        One mode, or, for a box, one per filtered axis (in the order of ``axes``).
        {mode_names}
    {cval}
    {origin}
    {axes}
    {output}
    {nan_policy_rank}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also neither ``size`` nor ``footprint``, a ``size`` below 1, a footprint that selects
        nothing, or a sequence of modes with a footprint that is not a box.
    TypeError
        {raises_type}

    See Also
    --------
    $other_filter, ${name}_filter1d, rank_filter
    scipy.ndimage.${name}_filter : The reference on numpy arrays.

    Notes
    -----
    {nan_rule}

    Examples
    --------
$examples
    """

_EXTREMUM_1D_DOC = """One-dimensional $name filter along an axis, as scipy.ndimage.${name}_filter1d.

    The $extreme of ``size`` consecutive values along ``axis`` around each element. Without
    NaN the numbers are scipy.ndimage.${name}_filter1d's for every chunking and device; NaN
    follows numpy's rule (see Notes).

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    size : int
        The window's length.
    {axis}
    {mode}
    {cval}
    origin : int, optional
        Where the window sits over each element: 0 (default) centres it, a positive value
        shifts it to the left, a negative one to the right.
    {output}
    {nan_policy_rank}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a ``size`` below 1 or a sequence of modes.
    TypeError
        {raises_type}

    See Also
    --------
    ${name}_filter : Over a box or footprint of several axes.
    scipy.ndimage.${name}_filter1d : The reference on numpy arrays.

    Notes
    -----
    {nan_rule}

    Examples
    --------
$examples
    """


@docs.twin(_EXTREMUM_DOC, name="minimum", extreme="smallest", other_filter="maximum_filter", examples="""\
    >>> dc.minimum_filter(np.array([3.0, 1, 4, 1, 5, 9, 2, 6]), 3).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    >>> a = np.array([[1, 5, 2], [7, 3, 9], [4, 8, 6]])
    >>> dc.minimum_filter(a, footprint=[[0, 1, 0], [1, 1, 1], [0, 1, 0]]).tolist()
    [[1, 1, 2], [1, 3, 2], [4, 3, 6]]
    >>> z = np.array([1.0, np.nan, 3, 4, 5])
    >>> dc.minimum_filter(z, 3).tolist(), dc.minimum_filter(z, 3, nan_policy="omit").tolist()
    ([nan, nan, nan, 3.0, 4.0], [1.0, 1.0, 3.0, 3.0, 4.0])""")
def minimum_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    return _extremum(x, size, footprint, mode, cval, origin, axes, output, True,
                     "distconv-minimum", allow_rechunk, nan_policy)


@docs.twin(_EXTREMUM_DOC, name="maximum", extreme="largest", other_filter="minimum_filter", examples="""\
    >>> dc.maximum_filter(np.array([3.0, 1, 4, 1, 5, 9, 2, 6]), 3).tolist()
    [3.0, 4.0, 4.0, 5.0, 9.0, 9.0, 9.0, 6.0]
    >>> a = np.array([[1, 5, 2], [7, 3, 9], [4, 8, 6]])
    >>> dc.maximum_filter(a, size=(1, 2)).tolist()
    [[1, 5, 5], [7, 7, 9], [4, 8, 8]]""")
def maximum_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    return _extremum(x, size, footprint, mode, cval, origin, axes, output, False,
                     "distconv-maximum", allow_rechunk, nan_policy)


@docs.twin(_EXTREMUM_1D_DOC, name="minimum", extreme="smallest", examples="""\
    >>> dc.minimum_filter1d(np.array([3, 1, 4, 1, 5]), 2).tolist()
    [3, 1, 1, 1, 1]
    >>> dc.minimum_filter1d(np.array([[3, 1], [4, 0], [5, 9]]), 3, axis=0).tolist()
    [[3, 0], [3, 0], [4, 0]]""")
def minimum_filter1d(x, size, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
                     nan_policy="propagate", allow_rechunk=True):
    canonical_mode(mode)
    return minimum_filter(x, operator.index(size), None, mode, cval, origin, axes=[axis],
                          output=output, nan_policy=nan_policy, allow_rechunk=allow_rechunk)


@docs.twin(_EXTREMUM_1D_DOC, name="maximum", extreme="largest", examples="""\
    >>> dc.maximum_filter1d(np.array([3, 1, 4, 1, 5]), 3).tolist()
    [3, 4, 4, 5, 5]""")
def maximum_filter1d(x, size, axis=-1, mode="reflect", cval=0.0, origin=0, *, output=None,
                     nan_policy="propagate", allow_rechunk=True):
    canonical_mode(mode)
    return maximum_filter(x, operator.index(size), None, mode, cval, origin, axes=[axis],
                          output=output, nan_policy=nan_policy, allow_rechunk=allow_rechunk)


@docs.fill
def rank_filter(x, rank, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    """Multidimensional rank filter, as scipy.ndimage.rank_filter.

    The ``rank``-th smallest value (0: the minimum; negative counts from the top, -1: the
    maximum) in each element's window, a box (``size``) or any ``footprint``. Without NaN the
    numbers are scipy.ndimage.rank_filter's for every chunking and device; NaN follows
    numpy's rule (see Notes), and with ``nan_policy='omit'`` the rank counts among the
    window's non-NaN values.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    rank : int
        Which value of the sorted window: from the bottom (0 the smallest), or, negative, from
        the top (-1 the largest).
    {size}
    {footprint}
    {mode}
    {cval}
    {origin}
    {axes}
    {output}
    {nan_policy_rank}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also neither ``size`` nor ``footprint``, a ``size`` below 1, a footprint that selects
        nothing, a ``rank`` outside the window, or a sequence of modes.
    TypeError
        {raises_type}

    See Also
    --------
    median_filter, percentile_filter, minimum_filter, maximum_filter
    scipy.ndimage.rank_filter : The reference on numpy arrays.

    Notes
    -----
    {nan_rule}

    Examples
    --------
    >>> y = np.array([3.0, 1, 4, 1, 5, 9, 2, 6])
    >>> dc.rank_filter(y, 1, 3).tolist()
    [3.0, 3.0, 1.0, 4.0, 5.0, 5.0, 6.0, 6.0]
    >>> dc.rank_filter(y, -1, 3).tolist()
    [3.0, 4.0, 4.0, 5.0, 9.0, 9.0, 9.0, 6.0]
    """
    return _rank_filter(x, size, footprint, mode, cval, origin, axes, output,
                        Pick("rank", operator.index(rank)), "distconv-rank", allow_rechunk, nan_policy)


@docs.fill
def median_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                  axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    """Multidimensional median filter, as scipy.ndimage.median_filter.

    The median of each element's window, a box (``size``) or any ``footprint``; of an even
    count, the upper of the two middle values (scipy's rule, not numpy's mean of the two).
    Without NaN the numbers are scipy.ndimage.median_filter's for every chunking and device;
    NaN follows numpy's rule (see Notes). With ``nan_policy='omit'`` float data give
    ``np.nanmedian`` of each window instead, the mean of the two middle values of an even
    count of non-NaN values included.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    {size}
    {footprint}
    {mode}
    {cval}
    {origin}
    {axes}
    {output}
    {nan_policy_rank}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also neither ``size`` nor ``footprint``, a ``size`` below 1, a footprint that selects
        nothing, or a sequence of modes.
    TypeError
        {raises_type}

    See Also
    --------
    rank_filter, percentile_filter
    scipy.ndimage.median_filter : The reference on numpy arrays.

    Notes
    -----
    {nan_rule}

    Examples
    --------
    >>> dc.median_filter(np.array([3.0, 1, 4, 1, 5, 9, 2, 6]), 3).tolist()
    [3.0, 3.0, 1.0, 4.0, 5.0, 5.0, 6.0, 6.0]
    >>> dc.median_filter(np.array([[1, 5, 2], [7, 3, 9], [4, 8, 6]]), 3).tolist()
    [[3, 3, 3], [4, 5, 6], [4, 6, 6]]
    >>> z = np.array([1.0, np.nan, 3, 4, 5])
    >>> dc.median_filter(z, 3).tolist(), dc.median_filter(z, 3, nan_policy="omit").tolist()
    ([nan, nan, nan, 4.0, 5.0], [1.0, 2.0, 3.5, 4.0, 5.0])
    """
    return _rank_filter(x, size, footprint, mode, cval, origin, axes, output, Pick("median"),
                        "distconv-median", allow_rechunk, nan_policy)


@docs.fill
def percentile_filter(x, percentile, size=None, footprint=None, mode="reflect", cval=0.0,
                      origin=0, *, axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    """Multidimensional percentile filter, as scipy.ndimage.percentile_filter.

    The given percentile of each element's window, a box (``size``) or any ``footprint``: the
    value of rank ``int(n * percentile / 100)`` among the window's n values (scipy's rule, no
    interpolation). Without NaN the numbers are scipy.ndimage.percentile_filter's for every
    chunking and device; NaN follows numpy's rule (see Notes). With ``nan_policy='omit'``
    float data give ``np.nanpercentile(window, percentile)`` of each window instead (numpy's
    default 'linear' method: it interpolates between the two values around
    ``(m - 1) * percentile / 100`` of the m non-NaN values, in the data's dtype).

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    percentile : float
        From 0 to 100, or -100 to 0 counted as ``100 + percentile``.
    {size}
    {footprint}
    {mode}
    {cval}
    {origin}
    {axes}
    {output}
    {nan_policy_rank}
    {allow_rechunk}

    Returns
    -------
    {returns_filter}

    Raises
    ------
    ValueError
        {raises_value}
        Also a ``percentile`` outside [-100, 100], neither ``size`` nor ``footprint``, a
        ``size`` below 1, a footprint that selects nothing, or a sequence of modes.
    TypeError
        {raises_type}

    See Also
    --------
    rank_filter, median_filter
    scipy.ndimage.percentile_filter : The reference on numpy arrays.

    Notes
    -----
    {nan_rule}

    Examples
    --------
    >>> y = np.array([3.0, 1, 4, 1, 5, 9, 2, 6])
    >>> dc.percentile_filter(y, 50, 3).tolist()
    [3.0, 3.0, 1.0, 4.0, 5.0, 5.0, 6.0, 6.0]
    >>> dc.percentile_filter(y, 20, 5).tolist()
    [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 5.0, 2.0]
    >>> dc.percentile_filter(y, 20, 5, nan_policy="omit").tolist()  # np.nanpercentile's
    [1.0, 1.0, 1.0, 1.0, 1.8, 1.8, 4.4, 2.0]
    """
    p = checks.real(percentile, "percentile")
    if p < 0:
        p += 100.0
    if not 0 <= p <= 100:
        raise checks.FilterArgumentError(f"percentile must be within [-100, 100], got {percentile!r}")
    return _rank_filter(x, size, footprint, mode, cval, origin, axes, output, Pick("percentile", p),
                        "distconv-percentile", allow_rechunk, nan_policy)
