"""Transpose with numpy semantics (lazy per-block permutation on dask)."""

from __future__ import annotations

from .. import backends
from ..core import checks


def transpose(x, axes=None):
    """numpy.transpose; on the GPU the result is materialized by a tiled shared-memory kernel."""
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
