"""Rank filters with scipy.ndimage semantics: minimum/maximum (separable over a box: one 1-D
pass per axis), median, any rank and percentile over a footprint, on kernels/rank.cu for cupy
blocks. Their checks and per-block work: ops/rank_stencil.py; the NaN rule: ops/rank_nan.py."""

from __future__ import annotations

import operator

from ..core import checks
from ..core.modes import canonical_mode
from . import docs
from .rank_nan import Pick
from .rank_stencil import by_rank, extremum

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
    return extremum(x, size, footprint, mode, cval, origin, axes, output, True,
                     "distconv-minimum", allow_rechunk, nan_policy)


@docs.twin(_EXTREMUM_DOC, name="maximum", extreme="largest", other_filter="minimum_filter", examples="""\
    >>> dc.maximum_filter(np.array([3.0, 1, 4, 1, 5, 9, 2, 6]), 3).tolist()
    [3.0, 4.0, 4.0, 5.0, 9.0, 9.0, 9.0, 6.0]
    >>> a = np.array([[1, 5, 2], [7, 3, 9], [4, 8, 6]])
    >>> dc.maximum_filter(a, size=(1, 2)).tolist()
    [[1, 5, 5], [7, 7, 9], [4, 8, 8]]""")
def maximum_filter(x, size=None, footprint=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, output=None, nan_policy="propagate", allow_rechunk=True):
    return extremum(x, size, footprint, mode, cval, origin, axes, output, False,
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
    return by_rank(x, size, footprint, mode, cval, origin, axes, output,
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
    return by_rank(x, size, footprint, mode, cval, origin, axes, output, Pick("median"),
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
    return by_rank(x, size, footprint, mode, cval, origin, axes, output, Pick("percentile", p),
                        "distconv-percentile", allow_rechunk, nan_policy)
