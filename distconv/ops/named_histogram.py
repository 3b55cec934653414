"""histogram on an xarray DataArray over named dims: the counts as a DataArray on a 'bin' dim
with the bins' centres and edges as coordinates."""

from __future__ import annotations

import xarray as xr

from ..core import checks
from . import docs, histograms
from .per_dim import Dims


@docs.fill
def histogram(obj, bins=10, range=None, weights=None, density=False, dims=None):  # noqa: A002
    """Histogram over named dims, as numpy.histogram, as a DataArray on a 'bin' dim.

    ``da.distconv.histogram(bins)``: :func:`distconv.histogram` of the values along ``dims``
    (default: every dim), one histogram per slice along the other dims, all with one set of
    edges (``range``, or the whole data's minimum and maximum, NaN left out; data holding
    +inf or -inf then raise ValueError, as numpy's do). On dask-backed data the
    counts are one task per chunk and a tree merge.

    Parameters
    ----------
    bins : int or sequence of scalars, optional
        The number of equal bins (default 10), or the bin edges, increasing.
    range : (float, float), optional
        The lower and upper edge of the equal bins (default: the data's minimum and maximum,
        NaN left out, a first pass over the data).
    weights : array_like or xarray.DataArray, optional
        A weight per value: an array of the data's shape, or a DataArray that broadcasts
        against it (``cos(lat)`` over lat alone).
    density : bool, optional
        True: each histogram divided by its total and the bin widths. Default False.
    dims : sequence of str, optional
        The dims whose values are counted together (default: every dim).

    Returns
    -------
    hist : xarray.DataArray
        The counts on dim 'bin' after the dims not counted over, with coordinates ``bin``
        (the centres), ``bin_left`` and ``bin_right`` (the edges); named ``<name>_histogram``;
        the data's attrs but units, standard_name and long_name. On ``ds.distconv``, a
        Dataset of one such histogram per data variable having the named dims (the others
        unchanged).

    Raises
    ------
    ValueError
        A dim that is not one of the array's, or any error of :func:`distconv.histogram`.

    See Also
    --------
    distconv.histogram : On arrays.

    Examples
    --------
    >>> da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"), name="t")
    >>> h = da.distconv.histogram(bins=3)
    >>> h.values.tolist(), h.dims, h.name
    ([4, 4, 4], ('bin',), 't_histogram')
    >>> h = da.distconv.histogram(bins=2, range=(0, 12), dims=["x"])
    >>> h.values.tolist(), h.dims, h.bin.values.tolist()
    ([[4, 0], [2, 2], [0, 4]], ('y', 'bin'), [3.0, 9.0])
    """
    along = Dims.every_dim(obj) if dims is None else Dims.given(obj, dims)
    w = _weights_like(histograms.check_weight_dims(weights, obj), obj) if isinstance(weights, xr.DataArray) \
        else weights
    if along.dims == along.every:
        counts, edges = histograms.histogram(obj.data, bins, range, w, density)
        return _hist_array(counts, edges, obj)
    keep = [d for d in obj.dims if d not in along.named]
    counts, edges = histograms.histogram_along(obj.data, list(along.axes), bins, range, w, density)
    out = xr.DataArray(counts, dims=(*keep, "bin"), coords={d: obj[d] for d in keep if d in obj.coords},
                       name=f"{obj.name}_histogram" if obj.name else "histogram", attrs=_count_attrs(obj))
    return _with_bin_coords(out, edges)


def _weights_like(weights: xr.DataArray, obj):
    """``weights`` broadcast against ``obj`` (broadcast_like), its data in ``obj``'s dim order;
    for dask-backed ``obj``, lazily in its chunks: no full-size copy is made, hashed and cut."""
    if checks.array_kind(obj.data) != "dask" or checks.array_kind(weights.data) == "dask":
        return weights.broadcast_like(obj).transpose(*obj.dims).data
    import dask.array as da

    new = [d for d in obj.dims if d not in weights.dims]
    small = weights.broadcast_like(obj, exclude=new).expand_dims(new).transpose(*obj.dims)
    chunks = tuple(c if n > 1 else (1,) for c, n in zip(obj.data.chunks, small.shape))
    return da.broadcast_to(da.from_array(small.data, chunks=chunks), obj.shape, chunks=obj.data.chunks)


def _count_attrs(obj) -> dict:
    """Counts are not in the data's units: those attributes do not carry over."""
    return {k: v for k, v in obj.attrs.items() if k not in ("units", "standard_name", "long_name")}


def _with_bin_coords(out, edges):
    return out.assign_coords(bin=0.5 * (edges[:-1] + edges[1:]), bin_left=("bin", edges[:-1]),
                             bin_right=("bin", edges[1:]))


def _hist_array(counts, edges, obj):
    out = xr.DataArray(counts, dims=("bin",), name=f"{obj.name}_histogram" if obj.name else "histogram",
                       attrs=_count_attrs(obj))
    return _with_bin_coords(out, edges)
