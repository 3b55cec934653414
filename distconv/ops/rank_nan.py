"""Which value of a window a rank filter picks (``Pick``) and distconv's NaN rule around the
backend's pick (``NanRule``), the same on every backend and chunking.

NaN: scipy leaves the order of NaN unspecified, and its result then depends on where its scan
starts, so on the chunking. distconv's rule, the same on every backend and chunking, is
numpy's: a window holding a NaN gives NaN (np.min, np.median), and windows without NaN give
scipy's numbers. ``nan_policy="omit"`` gives numpy's nan-functions of each window of float data
(np.nanmin, np.nanmedian, np.nanpercentile with its default 'linear' method), NaN only where a
window holds nothing else: a median of an even count is the mean of the two middle values and a
percentile interpolates, where scipy picks one value (backends/windows.py nan_positions, blend).
rank_filter's omit counts its rank among the window's non-NaN values."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from .. import backends
from ..backends.windows import blend, nan_positions
from ..core.arrays import array_module
from ..core.tile import Tile


def omitted_cval(cval: float, nan_policy: str, extreme: float, dtype) -> float:
    """The constant edge a minimum (maximum) of float data picks from with nan_policy='omit':
    a NaN cval is missing data, seen as +inf (-inf) as the tile's NaN are (NanRule)."""
    return extreme if nan_policy == "omit" and np.isnan(cval) and np.dtype(dtype).kind == "f" else cval



def all_values(pick: "Pick", n: int, ranked):
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


def median_box(fp: np.ndarray, rank: int) -> bool:
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

