"""The edge filters (sobel, prewitt, gaussian_laplace, gaussian_gradient_magnitude) on an
xarray DataArray by dim names (per-dim arguments read by ops/per_dim.py, before any work)."""

from __future__ import annotations

from . import docs, edges
from .named_filters import one_cval
from .per_dim import Dims, axis_of


def _gradient(op, obj, dim, mode, cval):
    """``op`` (sobel, prewitt): the derivative along ``dim``, smoothed along every other dim,
    as scipy's; ``mode``: one, one per dim, or {dim: mode}."""
    every = Dims.every_dim(obj)
    return op(obj, axis_of(obj, dim), every.modes(mode), one_cval(every, cval))


_NAMED_GRADIENT_DOC = """${Name} derivative along a named dim, as scipy.ndimage.${name}.

    ``da.distconv.${name}(dim)``: :func:`distconv.${name}`, the derivative along ``dim`` smoothed
    along every other dim, as scipy's.

    Parameters
    ----------
    dim : str
        The dim of the derivative.
    mode : str, sequence of str or dict {dim: str}, optional
        One mode for every dim, one per dim of the array (in its order), or ``{dim: mode}``
        (the dims it leaves out take 'reflect').
        {mode_names}
    {dim_cval}

    {outcome_named}

    See Also
    --------
    distconv.${name} : On arrays, by axis.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_GRADIENT_DOC, Name="Sobel", name="sobel", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.sobel("x").values.tolist()
    [[4, 8, 8, 4], [4, 8, 8, 4], [4, 8, 8, 4]]""")
def sobel(obj, dim, mode="reflect", cval=0.0):
    return _gradient(edges.sobel, obj, dim, mode, cval)


@docs.twin(_NAMED_GRADIENT_DOC, Name="Prewitt", name="prewitt", examples="""\
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    >>> da.distconv.prewitt("y").values.tolist()
    [[12, 12, 12, 12], [24, 24, 24, 24], [12, 12, 12, 12]]""")
def prewitt(obj, dim, mode="reflect", cval=0.0):
    return _gradient(edges.prewitt, obj, dim, mode, cval)


# gaussian_laplace and gaussian_gradient_magnitude take the same arguments: one text
_NAMED_GAUSSIAN_SUM_DOC = """${title} along named dims, as scipy.ndimage.${name}.

    ${intro}

    Parameters
    ----------
    sigma : float, sequence of float or dict {dim: float}
        The Gaussian's standard deviation in elements: one for every dim, one per dim, or
        ``{dim: sigma}``.
    mode : str, sequence of str or dict {dim: str}, optional
        Per dim of ``sigma`` (term i of the sum uses mode i, as scipy's); 'wrap' cannot be
        mixed with the others.
        {mode_names}
    {dim_cval}
    {truncate}

    {outcome_named}

    See Also
    --------
    distconv.${name} : On arrays, by axes.

    Examples
    --------
$examples
    """


@docs.twin(_NAMED_GAUSSIAN_SUM_DOC, name="gaussian_laplace", title="Laplacian of Gaussian", intro="""\
``da.distconv.gaussian_laplace(sigma)``: :func:`distconv.gaussian_laplace` over the dims
    ``sigma`` names (every dim for one value or a sequence), as scipy's with ``axes=``; the
    other dims are left alone.""", examples="""\
    >>> da = xr.DataArray(np.array([0.0, 0, 1, 0, 0]), dims="x")
    >>> da.distconv.gaussian_laplace(1).round(3).values.tolist()
    [0.197, 0.002, -0.399, 0.002, 0.197]""")
def gaussian_laplace(obj, sigma, mode="reflect", cval=0.0, truncate=4.0):
    along = Dims.of(obj, sigma, "sigma")
    return edges.gaussian_laplace(obj, along.values(sigma, "sigma"), along.modes(mode),
                                  one_cval(along, cval), axes=along.axes, truncate=truncate)


@docs.twin(_NAMED_GAUSSIAN_SUM_DOC, name="gaussian_gradient_magnitude", title="Gaussian gradient magnitude",
           intro="""\
``da.distconv.gaussian_gradient_magnitude(sigma)``: the gradient over the dims ``sigma``
    names (every dim for one value or a sequence). The other dims are left alone, not
    smoothed (scipy's ``axes=`` would smooth every axis with sigma: here their sigma is 0).""", examples="""\
    >>> da = xr.DataArray(np.array([0.0, 0, 1, 0, 0]), dims="x")
    >>> da.distconv.gaussian_gradient_magnitude(1).round(3).values.tolist()
    [0.095, 0.241, 0.0, 0.241, 0.095]""")
def gaussian_gradient_magnitude(obj, sigma, mode="reflect", cval=0.0, truncate=4.0):
    along = Dims.of(obj, sigma, "sigma")
    sigmas = along.spread(along.values(sigma, "sigma"), 0.0)
    return edges.gaussian_gradient_magnitude(obj, sigmas, along.modes(mode), one_cval(along, cval),
                                             axes=along.axes, truncate=truncate)
