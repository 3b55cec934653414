"""The rank filters (minimum, maximum, median, rank, percentile and the 1-D minimum and
maximum) on an xarray DataArray by dim names: along a ``size``'s or a ``footprint``'s dims
(per-dim arguments read by ops/per_dim.py, before any work)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import docs
from . import rank as ranked
from .named_filters import ONE_MODE_FOOTPRINT, ONE_MODE_RANK, along_one, one_cval
from .per_dim import Dims


def _window(obj, size, footprint):
    """(the dims, the size per dim, the footprint in the array's order) of a rank filter:
    the footprint's dims (a DataArray names them; an array spans every dim) or size's."""
    if footprint is None:
        along = Dims.of(obj, size, "size")
        return along, None if size is None else along.values(size, "size"), None
    along = Dims.of(obj, footprint, "footprint")
    if isinstance(footprint, xr.DataArray):
        footprint = footprint.transpose(*along.dims).values
    return along, size, footprint


def _extremum(op, obj, size, footprint, mode, cval, origin, nan_policy):
    """``op`` (minimum_filter, maximum_filter) along the window's dims: a box takes a mode
    per dim, another footprint one mode (scipy's rule)."""
    along, size, footprint = _window(obj, size, footprint)
    box = footprint is None or bool(np.all(footprint))
    modes = along.modes(mode) if box else along.one_mode(mode, ONE_MODE_FOOTPRINT)
    return op(obj, size, footprint, modes, one_cval(along, cval),
              along.values(origin, "origin", 0), axes=along.axes, nan_policy=nan_policy)


def _ranked(op, obj, pick, size, footprint, mode, cval, origin, nan_policy):
    """``op`` (rank, median or percentile filter; ``pick``: its rank or percentile, or none)
    along the window's dims, with one mode (scipy's rank filters take one)."""
    along, size, footprint = _window(obj, size, footprint)
    return op(obj, *pick, size, footprint, along.one_mode(mode, ONE_MODE_RANK),
              one_cval(along, cval), along.values(origin, "origin", 0), axes=along.axes,
              nan_policy=nan_policy)


_NAMED_EXTREMUM_DOC = """${Name} filter along named dims, as scipy.ndimage.${name}_filter.

    ``da.distconv.${name}_filter(size)``: :func:`distconv.${name}_filter` over a window along
    the dims ``size`` (or a footprint DataArray) names; the other dims are left alone. NaN:
    a window holding one gives NaN, unless ``nan_policy='omit'``.

    Parameters
    ----------
    {dim_size}
    {dim_footprint}
    mode : str, sequence of str or dict {dim: str}, optional
        Per dim of the window, in the order named (the dims a dict leaves out take
        'reflect'); one mode for a footprint that is not a box.
        {mode_names}
    {dim_cval}
    {dim_origin}
    {nan_policy_rank}

    {outcome_named}

    See Also
    --------
    distconv.${name}_filter : On arrays, by axes.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_EXTREMUM_DOC, name="minimum", Name="Minimum", extreme="smallest", examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.minimum_filter({"x": 3}).values.tolist()
    [[1, 1, 1, 1], [5, 2, 2, 2]]""")
def minimum_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return _extremum(ranked.minimum_filter, obj, size, footprint, mode, cval, origin, nan_policy)


@docs.twin(_NAMED_EXTREMUM_DOC, name="maximum", Name="Maximum", extreme="largest", examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.maximum_filter({"x": 3}).values.tolist()
    [[3, 4, 4, 4], [9, 9, 9, 6]]""")
def maximum_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return _extremum(ranked.maximum_filter, obj, size, footprint, mode, cval, origin, nan_policy)


# median, rank and percentile filters differ in what they pick: one text
_NAMED_PICK_DOC = """${Name} filter along named dims, as scipy.ndimage.${name}_filter.

    ``da.distconv.${name}_filter(${call})``: :func:`distconv.${name}_filter` over a window along
    the dims ``size`` (or a footprint DataArray) names; the other dims are left alone.${nan}

    Parameters
    ----------
    ${pick}{dim_size}
    {dim_footprint}
    {dim_one_mode}
    {dim_cval}
    {dim_origin}
    {nan_policy_rank}

    {outcome_named}

    See Also
    --------
    distconv.${name}_filter : On arrays, by axes.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_PICK_DOC, Name="Median", name="median", call="size", pick="", nan="""
    NaN: a window holding one gives NaN, unless ``nan_policy='omit'``.""", examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.median_filter({"x": 3}).values.tolist()
    [[3, 3, 1, 1], [5, 5, 6, 6]]
    >>> da.distconv.median_filter(footprint=xr.DataArray([True, True, True], dims="x")).values.tolist()
    [[3, 3, 1, 1], [5, 5, 6, 6]]""")
def median_filter(obj, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return _ranked(ranked.median_filter, obj, (), size, footprint, mode, cval, origin, nan_policy)


@docs.twin(_NAMED_PICK_DOC, Name="Rank", name="rank", call="rank, size", nan="", pick="""\
rank : int
        Which value of the sorted window: from the bottom (0 the smallest), or, negative, from
        the top (-1 the largest).
    """, examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.rank_filter(0, {"x": 3}).values.tolist()
    [[1, 1, 1, 1], [5, 2, 2, 2]]""")
def rank_filter(obj, rank, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return _ranked(ranked.rank_filter, obj, (rank,), size, footprint, mode, cval, origin, nan_policy)


@docs.twin(_NAMED_PICK_DOC, Name="Percentile", name="percentile", call="percentile, size", nan="", pick="""\
percentile : float
        From 0 to 100, or -100 to 0 counted as ``100 + percentile``.
    """, examples="""\
    >>> da = xr.DataArray(np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), dims=("y", "x"))
    >>> da.distconv.percentile_filter(100, {"x": 3}).values.tolist()
    [[3, 4, 4, 4], [9, 9, 9, 6]]""")
def percentile_filter(obj, percentile, size=None, footprint=None, mode="reflect", cval=0.0, origin=0,
                      nan_policy="propagate"):
    return _ranked(ranked.percentile_filter, obj, (percentile,), size, footprint, mode, cval, origin, nan_policy)


_NAMED_EXTREMUM_1D_DOC = """One-dimensional ${name} filter along a named dim, as scipy.ndimage.${name}_filter1d.

    ``da.distconv.${name}_filter1d(size, dim)``: :func:`distconv.${name}_filter1d` along
    ``dim``.

    Parameters
    ----------
    size : int
        The window's length.
    dim : str
        The dim to filter along.
    {dim_one_mode}
    {dim_cval}
    origin : int or dict {dim: int}, optional
        Where the window sits over each element: 0 (default) centres it.
    {nan_policy_rank}

    {outcome_named}

    See Also
    --------
    distconv.${name}_filter1d : On arrays, by axis.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_EXTREMUM_1D_DOC, name="minimum", Name="Minimum", extreme="smallest", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.minimum_filter1d(3, "x").values.tolist()
    [[0, 0, 1, 2], [4, 4, 5, 6], [8, 8, 9, 10]]""")
def minimum_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return ranked.minimum_filter1d(obj, size, *along_one(obj, dim, mode, cval, origin), nan_policy=nan_policy)


@docs.twin(_NAMED_EXTREMUM_1D_DOC, name="maximum", Name="Maximum", extreme="largest", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.maximum_filter1d(3, "y").values.tolist()
    [[4, 5, 6, 7], [8, 9, 10, 11], [8, 9, 10, 11]]""")
def maximum_filter1d(obj, size, dim, mode="reflect", cval=0.0, origin=0, nan_policy="propagate"):
    return ranked.maximum_filter1d(obj, size, *along_one(obj, dim, mode, cval, origin), nan_policy=nan_policy)
