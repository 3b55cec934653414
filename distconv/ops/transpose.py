"""Transpose with numpy semantics (lazy per-block permutation on dask)."""

from __future__ import annotations

from .. import backends
from ..core import checks
from . import docs


@docs.fill
def transpose(x, axes=None):
    """Permute the axes of an array, as numpy.transpose.

    On numpy input a view, as numpy's; on cupy input a new array, written by a tiled
    shared-memory kernel; on dask input a lazy permutation of each block; on xarray input
    ``DataArray.transpose`` of the dims in the new order.

    Parameters
    ----------
    {x}
        Bool, integer, float32 or float64 data.
    axes : sequence of int, optional
        The permutation: axis i of the result is axis ``axes[i]`` of ``x``. Default: the
        axes reversed.

    Returns
    -------
    {returns}
        Of the permuted shape.

    Raises
    ------
    ValueError
        ``axes`` not a permutation of the axes, or an axis out of range.
    TypeError
        ``x`` of a dtype distconv does not process (complex, float16, object, strings).

    See Also
    --------
    numpy.transpose : The reference on numpy arrays.

    Examples
    --------
    >>> dc.transpose(np.arange(6).reshape(2, 3)).tolist()
    [[0, 3], [1, 4], [2, 5]]
    >>> dc.transpose(np.zeros((2, 3, 4)), axes=(1, 2, 0)).shape
    (3, 4, 2)
    """
    x = checks.as_array(x)
    perm = tuple(range(x.ndim))[::-1] if axes is None else tuple(checks.axis(a, x.ndim) for a in axes)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"axes must be a permutation of the {x.ndim} axes, got {axes!r}")
    kind = checks.array_kind(x)
    if kind == "xarray":
        return x.transpose(*[x.dims[a] for a in perm])
    if kind == "dask":
        from ..graph import blockwise

        return blockwise.transpose(x, backends.transpose, perm)
    return backends.transpose(x, perm)
