"""Tile -> the DcTile struct of kernels/common.cuh (27 piece pointers, 3x3 segment lengths)."""

from __future__ import annotations

import numpy as np

from ...core.tile import Tile

DC_TILE = np.dtype([("ptr", "<u8", (27,)), ("sy", "<i8", (27,)), ("sz", "<i8", (27,)), ("len", "<i8", (9,))],
                   align=True)


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


def plane_groups(tile: Tile, a0: int, a1: int) -> list[list[int]] | None:
    """The axis groups of a kernel over the plane (a0, a1): those two axes as the two innermost
    groups, the rest merged before them; None where the tile cannot be viewed so (the kernel's
    callers then run passes)."""
    try:
        gs = axis_groups(tile, {a0, a1})
    except ValueError:  # more than three axis groups
        return None
    return gs if gs[1:] == [[a0], [a1]] else None


def as_dtype(tile: Tile, dtype) -> Tile:
    """The tile with its centre and halo pieces in ``dtype`` (the same tile when they are)."""
    if tile.centre.dtype == dtype:
        return tile
    return Tile(tile.centre.astype(dtype), tile.halo, {d: p.astype(dtype) for d, p in tile.pieces.items()})


def dc_tile(tile: Tile, gs: list[list[int]]):
    """The DcTile kernel argument (a numpy structured scalar, passed by value) and the arrays it
    points into (keep them alive until the launch is queued). Pieces may be strided views;
    one whose axes cannot be grouped that way is copied (rare: a view cut along a merged axis)."""
    struct = np.zeros((), dtype=DC_TILE)
    seg = np.zeros((3, 3), dtype=np.int64)
    for g, axes in enumerate(gs):
        if len(axes) == 1:
            lo, hi = tile.halo[axes[0]]
            seg[g] = (lo, tile.centre.shape[axes[0]], hi)
        else:
            seg[g] = (0, int(np.prod([tile.centre.shape[a] for a in axes], dtype=np.int64)), 0)
    struct["len"] = seg.ravel()
    keep = []
    for d in tile.directions():
        piece = tile.piece(d)
        strides = _group_strides(piece, gs)
        if strides is None:
            import cupy

            piece = cupy.ascontiguousarray(piece)
            strides = _group_strides(piece, gs)
        keep.append(piece)
        dz, dy, dx = (d[axes[0]] if len(axes) == 1 else 0 for axes in gs)
        k = (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1)
        struct["ptr"][k] = piece.data.ptr
        struct["sz"][k], struct["sy"][k] = strides
    return struct[()], keep


def _group_strides(piece, gs):
    """Element strides (z, y) of the 3-D grouped view, or None when a merged group is not one
    run of memory or x is not unit-stride (axes of length 1 have no say)."""
    out = []
    for axes in gs:
        live = [a for a in axes if piece.shape[a] > 1]
        for a, b in zip(live, live[1:]):
            if piece.strides[a] != piece.strides[b] * piece.shape[b]:
                return None
        out.append(piece.strides[live[-1]] // piece.itemsize if live else 0)
    if out[2] not in (0, 1):
        return None
    return out[0], out[1]


def lead(src, off: int, itemsize: int) -> int:
    """Elements from a kernel window's first column back to a 16-byte boundary, for windows
    that start ``off`` columns into the extended x range at a multiple of 16 bytes (a tile's
    column tiles do), in the centre piece of ``src`` (a DcTile from dc_tile); 0 where its rows
    or planes are not 16-byte multiples (no lead aligns them all)."""
    ptr, sy, sz, cx0 = int(src["ptr"][13]), int(src["sy"][13]), int(src["sz"][13]), int(src["len"][6])
    if ptr % itemsize or (sy * itemsize) % 16 or (sz * itemsize) % 16:
        return 0
    return (ptr // itemsize + off - cx0) % (16 // itemsize)


def group_sizes(shape: tuple, gs: list[list[int]]) -> tuple[int, int, int]:
    return tuple(int(np.prod([shape[a] for a in axes], dtype=np.int64)) for axes in gs)
