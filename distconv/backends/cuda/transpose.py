"""Launcher for kernels/transpose.cu."""

from __future__ import annotations

import numpy as np

from . import GRID_YZ, guard_memory, loader


def batched_form(shape: tuple, axes: tuple):
    """(B, R, C) when ``axes`` keeps a leading run and swaps the two runs after it, else None."""
    n = len(axes)
    k = 0
    while k < n and axes[k] == k:
        k += 1
    if k == n:
        return None
    j = axes[k]  # the second run starts here in the input
    run2 = list(range(j, n))
    run1 = list(range(k, j))
    if list(axes[k:]) != run2 + run1 or not run1:
        return None
    prod = lambda ax: int(np.prod([shape[a] for a in ax], dtype=np.int64))  # noqa: E731
    return prod(range(k)), prod(run1), prod(run2)


@guard_memory
def transpose(block, axes: tuple):
    import cupy

    x = block
    form = batched_form(x.shape, axes)
    out_shape = tuple(x.shape[a] for a in axes)
    if form is None or x.dtype.itemsize not in (1, 2, 4, 8):
        return cupy.ascontiguousarray(cupy.transpose(x, axes))
    B, R, C = form
    a = cupy.ascontiguousarray(x)
    out = cupy.empty(out_shape, dtype=x.dtype)
    if out.size:
        T = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[x.dtype.itemsize]
        name = loader.template("distconv_transpose", T)
        tile, lanes, rows = (loader.define(n) for n in ("DC_TR_TILE", "DC_TR_LANES", "DC_TR_ROWS"))
        grid = (int(min(-(-C // tile), 2**31 - 1)), int(min(-(-R // tile), GRID_YZ)), int(min(B, GRID_YZ)))
        loader.function("transpose", name)(grid, (lanes, rows), (a, out, np.int64(B), np.int64(R), np.int64(C)))
    return out


# transpose moves bytes: it is keyed on the element size, never on user text
INSTANTIATIONS = [loader.template("distconv_transpose", t)
                  for t in ("unsigned char", "unsigned short", "unsigned int", "unsigned long long")]
