"""Tile -> the DcTile struct of kernels/common.cuh (27 piece pointers, 3x3 segment lengths)."""

from __future__ import annotations

import numpy as np

from ..chunk.tile import Tile

DC_TILE = np.dtype([("ptr", "<u8", (27,)), ("len", "<i8", (9,))], align=True)


def axis_groups(tile: Tile, mask_axes: set) -> list[list[int]]:
    """The tile's axes in 3 groups for a (z, y, x) view; leading groups may be empty.

    An axis with a halo, or one the mask touches (the kernel applies the boundary mode along
    it), stands alone; runs of the other axes merge, since the arrays are C-contiguous.
    """
    def alone(a):
        return tile.halo[a] != (0, 0) or a in mask_axes

    gs: list[list[int]] = []
    for a in range(tile.ndim):
        if gs and not alone(a) and not alone(gs[-1][-1]):
            gs[-1].append(a)
        else:
            gs.append([a])
    if len(gs) > 3:
        raise ValueError(f"the GPU path takes masks over at most 3 axes; axis groups {gs}")
    return [[]] * (3 - len(gs)) + gs


def dc_tile(tile: Tile, gs: list[list[int]]):
    """The DcTile kernel argument (a numpy structured scalar, passed by value)."""
    struct = np.zeros((), dtype=DC_TILE)
    seg = np.zeros((3, 3), dtype=np.int64)
    for g, axes in enumerate(gs):
        if len(axes) == 1:
            lo, hi = tile.halo[axes[0]]
            seg[g] = (lo, tile.centre.shape[axes[0]], hi)
        else:
            seg[g] = (0, int(np.prod([tile.centre.shape[a] for a in axes], dtype=np.int64)), 0)
    struct["len"] = seg.ravel()
    for d in tile.directions():
        piece = tile.piece(d)
        if not piece.flags.c_contiguous:
            raise ValueError("halo tile pieces must be C-contiguous")
        dz, dy, dx = (d[axes[0]] if len(axes) == 1 else 0 for axes in gs)
        struct["ptr"][(dz + 1) * 9 + (dy + 1) * 3 + (dx + 1)] = piece.data.ptr
    return struct[()]


def group_sizes(shape: tuple, gs: list[list[int]]) -> tuple[int, int, int]:
    return tuple(int(np.prod([shape[a] for a in axes], dtype=np.int64)) for axes in gs)
